"""`@T.func` device functions and the float vector helpers (`T.dot`, `T.cross`, ...): a call
inlines to the same IR as the hand-written `T.let` form, prints and parses back, type-checks
exactly, refuses recursion naming the cycle, and computes numpy's values in the interpreter and on
the device."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ScriptError


@T.func
def square(x: T.float32) -> T.float32:
    return x * x


@T.func
def shade(n: T.float32x3, l: T.float32x3) -> T.float32:
    """Lambert term, squared where it is positive."""
    d = T.dot(n, l)
    if d > 0:
        return square(d)
    else:
        return T.float32(0)


@T.func
def clamp_index(i: T.int32, n: T.int32) -> T.int32:
    lo: T.int32 = T.max(i, 0)
    return T.min(lo, n - 1)


@T.prim_func
def shaded(a: T.Buffer(("n", 3), "float32"), light: T.Buffer((3,), "float32"),
           out: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        v = T.float32x3(a[i, 0], a[i, 1], a[i, 2])
        out[i] = shade(v, T.float32x3(light[0], light[1], light[2])) + square(0.5)


@T.prim_func
def shaded_by_hand(a: T.Buffer(("n", 3), "float32"), light: T.Buffer((3,), "float32"),
                   out: T.Buffer(("n",), "float32")):
    for i in T.parallel(n):
        v = T.float32x3(a[i, 0], a[i, 1], a[i, 2])
        out[i] = T.let(n_ := v, T.let(l := T.float32x3(light[0], light[1], light[2]), T.let(
            d := n_[0] * l[0] + n_[1] * l[1] + n_[2] * l[2],
            T.if_then_else(d > 0, T.let(x := d, x * x), T.float32(0))))) \
            + T.let(x := T.float32(0.5), x * x)


def _shaded_reference(a, light):
    d = a @ light
    return np.where(d > 0, d * d, 0).astype("float32") + np.float32(0.25)


def test_a_call_inlines_to_the_let_form():
    vkir.assert_structural_equal(shaded, shaded_by_hand)


def test_inlined_kernels_print_and_parse_back():
    vkir.assert_structural_equal(vkir.from_script(shaded.script()), shaded)
    assert "shade(" not in shaded.script()   # the body is inlined, not called


def test_interpreter_values():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 3)).astype("float32")
    light = np.array([0.3, -0.2, 0.9], "float32")
    out = np.zeros(37, "float32")
    vkir.interpret(shaded, a, light, out)
    np.testing.assert_allclose(out, _shaded_reference(a, light), rtol=1e-6, atol=1e-6)


def test_integer_device_function_with_declared_local():
    @T.prim_func
    def gather(a: T.Buffer((8,), "int32"), idx: T.Buffer((5,), "int32"),
               out: T.Buffer((5,), "int32")):
        for i in T.serial(5):
            out[i] = a[clamp_index(idx[i], 8)]

    a = np.arange(8, dtype="int32") * 10
    idx = np.array([-3, 0, 4, 7, 12], "int32")
    out = np.zeros(5, "int32")
    vkir.interpret(gather, a, idx, out)
    np.testing.assert_array_equal(out, a[np.clip(idx, 0, 7)])


@T.func
def ping(x: T.float32) -> T.float32:
    return pong(x) + 1.0


@T.func
def pong(x: T.float32) -> T.float32:
    return ping(x) * 2.0


def test_recursion_is_refused_naming_the_cycle():
    with pytest.raises(ScriptError, match="recursive device function: ping -> pong -> ping"):
        @T.prim_func
        def k(a: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                a[i] = ping(a[i])


def test_argument_types_are_exact():
    with pytest.raises(ScriptError, match="parameter 'n' is float32x3, got float32") as err:
        @T.prim_func
        def k(a: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                a[i] = shade(a[i], T.float32x3(1.0, 2.0, 3.0))
    assert "shade(a[i]" in str(err.value)   # points at the call in the kernel
    with pytest.raises(ScriptError, match=r"takes 2 arguments, got 1"):
        @T.prim_func
        def k2(a: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                a[i] = shade(T.float32x3(1.0, 2.0, 3.0))


def test_definition_errors():
    with pytest.raises(ScriptError, match="needs a return annotation"):
        @T.func
        def f(x: T.float32):
            return x
    with pytest.raises(ScriptError, match="device functions take no buffers"):
        @T.func
        def g(x: T.Buffer((4,), "float32")) -> T.float32:
            return x[0]
    with pytest.raises(ScriptError, match="ends with `return e`"):
        @T.func
        def h(x: T.float32) -> T.float32:
            for i in T.serial(3):
                x = x + 1.0
            return x


def test_a_wrong_return_type_points_into_the_device_function():
    @T.func
    def half(x: T.int32) -> T.float32:
        return x // 2

    with pytest.raises(ScriptError, match="half returns float32, got int32") as err:
        @T.prim_func
        def k(a: T.Buffer((4,), "int32"), b: T.Buffer((4,), "float32")):
            for i in T.serial(4):
                b[i] = half(a[i])
    assert "return x // 2" in str(err.value)


def test_calling_outside_a_kernel_says_where_it_can_be_called():
    with pytest.raises(ScriptError, match=r"vkir.map\(square\)"):
        square(2.0)


# -- vector helpers ----------------------------------------------------------------------------

@T.prim_func
def helpers(a: T.Buffer((16, 3), "float32"), b: T.Buffer((16, 3), "float32"),
            o: T.Buffer((16, 12), "float32")):
    for i in T.parallel(16):
        x = T.float32x3(a[i, 0], a[i, 1], a[i, 2])
        y = T.float32x3(b[i, 0], b[i, 1], b[i, 2])
        c = T.cross(x, y)
        n = T.normalize(x)
        o[i, 0] = T.dot(x, y)
        o[i, 1] = T.length(x)
        o[i, 2] = c[0]
        o[i, 3] = c[1]
        o[i, 4] = c[2]
        o[i, 5] = n[0]
        o[i, 6] = T.reflect(x, n)[1]
        o[i, 7] = T.mix(x, y, 0.25)[2]
        o[i, 8] = T.clamp(x, -0.1, 0.2)[0]
        o[i, 9] = T.smoothstep(-0.5, 0.5, x)[1]
        o[i, 10] = T.mix(a[i, 0], b[i, 0], a[i, 1])
        o[i, 11] = T.length(T.float32x2(a[i, 2], b[i, 2]))


def _helpers_reference(a, b):
    ref = np.zeros((len(a), 12), "float32")
    ref[:, 0] = (a * b).sum(1)
    ref[:, 1] = np.linalg.norm(a, axis=1)
    ref[:, 2:5] = np.cross(a, b)
    n = a / np.linalg.norm(a, axis=1, keepdims=True)
    ref[:, 5] = n[:, 0]
    ref[:, 6] = (a - 2 * (n * a).sum(1, keepdims=True) * n)[:, 1]
    ref[:, 7] = (a * 0.75 + b * 0.25)[:, 2]
    ref[:, 8] = np.clip(a, -0.1, 0.2)[:, 0]
    t = np.clip(a + 0.5, 0, 1)
    ref[:, 9] = (t * t * (3 - 2 * t))[:, 1]
    ref[:, 10] = a[:, 0] * (1 - a[:, 1]) + b[:, 0] * a[:, 1]
    ref[:, 11] = np.hypot(a[:, 2], b[:, 2])
    return ref


def _inputs():
    rng = np.random.default_rng(1)
    return (rng.random((16, 3), dtype="float32") - 0.5, rng.random((16, 3), dtype="float32") - 0.5)


def test_helpers_in_the_interpreter_and_round_trip():
    a, b = _inputs()
    o = np.zeros((16, 12), "float32")
    vkir.interpret(helpers, a, b, o)
    np.testing.assert_allclose(o, _helpers_reference(a, b), rtol=1e-5, atol=1e-6)
    vkir.assert_structural_equal(vkir.from_script(helpers.script()), helpers)


@pytest.mark.parametrize("text, message", [
    ("T.dot(x, T.float32(1))", "expected float32x3 like the first operand, got float32"),
    ("T.cross(T.float32x2(1.0, 2.0), T.float32x2(1.0, 2.0))",
     "expected a float vector of 3 lanes, got float32x2"),
    ("T.length(T.int32x2(1, 2))", "expected a float vector of 2 or 3 or 4 lanes, got int32x2"),
    ("T.normalize(T.float32(1))", "float vector of 2 or 3 or 4 lanes, got float32"),
    ("T.mix(x, x, T.float16(0.5))", "expected float32x3 or float32, got float16"),
    ("T.clamp(1.0, 0.0, 1.0)", "expected a typed value"),
])
def test_helper_types_are_exact(text, message):
    src = f"""
