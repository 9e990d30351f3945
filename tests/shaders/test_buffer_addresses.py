"""Buffer addresses in existing shaders: buffer_reference members of push constants and of
buffers take DeviceArrays (their device addresses), numpy arrays (copied in and back) or raw
addresses; a linked list built in one DeviceArray is walked through its `next` pointers. Our own
small GLSL shaders in the patterns published projects use (both drivers report
bufferDeviceAddress)."""

import numpy as np
import pytest

import vkir
from vkir.driver.shader_addresses import device_address
from vkir.errors import ArgumentError, UnsupportedError

pytestmark = pytest.mark.device

# pointers in push constants, no descriptors at all (the "bindless" pattern)
PUSH_POINTERS = """#version 450
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 16) in;
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Src { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Dst { float v[]; };
layout(push_constant) uniform Params { Src src; Dst dst; uint n; float scale; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n) p.dst.v[i] = p.dst.v[i] + p.src.v[i] * p.scale;
}
"""

# pointers stored inside a storage buffer (a table of buffers)
TABLE = """#version 450
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 16) in;
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer In { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer Out { int v[]; };
layout(std430, binding = 0) readonly buffer Table { In a; In b; Out c; uint n; } t;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < t.n) t.c.v[i] = t.a.v[i] - 3 * t.b.v[i];
}
"""

# a linked list walked until the null pointer (16-byte nodes: next, value, pad); the walk keeps
# the address as a uvec2 (a loop-carried pointer variable crashes SwiftShader's compiler)
LINKED_LIST = """#version 450
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
layout(local_size_x = 1) in;
layout(buffer_reference) buffer Node;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Node {
    Node next; int value; int pad;
};
layout(push_constant) uniform Params { Node head; } p;
layout(std430, binding = 0) writeonly buffer Result { int weighted; int count; } r;
void main() {
    uvec2 at = uvec2(p.head);
    int total = 0, count = 0;
    while (at != uvec2(0u) && count < 1000) {
        Node n = Node(at);
        count += 1;
        total += count * n.value;
        at = uvec2(n.next);
    }
    r.weighted = total;
    r.count = count;
}
"""


@pytest.fixture(scope="module")
def kernels(_vulkan_device):
    return {name: vkir.compile_glsl(src) for name, src in
            (("push", PUSH_POINTERS), ("table", TABLE), ("list", LINKED_LIST))}


def test_pointer_members_reflect_as_8_byte_addresses(kernels):
    k = kernels["push"]
    assert [(m.name, m.offset, m.size) for m in k.push_constants] == [
        ("src", 0, 8), ("dst", 8, 8), ("n", 16, 4), ("scale", 20, 4)]
    assert k.push_constants[0].dtype.endswith("*") and k.bindings == ()
    assert "PhysicalStorageBufferAddresses" in k.info.capabilities


def test_push_constant_pointers_take_device_arrays(kernels):
    k = kernels["push"]
    x = np.arange(40, dtype=np.float32)
    src, dst = vkir.array(x), vkir.array(np.ones(40, np.float32))
    k(grid=(3,), push={"src": src, "dst": dst, "n": 40, "scale": 2.0})
    np.testing.assert_array_equal(dst.numpy(), 1 + 2 * x)
    # a raw address (an int) points into the middle of an array
    k(grid=(1,), push={"src": src, "dst": device_address(dst) + 4 * 8, "n": 8, "scale": -1.0})
    want = 1 + 2 * x
    want[8:16] -= x[:8]
    np.testing.assert_array_equal(dst.numpy(), want)


def test_push_constant_pointers_take_numpy_arrays_copied_in_and_back(kernels):
    k = kernels["push"]
    x = np.arange(20, dtype=np.float32)
    y = np.full(20, 5, np.float32)
    src = x.copy()
    k(grid=(2,), push={"src": src, "dst": y, "n": 20, "scale": 3.0})
    np.testing.assert_array_equal(y, 5 + 3 * x)
    np.testing.assert_array_equal(src, x)   # a readonly pointee is not copied back
    # a launch copies back when its wait sees the end
    h = k.launch(grid=(2,), push={"src": x, "dst": y, "n": 20, "scale": 1.0})
    h.wait()
    np.testing.assert_array_equal(y, 5 + 4 * x)


def test_a_sequence_keeps_pointees_and_orders_barriers_by_them(kernels):
    k = kernels["push"]
    x = np.arange(32, dtype=np.float32)
    a, b = vkir.array(x), vkir.array(np.zeros(32, np.float32))
    with vkir.sequence():
        k(grid=(2,), push={"src": a, "dst": b, "n": 32, "scale": 1.0})   # b = x
        k(grid=(2,), push={"src": b, "dst": a, "n": 32, "scale": 1.0})   # a = x + b: reads b
        k(grid=(2,), push={"src": a, "dst": b, "n": 32, "scale": 1.0})   # b += a: reads a
    np.testing.assert_array_equal(a.numpy(), 2 * x)
    np.testing.assert_array_equal(b.numpy(), 3 * x)
    with pytest.raises(ArgumentError, match="inside a sequence a pointer takes a DeviceArray"):
        with vkir.sequence():
            k(grid=(2,), push={"src": x, "dst": b, "n": 32, "scale": 1.0})


