"""Work in flight: one fence per submission, waited for in slices, with a timeout.

A `Submission` is one vkQueueSubmit that has not been waited for yet: asynchronous launches,
sequences, and a synchronous dispatch whose wait timed out. It keeps alive what the device still
uses (command buffers, descriptor sets, buffers) and names the buffers it touches, so that host
copies of those buffers wait for it first.

Waits never block in one long driver call: `wait_fence` calls vkWaitForFences with a short
timeout in a loop, so Python can deliver KeyboardInterrupt (Ctrl-C) between slices, and gives up
with DeviceError after `timeout` seconds (None: `$VKIR_TIMEOUT`, else no limit). Vulkan cannot
cancel submitted work: a timed-out submission keeps running; it stays registered with its device,
its buffers and command buffers stay alive and busy, and the next use of any of them (a host copy,
a re-submission of the same launch or sequence) waits for it again, with its own timeout.

The queue runs submissions in order, so work submitted behind one whose wait gave up would only
wait for it: a synchronous dispatch or copy waits for such work first (`wait_ahead`) and, should
its timeout pass, is not submitted at all and raises DeviceError naming the work the device is
still busy with; a timeout of anything else names the earlier work still running ahead of it.
"""

from __future__ import annotations

import math
import time

from vkir import config
from vkir.errors import ArgumentError, DeviceError

from ._vk import check, ffi, lib, result_name, vk

SLICE_NS = 50_000_000   # one vkWaitForFences call waits at most 50 ms: Ctrl-C stays responsive
VK_TIMEOUT = vk.VK_TIMEOUT


def resolve_timeout(timeout):
    """Seconds to wait (a float), or None for no limit: `timeout` itself, else $VKIR_TIMEOUT."""
    if timeout is None:
        return config.timeout()
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ArgumentError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if math.isnan(timeout) or timeout < 0:
        raise ArgumentError(f"timeout must be >= 0 seconds, got {timeout!r}")
    return None if math.isinf(timeout) else float(timeout)


def wait_slices(device, fence_ptr, timeout):
    """Wait for the fence at `fence_ptr` in slices of at most SLICE_NS: None once it signalled,
    else the limit (seconds) that passed first. `timeout` None reads $VKIR_TIMEOUT, and only once
    the wait is slow; an explicit timeout (inf too) overrides it."""
    explicit = timeout is not None
    if explicit:
        timeout = resolve_timeout(timeout)   # a bad timeout is refused even when not needed
    first = SLICE_NS if timeout is None else min(SLICE_NS, int(timeout * 1e9))
    r = lib.vkWaitForFences(device.handle, 1, fence_ptr, 1, first)
    if r == vk.VK_SUCCESS:
        return None
    if r != VK_TIMEOUT:
        check(r, "vkWaitForFences")
    limit = timeout if explicit else resolve_timeout(None)
    start = time.monotonic() - first * 1e-9
    while True:
        left = None if limit is None else limit - (time.monotonic() - start)
        if left is not None and left <= 0:
            return limit
        step = SLICE_NS if left is None else max(0, min(SLICE_NS, int(left * 1e9)))
        r = lib.vkWaitForFences(device.handle, 1, fence_ptr, 1, step)
        if r == vk.VK_SUCCESS:
            return None
        if r != VK_TIMEOUT:
            raise DeviceError(f"vkWaitForFences failed: {result_name(r)}")


def wait_fence(device, fence_ptr, timeout, what: str, behind=None) -> None:
    """Wait for the fence at `fence_ptr` in slices of at most SLICE_NS; DeviceError naming
    `what` when `timeout` seconds pass first (the work itself keeps running). `behind`: the
    in-flight submissions queued before it (None: all of the device's), named in that error
    where they still run."""
    limit = wait_slices(device, fence_ptr, timeout)
    if limit is None:
        return
    message = (f"{what} did not finish within {limit:g} s (VK_TIMEOUT); it keeps running on the "
               "device, and later uses of its buffers wait for it")
    ahead = [s.what for s in (list(device._inflight) if behind is None else behind)
             if not s.finished]
    if ahead:
        message += f"; it was queued behind earlier work still running: {', '.join(ahead)}"
    raise DeviceError(message)