@T.prim_func
def k(a: T.Buffer((4,), "float32")):
    x = T.float32x3(a[0], a[1], a[2])
    a[3] = T.cast({text}, "float32")
"""
    with pytest.raises(ScriptError, match=message):
        vkir.from_script(src)


@pytest.fixture(scope="module")
def kernels(_vulkan_device):
    return vkir.build(shaded, device=_vulkan_device), vkir.build(helpers, device=_vulkan_device)


def test_device_values(device, kernels):
    k_shaded, k_helpers = kernels
    rng = np.random.default_rng(2)
    a = rng.standard_normal((300, 3)).astype("float32")
    light = np.array([0.3, -0.2, 0.9], "float32")
    out = np.zeros(300, "float32")
    k_shaded(a, light, out)
    np.testing.assert_allclose(out, _shaded_reference(a, light), rtol=1e-5, atol=1e-5)
    a, b = _inputs()
    o = np.zeros((16, 12), "float32")
    k_helpers(a, b, o)
    np.testing.assert_allclose(o, _helpers_reference(a, b), rtol=1e-4, atol=1e-5)


@T.prim_func
def accumulate(a: T.Buffer((64, 3), "float32"), out: T.Buffer((1,), "float32")):
    acc = T.float32(0)
    for i in T.serial(64):
        v = T.float32x3(a[i, 0], a[i, 1], a[i, 2])
        acc = acc + shade(T.normalize(v), T.float32x3(0.0, 0.6, 0.8)) \
            + T.smoothstep(-1.0, 1.0, T.length(T.cross(v, v)))
    out[0] = acc


def test_native_loops_compute_the_inlined_bodies_bit_for_bit(monkeypatch, tmp_path):
    from vkir.interpreter import native_loops
    from vkir.interpreter.loop_to_c import translate
    from vkir.ir import stmt as S
    from vkir.ir.traversal import walk

    if native_loops.c_compiler() is None:
        pytest.skip("needs a C compiler")
    loop = next(n for n in walk(accumulate.body) if isinstance(n, S.For))
    translate(loop)   # the inlined lets, shuffles and sqrt all translate to C
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    a = np.random.default_rng(3).standard_normal((64, 3)).astype("float32")
    results = []
    for mode in ("0", "1"):
        monkeypatch.setenv("VKIR_NATIVE_LOOPS", mode)
        out = np.zeros(1, "float32")
        vkir.interpret(accumulate, a, out)
        results.append(out)
    assert results[0].tobytes() == results[1].tobytes()
    n = a / np.linalg.norm(a, axis=1, keepdims=True)
    d = n @ np.array([0.0, 0.6, 0.8], "float32")
    np.testing.assert_allclose(results[0][0], (np.where(d > 0, d * d, 0) + 0.5).sum(), rtol=1e-5)
