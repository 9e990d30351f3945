"""vkir.build(f, check_bounds=True) checks storage image reads, writes and atomics as it checks
buffers: exactly the accesses the interpreter refuses raise vkir.OutOfBoundsError (image,
index, invocation, source line) after the dispatch, the bad access not performed; a sampled
read is never out of bounds (its sampler's addressing defines every coordinate)."""

import numpy as np
import pytest

import vkir
from vkir import T

pytestmark = pytest.mark.device


@T.prim_func
def shifted_read(img: T.Image((4, 4), "r32f"), out: T.Buffer((16,), "float32")):
    for ty in T.thread_binding(4, "threadIdx.y"):
        for tx in T.thread_binding(4, "threadIdx.x"):
            if ty == 2 or tx < 3:
                out[ty * 4 + tx] = img[ty, tx + 1][0]


@T.prim_func
def far_write(img: T.Image(("h", "w"), "r32i"), row: T.int32, col: T.int32):
    for tx in T.thread_binding(4, "threadIdx.x"):
        if tx == 0:
            img[row, col] = T.int32x4(7, 0, 0, 1)
        else:
            img[0, tx] = T.int32x4(tx, 0, 0, 1)


@T.prim_func
def histogram(x: T.Buffer((8,), "int32"), hist: T.Image((8,), "r32ui")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        T.atomic_add(hist[x[tx]], T.uint32(1))


@T.prim_func
def fetch_add(x: T.Buffer((8,), "int32"), hist: T.Image((8,), "r32ui"),
              old: T.Buffer((8,), "uint32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        old[tx] = T.atomic_add(hist[x[tx]], T.uint32(5)) + T.uint32(1)


@T.prim_func
def layer_read(img: T.Image((2, 2), "rgba8ui", layers=2), out: T.Buffer((3,), "uint32")):
    for tx in T.thread_binding(3, "threadIdx.x"):
        out[tx] = img[tx, 1, 0][2]


@T.prim_func
def sample_far(tex: T.Texture((2, 2), "r32f"), u: T.float32, out: T.Buffer((1,), "float32")):
    for tx in T.thread_binding(1, "threadIdx.x"):
        out[tx] = T.sample(tex, T.float32x2(u, T.float32(-3e9)))[0]


def _line(text: str) -> int:
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def _both(func, *args):
    """(the interpreter's error, the device's error, the device's outputs) for one call of
    `func` on copies of `args`."""
    def copies():
        return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]

    with pytest.raises(vkir.OutOfBoundsError) as interpreted:
        vkir.interpret(func, *copies())
    outputs = copies()
    with pytest.raises(vkir.OutOfBoundsError) as device:
        vkir.build(func, check_bounds=True)(*outputs)
    return interpreted.value, device.value, outputs


def _same_access(interpreted, device, line: str):
    """The interpreter and the device name the same image, invocation and source line."""
    assert device.buffer == interpreted.buffer
    assert device.location.split(":")[:-1] == interpreted.location.split(":")[:-1]
    assert device.location.split(":")[-2] == str(_line(line))
    assert line.strip() in str(device) and line.strip() in str(interpreted)


def test_read_past_the_edge_names_image_index_invocation_and_line():
    img = np.arange(16, dtype="float32").reshape(4, 4)
    out = np.full(16, -1, "float32")
    interpreted, err, (_, got) = _both(shifted_read, img, out)
    _same_access(interpreted, err, "out[ty * 4 + tx] = img[ty, tx + 1][0]")
    assert err.buffer == "img" and err.index == (2, 4)
    assert err.invocation == interpreted.invocation == {"threadIdx.x": 3, "threadIdx.y": 2}
    assert str(err).startswith("kernel shifted_read: image img: index (2, 4) is out of bounds "
                               "for shape (4, 4), in invocation (threadIdx.x=3, threadIdx.y=2)")
    assert str(interpreted).startswith("image img: index 4 is out of bounds for dim 1")
    # the in-range reads ran; the bad one read a clamped texel into its element
    want = np.full(16, -1, "float32")
    for y in range(4):
        for x in range(3):
            want[y * 4 + x] = img[y, x + 1]
    want[11] = img[2, 3]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("row, col", [(0, -2**31), (0, 2**31 - 1), (-1, 0), (2, 0), (0, 5)])
def test_write_out_of_range_is_skipped_and_reported(row, col):
    img = np.zeros((2, 5), "int32")
    interpreted, err, (got, _, _) = _both(far_write, img, row, col)
    _same_access(interpreted, err, "img[row, col] = T.int32x4(7, 0, 0, 1)")
    assert err.buffer == "img" and err.index == (row, col)
    assert err.invocation == {"threadIdx.x": 0}
    assert f"image img: index ({row}, {col}) is out of bounds for shape (h, w)" in str(err)
    want = np.zeros((2, 5), "int32")
    want[0, 1:4] = (1, 2, 3)   # the other writes ran; nothing else was touched
    np.testing.assert_array_equal(got, want)


def test_image_atomic_statement_on_a_bad_texel_is_skipped():
    x = np.array([0, 1, 2, 3, 3, 5, 6, 8], "int32")
    interpreted, err, (_, hist) = _both(histogram, x, np.zeros(8, "uint32"))
    _same_access(interpreted, err, "T.atomic_add(hist[x[tx]], T.uint32(1))")
    assert err.buffer == "hist" and err.index == 8
    assert err.invocation == interpreted.invocation == {"threadIdx.x": 7}
    np.testing.assert_array_equal(hist, [1, 1, 1, 2, 0, 1, 1, 0])


def test_image_atomic_whose_value_is_used_is_skipped_and_gives_zero():
    x = np.array([7, 6, -1, 4, 3, 2, 1, 0], "int32")
    old = np.full(8, 9, "uint32")
    interpreted, err, (_, hist, got) = _both(fetch_add, x, np.zeros(8, "uint32"), old)
    _same_access(interpreted, err, "old[tx] = T.atomic_add(hist[x[tx]], T.uint32(5))")
    assert err.buffer == "hist" and err.index == -1
    assert err.invocation == interpreted.invocation == {"threadIdx.x": 2}
    np.testing.assert_array_equal(hist, [5, 5, 5, 5, 5, 0, 5, 5])   # texel 5 untouched
    np.testing.assert_array_equal(got, [1] * 8)


def test_layer_out_of_range_is_reported_with_the_layer_first():
    img = np.arange(2 * 2 * 2 * 4, dtype="uint8").reshape(2, 2, 2, 4)
    interpreted, err, (_, got) = _both(layer_read, img, np.zeros(3, "uint32"))
    _same_access(interpreted, err, "out[tx] = img[tx, 1, 0][2]")
    assert err.index == (2, 1, 0) and err.invocation == {"threadIdx.x": 2}
    assert "image img: index (2, 1, 0) is out of bounds for shape (2, 2, 2)" in str(err)
    np.testing.assert_array_equal(got, [img[0, 1, 0, 2], img[1, 1, 0, 2], img[1, 1, 0, 2]])


@pytest.mark.parametrize("u", [-7.0, 2.5, 1e9])
def test_sampling_far_outside_is_not_out_of_bounds(u):
    """The sampler's addressing (clamp by default) defines every finite coordinate: no error in
    the interpreter or on the device, the same edge texel in both."""
    tex = np.array([[1, 2], [3, 4]], "float32")
    want = np.zeros(1, "float32")
    vkir.interpret(sample_far, tex, u, want)
    got = np.zeros(1, "float32")
    vkir.build(sample_far, check_bounds=True)(tex, u, got)
    assert want[0] == (1 if u < 0 else 2)
    np.testing.assert_array_equal(got, want)


def test_checked_image_kernel_in_range_is_unchanged():
    img = np.arange(16, dtype="float32").reshape(4, 4)

    @T.prim_func
    def mirror(src: T.Image((4, 4), "r32f"), dst: T.Image((4, 4), "r32f")):
        for ty in T.thread_binding(4, "threadIdx.y"):
            for tx in T.thread_binding(4, "threadIdx.x"):
                dst[ty, 3 - tx] = src[ty, tx]

    out = np.zeros((4, 4), "float32")
    vkir.build(mirror, check_bounds=True)(img, out)
    np.testing.assert_array_equal(out, img[:, ::-1])