def wait_ahead(device, owner, timeout, what: str):
    """Before `what` (a synchronous dispatch or copy of `owner`) is submitted: wait for the
    earlier submissions of `owner` (a command buffer is never pending twice; None: all) and for
    work whose wait gave up (the queue would run `what` only after it). DeviceError naming the
    work still running once `timeout` passes first: `what` is then not submitted. Returns the
    timeout left for `what` itself."""
    blocking = [s for s in list(device._inflight)
                if not s.finished and (owner is None or s.owner is owner or s.given_up)]
    if not blocking:
        return timeout
    limit = resolve_timeout(timeout)
    deadline = None if limit is None else time.monotonic() + limit
    for sub in blocking:
        left = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
        if not sub.wait_until(left):
            raise DeviceError(
                f"{what} was not submitted: device {device.info.name!r} is still busy with "
                f"{sub.what}, which {'timed out' if sub.given_up else 'was submitted'} earlier "
                f"and keeps running (Vulkan cannot cancel it); it did not finish within "
                f"{limit:g} s. Later calls wait for it again")
    return timeout if deadline is None else max(0.0, deadline - time.monotonic())


class Submission:
    """One submission in flight on `device`: `done()` polls, `wait(timeout)` blocks in slices.

    `owner` is the launch or sequence whose command buffer was submitted (it may not be submitted
    again before this finishes), `serials` the buffers it uses, `keep` whatever must outlive the
    work, `on_done` callbacks run once, after the fence signalled (e.g. copying numpy arguments
    back). `given_up`: a wait for it timed out or was interrupted while it kept running (later
    synchronous submissions wait for it first, see `wait_ahead`)."""

    __slots__ = ("device", "fence_ptr", "owner", "serials", "keep", "on_done", "finished", "what",
                 "waiters", "recycled", "given_up")

    def __init__(self, device, fence_ptr, owner, serials, keep, what: str):
        self.device = device
        self.fence_ptr = fence_ptr
        self.owner = owner
        self.serials = serials
        self.keep = keep
        self.on_done = []
        self.finished = False
        self.what = what
        self.waiters = 0        # threads blocked in wait() on the fence (it is not reused before)
        self.recycled = False   # the fence went back to the device's pool
        self.given_up = False

    def done(self) -> bool:
        """True once the device finished the work (its results are then visible to the host)."""
        device = self.device
        with device._lock:   # the fence is read only while it cannot be recycled
            if self.finished or device.closed:
                return True
            r = lib.vkGetFenceStatus(device.handle, self.fence_ptr[0])
            if r == vk.VK_NOT_READY:
                return False
            check(r, "vkGetFenceStatus")
        self._retire()
        return True

    def wait(self, timeout=None) -> None:
        """Block until the work finished; DeviceError after `timeout` seconds (None: $VKIR_TIMEOUT,
        else no limit); Ctrl-C interrupts the wait (not the work). Any number of threads may wait
        for one submission while others poll it: its fence is reset and reused only after the
        last waiter has left."""
        if timeout is not None:
            resolve_timeout(timeout)  # refused even when there is nothing left to wait for
        self._wait(timeout, raising=True)

    def wait_until(self, timeout=None) -> bool:
        """Block as `wait` does; False instead of DeviceError when `timeout` passes first."""
        return self._wait(timeout, raising=False)

    def _wait(self, timeout, raising: bool) -> bool:
        device = self.device
        if self.finished:
            return True
        with device.lifetime:   # the fence and the device outlive the wait
            with device._lock:
                if self.finished:
                    return True
                if device.closed:
                    raise DeviceError(f"{self.what}: its device {device.info.name!r} was closed")
                behind = device._inflight[:device._inflight.index(self)] \
                    if self in device._inflight else []
                self.waiters += 1
            try:
                if raising:
                    wait_fence(device, self.fence_ptr, timeout, self.what, behind)
                elif wait_slices(device, self.fence_ptr, timeout) is not None:
                    self.given_up = True
                    return False
            except BaseException:
                self.given_up = True   # timed out or interrupted: the work keeps running
                raise
            finally:
                with device._lock:
                    self.waiters -= 1
                    self._recycle_fence()
            self._retire()
        return True

    def _recycle_fence(self) -> None:
        """Reset the fence and give it back to the device's pool, once the work retired and no
        thread waits on it any more (the caller holds the device lock)."""
        if self.finished and not self.waiters and not self.recycled and not self.device.closed:
            self.recycled = True
            lib.vkResetFences(self.device.handle, 1, self.fence_ptr)
            self.device._free_fences.append(self.fence_ptr)

    def _retire(self) -> None:
        device = self.device
        with device._lock:
            if self.finished:
                return
            self.finished = True
            try:
                device._inflight.remove(self)
            except ValueError:
                pass
            self._recycle_fence()
            self.keep = None
        callbacks, self.on_done = self.on_done, []
        for fn in callbacks:
            fn()

    def __repr__(self) -> str:
        state = "done" if self.finished else "in flight"
        return f"<vkir Submission {self.what} ({state})>"


