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


def wait_fence(device, fence_ptr, timeout, what: str) -> None:
    """Wait for the fence at `fence_ptr` in slices of at most SLICE_NS; DeviceError naming
    `what` when `timeout` seconds pass first (the work itself keeps running)."""
    explicit = timeout is not None
    if explicit:
        timeout = resolve_timeout(timeout)   # a bad timeout is refused even when not needed
    first = SLICE_NS if timeout is None else min(SLICE_NS, int(timeout * 1e9))
    r = lib.vkWaitForFences(device.handle, 1, fence_ptr, 1, first)
    if r == vk.VK_SUCCESS:
        return
    if r != VK_TIMEOUT:
        check(r, "vkWaitForFences")
    # $VKIR_TIMEOUT is read only once a wait is slow; an explicit timeout (inf too) overrides it
    limit = timeout if explicit else resolve_timeout(None)
    start = time.monotonic() - first * 1e-9
    while True:
        left = None if limit is None else limit - (time.monotonic() - start)
        if left is not None and left <= 0:
            raise DeviceError(f"{what} did not finish within {limit:g} s (VK_TIMEOUT); it keeps "
                              "running on the device, and later uses of its buffers wait for it")
        step = SLICE_NS if left is None else max(0, min(SLICE_NS, int(left * 1e9)))
        r = lib.vkWaitForFences(device.handle, 1, fence_ptr, 1, step)
        if r == vk.VK_SUCCESS:
            return
        if r != VK_TIMEOUT:
            raise DeviceError(f"vkWaitForFences failed: {result_name(r)}")


class Submission:
    """One submission in flight on `device`: `done()` polls, `wait(timeout)` blocks in slices.

    `owner` is the launch or sequence whose command buffer was submitted (it may not be submitted
    again before this finishes), `serials` the buffers it uses, `keep` whatever must outlive the
    work, `on_done` callbacks run once, after the fence signalled (e.g. copying numpy arguments
    back)."""

    __slots__ = ("device", "fence_ptr", "owner", "serials", "keep", "on_done", "finished", "what",
                 "waiters", "recycled")

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
        device = self.device
        if self.finished:
            return
        with device.lifetime:   # the fence and the device outlive the wait
            with device._lock:
                if self.finished:
                    return
                if device.closed:
                    raise DeviceError(f"{self.what}: its device {device.info.name!r} was closed")
                self.waiters += 1
            try:
                wait_fence(device, self.fence_ptr, timeout, self.what)
            finally:
                with device._lock:
                    self.waiters -= 1
                    self._recycle_fence()
            self._retire()

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
