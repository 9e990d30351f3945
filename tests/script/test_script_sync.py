"""Script syntax of atomics and subgroup operations: the IR they build (a Call whose first
argument is the BufferLoad of the updated element; an atomic statement is an Evaluate), the
printer/parser round trip, and precise errors."""

import pytest

import vkir
from vkir import T, ir
from vkir.errors import ScriptError


@T.prim_func
def uses_everything(x: T.Buffer((64,), "int32"), f: T.Buffer((64,), "float32"),
                    h: T.Buffer((16,), "uint32"), y: T.Buffer((64,), "int32"),
                    m: T.Buffer((64,), "uint32x4")):
    s = T.alloc_buffer((16,), "int32", scope="shared")
    for tx in T.thread_binding(64, "threadIdx.x"):
        T.atomic_add(h[x[tx] % 16], 1)
        T.atomic_sub(s[tx % 16], x[tx])
        old = T.atomic_compare_exchange(s[0], 3, x[tx])
        T.atomic_xor(h[1], T.uint32(5))
        y[tx] = old + T.atomic_max(s[1], 2) + T.subgroup_exclusive_mul(x[tx]) \
            + T.subgroup_shuffle_xor(x[tx], 2) + T.subgroup_size() + T.num_subgroups()
        m[tx] = T.subgroup_ballot(f[tx] > T.float32(0.5) and T.subgroup_elect())
        f[tx] = T.subgroup_broadcast(f[tx], 3) + T.subgroup_inclusive_add(f[tx])
        if T.subgroup_any(x[tx] == 0):
            T.atomic_exchange(s[2], T.subgroup_invocation_id() + T.subgroup_id())


def test_round_trip():
    text = uses_everything.script()
    assert "        T.atomic_add(h[x[tx] % 16], 1)\n" in text  # literals typed by the element
    assert "T.subgroup_ballot(" in text and "T.subgroup_size()" in text
    vkir.assert_structural_equal(vkir.from_script(text), uses_everything)
    vkir.analysis.verify_types(uses_everything)


def test_ir_form():
    @T.prim_func
    def k(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32")):
        for tx in T.thread_binding(8, "threadIdx.x"):
            T.atomic_add(a[tx], 2)
            b[tx] = T.subgroup_add(tx)

    loop = k.body
    first, second = loop.body.seq
    a, b = k.buffer_map[k.params[0]], k.buffer_map[k.params[1]]
    assert first == ir.Evaluate(ir.Call("int32", "atomic_add",
                                        (ir.BufferLoad(a, (loop.loop_var,)), ir.const(2))))
    assert second.value == ir.Call("int32", "subgroup_add", (loop.loop_var,))
    assert ir.is_atomic("atomic_add") and not ir.is_pure("atomic_add")
    assert ir.is_subgroup("subgroup_add") and not ir.is_pure("subgroup_add")


def test_programmatic_builders():
    a = ir.decl_buffer((8,), "uint32", "a")
    call = T.atomic_or(ir.BufferLoad(a, (ir.const(1),)), 6)
    assert call == ir.Call("uint32", "atomic_or", (ir.BufferLoad(a, (ir.const(1),)),
                                                   ir.const(6, "uint32")))
    assert T.subgroup_ballot(True).dtype == ir.DataType.parse("uint32x4")
    assert T.subgroup_shuffle(ir.const(1.5, "float32"), 2).args[1] == ir.const(2)


@pytest.mark.parametrize("body,message", [
    ("T.atomic_add(x, 1)", "first argument must be a buffer element"),
    ("T.atomic_add(x[0], 1.5)", "float literal 1.5"),
    ("T.atomic_compare_exchange(x[0], 1)", "takes 3 arguments"),
    ("y = T.subgroup_add()", "takes 1 argument"),
    ("y = T.subgroup_size(3)", "takes 0 arguments"),
    ("y = T.subgroup_ballot(3)", "integer literal 3 used where a bool"),
    ("T.subgroup_add(x[0])", "an expression is not a statement"),
])
def test_errors_point_at_the_argument(body, message):
    src = f"""
@T.prim_func
def k(x: T.Buffer((8,), "int32")):
    for tx in T.thread_binding(8, "threadIdx.x"):
        {body}
"""
    with pytest.raises(ScriptError, match=message):
        vkir.from_script(src)


def test_examples_round_trip():
    from vkir.examples import sync

    funcs = [f for f in vars(sync).values() if isinstance(f, ir.PrimFunc)]
    assert len(funcs) == 9
    for f in funcs:
        vkir.assert_structural_equal(vkir.from_script(f.script()), f)
