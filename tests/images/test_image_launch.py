"""Kernel.launch takes numpy images as calls do: copied in at the launch, written ones copied back
when the wait (or a done() that returns True) observes the end; inside a sequence numpy images
are still refused, with the sequence's reason."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError

pytestmark = pytest.mark.device


@T.prim_func
def blend(src: T.Image((4, 8), "rgba32f"), tex: T.Texture((4, 8), "r32f"),
          dst: T.Image((4, 8), "rgba8"), scale: T.float32):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            uv = T.float32x2(T.cast(tx, "float32") + 0.5, T.cast(ty, "float32") + 0.5)
            t = T.sample(tex, uv / T.float32x2(8.0, 4.0))
            dst[ty, tx] = src[ty, tx] * T.broadcast(scale, 4) + T.float32x4(t[0], 0.0, 0.0, 0.0)


@T.prim_func
def overrun(img: T.Image((4,), "r32ui")):
    for tx in T.thread_binding(5, "threadIdx.x"):
        T.atomic_add(img[tx], T.cast(tx + 1, "uint32"))


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 9, (4, 8, 4)).astype(np.float32) / 16
    tex = rng.integers(0, 9, (4, 8)).astype(np.float32) / 32
    return src, tex


def test_launch_with_numpy_images_copies_in_now_and_back_at_the_wait():
    k = vkir.build(blend)
    handles, outs, wants = [], [], []
    for seed in range(3):   # three launches in flight, each with its own device copies
        src, tex = _inputs(seed)
        want = np.zeros((4, 8, 4), np.uint8)
        vkir.interpret(blend, src, tex, want, 0.5)
        out = np.zeros((4, 8, 4), np.uint8)
        handles.append(k.launch(src, tex, out, 0.5))
        src[:] = 99      # copied at the launch: changing the input now changes nothing
        outs.append(out)
        wants.append(want)
    assert k.last_call_copies == 2 * out.nbytes   # the written image, in and out
    for h, out, want in zip(handles, outs, wants):
        h.wait()
        np.testing.assert_array_equal(out, want)
    assert wants[0].any()


def test_done_copies_back_too_and_device_images_mix_with_numpy():
    k = vkir.build(blend)
    src, tex = _inputs(7)
    want = np.zeros((4, 8, 4), np.uint8)
    vkir.interpret(blend, src, tex, want, 2.0)
    out = np.zeros((4, 8, 4), np.uint8)
    h = k.launch(vkir.image(src, "rgba32f"), tex, out, 2.0)
    while not h.done():
        pass
    np.testing.assert_array_equal(out, want)


def test_bounds_checked_launch_with_a_numpy_image_reports_at_the_wait():
    img = np.zeros(4, np.uint32)
    h = vkir.build(overrun, check_bounds=True).launch(img)
    with pytest.raises(vkir.OutOfBoundsError, match="image img: index 4 is out of bounds"):
        h.wait()
    np.testing.assert_array_equal(img, [1, 2, 3, 4])


def test_sequences_still_refuse_numpy_images_saying_why():
    k = vkir.build(blend)
    src, tex = _inputs(1)
    with pytest.raises(ArgumentError, match="inside a sequence images must be DeviceImages"), \
            vkir.sequence():
        k(src, tex, np.zeros((4, 8, 4), np.uint8), 1.0)
