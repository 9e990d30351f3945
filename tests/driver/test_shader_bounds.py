"""Bounds-checked shaders (`vkir.compile_glsl(..., check_bounds=True)`): an out-of-bounds index
into a shared, function-local or storage-buffer array no longer reaches the driver (on lavapipe
a shared-memory write far out of range segfaulted the process): the store is dropped, the load
gives 0, and the call, a launch's wait or a sequence's wait raises OutOfBoundsError naming the
array, the dimension and the index. The out-of-range runs happen in a subprocess, so that a
crash fails the test instead of killing pytest."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import vkir
from vkir.errors import ArgumentError, OutOfBoundsError

pytestmark = pytest.mark.vkir_device

SHARED = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer Out { float y[]; };
layout(push_constant) uniform P { int at; int stride; };
shared float tile[64];
shared vec2 grid2[4][8];
void main() {
    uint i = gl_LocalInvocationID.x;
    float loc[4];
    for (int k = 0; k < 4; k++) loc[k] = float(k);
    tile[i] = float(i);
    barrier();
    tile[max(at, 0) + int(i) * stride] = 7.0;   // out of range when at or stride is large
    barrier();
    grid2[i & 3u][at & 7] = vec2(1.0);
    y[i] = tile[i] + (at < 0 ? tile[at] + loc[at] : 0.0);
}
"""

RUNS = r"""
import json, sys
import numpy as np
import vkir
from vkir.errors import OutOfBoundsError

src = sys.stdin.read()
sk = vkir.compile_glsl(src, check_bounds=True)
out = {}
for label, at, stride in (("far write", 3, 1 << 20), ("negative read", -5, 0),
                          ("in range", 0, 0)):
    y = np.full(64, -1, np.float32)
    try:
        sk(y, grid=(1,), push={"at": at, "stride": stride})
        error = None
    except OutOfBoundsError as exc:
        error = [str(exc), exc.buffer, exc.index]
    out[label] = {"y": y.tolist(), "error": error}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def runs(_vulkan_device):
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-c", RUNS], input=SHARED, capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_far_shared_write_is_dropped_and_reported(runs):
    far = runs["far write"]
    message, buffer, index = far["error"]
    assert buffer == "tile" and index == 3 + (1 << 20)   # invocation 1: 3 + 1 * stride
    assert ("out-of-bounds store of the shared array tile: index 1048579 is outside [0, 64); "
            "the store was dropped") in message
    want = np.arange(64, dtype=np.float32)
    want[3] = 7.0                                         # invocation 0's write was in range
    np.testing.assert_array_equal(far["y"], want)


def test_a_negative_read_gives_zero(runs):
    neg = runs["negative read"]
    message, buffer, index = neg["error"]
    assert buffer in ("tile", "loc") and index == -5
    assert "out-of-bounds load of the" in message and "index -5 is outside" in message
    assert "the load gave 0" in message
    want = np.arange(64, dtype=np.float32)
    want[0] = 7.0                      # the reads of tile[-5] and loc[-5] gave 0
    np.testing.assert_array_equal(neg["y"], want)


def test_in_range_runs_report_nothing(runs):
    fine = runs["in range"]
    assert fine["error"] is None
    want = np.arange(64, dtype=np.float32)
    want[0] = 7.0
    np.testing.assert_array_equal(fine["y"], want)


BUFFER = """#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer In { float x[]; };
layout(std430, binding = 1) buffer Out { float y[]; };
layout(push_constant) uniform P { int shift; };
void main() {
    int i = int(gl_GlobalInvocationID.x);
    y[i + shift] = 2.0 * x[i];
}
"""


@pytest.fixture(scope="module")
def doubled(_vulkan_device):
    return vkir.compile_glsl(BUFFER, check_bounds=True, device=_vulkan_device)


def test_storage_buffer_writes_past_the_end_are_dropped(doubled, vkir_device):
    assert [b.name for b in doubled.bindings] == ["In", "Out"]    # the record is vkir's own
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    doubled(x, y, grid=(1,), push={"shift": 0})
    np.testing.assert_array_equal(y, 2 * x)
    y[:] = 0
    with pytest.raises(OutOfBoundsError, match=r"store of the storage buffer array Out\.y: "
                                               r"index 16 is outside the array") as info:
        doubled(x, y, grid=(1,), push={"shift": 4})
    assert info.value.buffer == "Out.y"
    np.testing.assert_array_equal(y[4:], 2 * x[:12])
    np.testing.assert_array_equal(y[:4], 0)
    doubled(x, y, grid=(1,), push={"shift": 0})                 # the record was cleared


def test_launches_and_sequences_check_at_the_wait(doubled, vkir_device):
    x = vkir.array(np.ones(16, np.float32), device=vkir_device)
    y = vkir.zeros(16, "float32", device=vkir_device)
    handle = doubled.launch(x, y, grid=(1,), push={"shift": -1})
    with pytest.raises(OutOfBoundsError, match="index -1"):
        handle.wait()
    with pytest.raises(OutOfBoundsError, match="index 16"):
        with vkir.sequence() as seq:
            doubled(x, y, grid=(1,), push={"shift": 1})
        seq.wait()


def test_wrong_buffer_count_names_the_users_bindings(doubled):
    with pytest.raises(ArgumentError, match=r"takes 2 buffers \(bindings 0: In, 1: Out\), got 3"):
        doubled(np.zeros(16, np.float32), np.zeros(16, np.float32), np.zeros(4, np.uint32),
                grid=(1,), push={"shift": 0})


SETS = """#version 450
layout(local_size_x = 16) in;
layout(set = 1, binding = 0) buffer Out { float y[]; };
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(push_constant) uniform P { int shift; };
void main() {
    int i = int(gl_GlobalInvocationID.x);
    y[i + shift] = 3.0 * x[i];
}
"""


def test_the_record_goes_before_buffers_of_later_sets(vkir_device):
    # the record binding is in set 0: a call's arguments put it before set 1's buffers (it was
    # appended last, so Out's array was bound to the record's binding)
    checked = vkir.compile_glsl(SETS, check_bounds=True, device=vkir_device)
    assert [(b.set, b.name) for b in checked.bindings] == [(0, "In"), (1, "Out")]
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    checked(x, y, grid=(1,), push={"shift": 0})
    np.testing.assert_array_equal(y, 3 * x)
    with pytest.raises(OutOfBoundsError, match=r"Out\.y: index 1[67] is outside the array"):
        checked(x, y, grid=(1,), push={"shift": 2})