def test_pointers_inside_a_buffer_given_as_a_dict_of_its_members(kernels):
    k = kernels["table"]
    assert [(b.binding, b.readonly) for b in k.bindings] == [(0, True)]
    a = np.arange(30, dtype=np.int32)
    b = vkir.array(np.arange(30, dtype=np.int32) * 2)
    c = np.zeros(30, np.int32)
    k({"a": a, "b": b, "c": c, "n": 30}, grid=(2,))
    np.testing.assert_array_equal(c, a - 6 * np.arange(30))
    # the same table as raw bytes: addresses written by hand into a uint64 array
    out = vkir.zeros(30, "int32")
    table = np.array([device_address(b), device_address(b), device_address(out), 30],
                     dtype=np.uint64)
    k(table, grid=(2,))
    np.testing.assert_array_equal(out.numpy(), -4 * np.arange(30))
    with pytest.raises(ArgumentError, match="member 'n' is missing"):
        k({"a": a, "b": b, "c": c}, grid=(2,))
    with pytest.raises(ArgumentError, match=r"'t'\)\.a is a buffer_reference .*got str"):
        k({"a": "x", "b": b, "c": c, "n": 1}, grid=(1,))


def _linked_list(values, order):
    """A DeviceArray of 16-byte nodes holding `values`, linked in `order` (node indices), and
    the address of the first node in `order`."""
    n = len(values)
    nodes = vkir.zeros(n * 4, "int32")
    base = device_address(nodes)
    host = np.zeros((n, 4), np.uint32)
    host[:, 2] = values.view(np.uint32)
    for here, nxt in zip(order, list(order[1:]) + [None]):
        addr = 0 if nxt is None else base + 16 * nxt
        host[here, 0], host[here, 1] = addr & 0xFFFFFFFF, addr >> 32
    nodes.write(host.view(np.int32).reshape(-1))
    return nodes, base + 16 * order[0]


def test_a_linked_list_is_walked_through_its_next_pointers(kernels):
    k = kernels["list"]
    rng = np.random.default_rng(0)
    values = rng.integers(-50, 50, size=24).astype(np.int32)
    order = list(rng.permutation(24)[:17])   # 17 of the 24 nodes, shuffled
    nodes, head = _linked_list(values, order)
    result = np.zeros(2, np.int32)
    k(result, grid=(1,), push={"head": head})
    want = sum((i + 1) * int(values[j]) for i, j in enumerate(order))
    assert result.tolist() == [want, 17]
    k(result, grid=(1,), push={"head": 0})   # the null pointer: an empty list
    assert result.tolist() == [0, 0]
    del nodes


# the same walk with the pointer itself in a variable assigned in the loop (`n = n.next`)
POINTER_WALK = LINKED_LIST.replace(
    """    uvec2 at = uvec2(p.head);
    int total = 0, count = 0;
    while (at != uvec2(0u) && count < 1000) {
        Node n = Node(at);
        count += 1;
        total += count * n.value;
        at = uvec2(n.next);
    }""",
    """    Node n = p.head;
    int total = 0, count = 0;
    while (uvec2(n) != uvec2(0u) && count < 1000) {
        count += 1;
        total += count * n.value;
        n = n.next;
    }""")


def _optimized(words: bytes) -> bytes:
    """`words` through spirv-opt -O (the pointer variable becomes an OpPhi of pointers)."""
    import subprocess
    import tempfile
    from pathlib import Path

    from vkir.runtime.glsl import direct_binary

    exe, env = direct_binary()
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "in.spv", Path(tmp) / "out.spv"
        src.write_bytes(words)
        subprocess.run([str(Path(exe).parent / "spirv-opt"), "-O", str(src), "-o", str(out)],
                       check=True, env=env, capture_output=True)
        return out.read_bytes()


def test_a_pointer_assigned_in_a_loop_runs_or_is_refused_by_name(kernels):
    from vkir.quirks import BUFFER_REFERENCE_MERGE_CRASH
    from vkir.runtime.glsl import compile_glsl

    assert POINTER_WALK != LINKED_LIST
    words = compile_glsl(POINTER_WALK, target_env="vulkan1.2")
    optimized = _optimized(words)
    if BUFFER_REFERENCE_MERGE_CRASH in kernels["list"].runtime.quirks:
        # SwiftShader's compiler would crash the process: refused before the driver
        for module, shown in ((words, "'n'"), (optimized, "'%")):
            with pytest.raises(UnsupportedError, match=f"pointer {shown}.* takes different "
                                                       "values on different control-flow paths"):
                vkir.load_spirv(module)
        return
    values = np.arange(1, 9, dtype=np.int32)
    nodes, head = _linked_list(values, [3, 1, 7, 0])
    for module in (words, optimized):
        k = vkir.load_spirv(module)
        result = np.zeros(2, np.int32)
        k(result, grid=(1,), push={"head": head})
        assert result.tolist() == [1 * 4 + 2 * 2 + 3 * 8 + 4 * 1, 4]
    del nodes