def after_work(device, uses, free) -> bool:
    """Call `free()` once the unfinished submissions for which `uses(submission)` is true have
    all ended, instead of now; False where none still runs (the caller frees now). For what
    work whose wait gave up still uses: its release then never blocks. The caller holds the
    device lock; `free` runs with it, and not at all once the device is closed (close()
    destroyed everything, or abandoned it). Fences are polled, submissions not retired: a
    finalizer may call this (Device._release)."""
    running = [s for s in list(device._inflight) if uses(s) and not s.finished and
               lib.vkGetFenceStatus(device.handle, s.fence_ptr[0]) != vk.VK_SUCCESS]
    if not running:
        return False
    left = [len(running)]

    def one_ended():
        with device._lock:
            left[0] -= 1
            if not left[0] and not device.closed:
                free()

    for sub in running:
        sub.on_done.append(one_ended)
    return True


def create_fence(handle):
    """A new unsignalled VkFence* of the device `handle`. The create info is held in a local
    while the call runs: `ffi.addressof` of a temporary points into memory freed (and possibly
    reused) before Vulkan reads it."""
    ptr = ffi.new("VkFence*")
    info = vk.VkFenceCreateInfo()
    check(lib.vkCreateFence(handle, ffi.addressof(info), ffi.NULL, ptr), "vkCreateFence")
    return ptr


def new_fence(device):
    """A VkFence* (unsignalled): from the device's pool of retired fences, else a new one."""
    if device._free_fences:
        return device._free_fences.pop()
    ptr = create_fence(device.handle)
    device._all_fences.append(ptr)
    return ptr


def submit_async(device, submit_info, owner, serials, keep, what: str) -> Submission:
    """Submit the prepared VkSubmitInfo* with a fence of its own and return the Submission
    (registered with the device) without waiting. An earlier submission of the same `owner`
    still in flight is waited for first (a command buffer is never pending twice)."""
    with device.lifetime:
        if device._inflight:
            device.wait_for(owner=owner)
        with device._lock:
            if device.closed:
                raise DeviceError(f"{what}: device {device.info.name!r} is closed")
            fence_ptr = new_fence(device)
            r = lib.vkQueueSubmit(device.queue, 1, submit_info, fence_ptr[0])
            if r:
                device._free_fences.append(fence_ptr)
                check(r, "vkQueueSubmit")
            sub = Submission(device, fence_ptr, owner, serials, keep, what)
            device._inflight.append(sub)
    return sub
