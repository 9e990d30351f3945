"""vkir.Target (one description per compilation), pipelines as data, pass instruments, and the
`vkir compile` flags built on them (--target without a device, --print-after, --time-passes)."""

import dataclasses
import io

import numpy as np
import pytest

import vkir
from vkir import T, transform
from vkir.analysis import verify_types
from vkir.tools.cli import main
from vkir.tools.demo import VADD_SOURCE
from vkir.errors import ArgumentError, TypeCheckError, UnsupportedError
from vkir.lowering import pipeline
from vkir.target import FEATURES, Limits, Target


@T.prim_func
def flags(A: T.Buffer((8,), "bool"), B: T.Buffer((8,), "int32")):
    for i in T.serial(8):
        B[i] = T.if_then_else(A[i], 1, 0)


@T.prim_func
def vscale(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for v in T.vectorized(4):
            B[bx * 4 + v] = A[bx * 4 + v] * T.float32(2)


# -- Target --------------------------------------------------------------------------------------
def test_target_fields_and_constructors():
    base = Target()
    assert (base.kind, base.env, base.spirv_version) == ("vulkan", "vulkan1.1", (1, 3))
    assert base.limits == Limits() and base.limits.max_workgroup_invocations == 128
    assert base.features == frozenset() and base.quirks == frozenset() and base.subgroup_size is None
    v13 = Target.vulkan("vulkan1.3")
    assert (v13.env, v13.spirv_version) == ("vulkan1.3", (1, 6)) and v13 == Target.vulkan13()
    lp = Target.lavapipe()
    assert lp.features == FEATURES - {f"float{w}_denorm_preserve" for w in (16, 32, 64)} - {
        "storage_image_read_without_format", "sampled_image_array_dynamic_indexing",
        "storage_image_array_dynamic_indexing"}
    assert "loop_trip_limit_65535" in lp.quirks
    assert lp.limits.max_workgroup_invocations == 1024
    interp = Target.interp()
    assert interp.kind == "interp" and not interp.is_vulkan
    assert vkir.Target is Target and vkir.spirv.Target is Target
    assert {Target.named(n) for n in ("vulkan1.1", "vulkan")} == {base}
    hash(lp)  # hashable: caches key on it
    assert lp.key() == Target.lavapipe().key() and lp.key() != v13.key()


@pytest.mark.parametrize("bad", [dict(kind="cuda"), dict(env="vulkan1.0"),
                                 dict(features={"float128"}),
                                 dict(spirv_version=(1, 6), env="vulkan1.1")])
def test_target_refuses_what_it_cannot_be(bad):
    with pytest.raises(ValueError):
        Target(**bad)
    with pytest.raises(ValueError, match="unknown target"):
        Target.named("cuda")


def test_target_from_device(device):
    t = Target.from_device(device)
    info = device.info
    assert t == Target.from_device(info) and t.kind == "vulkan"
    assert t.features == info.features & FEATURES and t.subgroup_size == info.subgroup_size
    assert t.limits.max_workgroup_invocations == info.limits.max_workgroup_invocations
    assert t.limits.max_workgroup_size == tuple(info.limits.max_workgroup_size)
    assert t.quirks == frozenset(getattr(info, "quirks", frozenset()))
    k = vkir.build(vscale, device=device)
    assert k.target == t


# -- pipelines -----------------------------------------------------------------------------------
def test_pipeline_is_data_and_depends_on_the_target():
    p = pipeline(Target())
    assert isinstance(p, transform.Pipeline) and isinstance(p.passes, tuple)
    # which passes run in which order, per target: tests/test_default_pipeline_order.py
    assert p.names == tuple(q.name for q in p.passes)
    # 8-bit values are emulated only where the target lacks 8-bit integers or storage
    assert "EmulateInt8" in p.names and "EmulateInt8" not in pipeline(Target.lavapipe()).names
    assert all(q.name == type(q).__name__ for q in p.passes)
    casts = pipeline(Target(), pointer_casts=True)
    assert casts.names.index("PointerCastVectorize") == casts.names.index("VectorTypeRewrite") - 1
    assert casts.passes[casts.names.index("PointerCastVectorize")].target == Target()
    assert "BoolToInt8" not in pipeline(Target.interp()).names  # the interpreter stores bools
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.passes = ()
    # a pipeline is callable on a PrimFunc and equals vkir.lower's passes
    vkir.assert_structural_equal(p(vscale), vkir.lower(vscale, Target()))


def test_lower_uses_its_target():
    vulkan = vkir.lower(flags, Target.lavapipe())
    interp = vkir.lower(flags, Target.interp())
    baseline = vkir.lower(flags, Target())  # no 8-bit storage: the bytes are read as words
    assert str(vulkan.buffer_map[vulkan.params[0]].dtype) == "int8"
    assert str(baseline.buffer_map[baseline.params[0]].dtype) == "uint32"
    assert str(interp.buffer_map[interp.params[0]].dtype) == "bool"
    verify_types(vulkan, Target())
    with pytest.raises(TypeCheckError):
        verify_types(interp, Target())  # a bool storage buffer: not for Vulkan
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0], bool)
    b = np.zeros(8, np.int32)
    vkir.interpret(interp, a, b)
    np.testing.assert_array_equal(b, a.astype(np.int32))


def test_pointer_cast_target_refuses_what_vulkan_cannot_alias():
    @T.prim_func
    def staged(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
        S = T.alloc_buffer((16,), "float32", scope="shared")
        for i in T.serial(16):
            S[i] = A[i]
        for i in T.vectorized(4):
            B[i] = S[i]

    flat = transform.VectorizeLoop()(transform.FlattenBuffer()(staged))
    transform.PointerCastVectorize(target=Target.interp())(flat)  # the interpreter aliases anything
    with pytest.raises(UnsupportedError):
        transform.PointerCastVectorize(target=Target.lavapipe())(flat)


def test_lower_raises_the_error_classes_of_build():
    for bad in ("not a function", 3):
        with pytest.raises(ArgumentError):
            vkir.lower(bad)
        with pytest.raises(ArgumentError):
            vkir.build(bad)
    with pytest.raises(ArgumentError, match="unknown target"):
        vkir.lower(vscale, "cuda")
    with pytest.raises(TypeError):
        vkir.build(vscale, None)  # options are keyword-only


# -- instruments ---------------------------------------------------------------------------------
class Recorder(transform.Instrument):
    def __init__(self):
        self.calls = []

    def before(self, pass_, func):
        self.calls.append(("before", pass_.name, func.name))

    def after(self, pass_, func):
        self.calls.append(("after", pass_.name, func.name))


def test_instruments_wrap_every_pass_in_order():
    rec, timer, out = Recorder(), transform.TimePasses(), io.StringIO()
    vkir.lower(vscale, Target(), instruments=[rec, timer,
                                              transform.PrintAfter("VectorizeLoop", file=out)])
    names = pipeline(Target()).names
    assert rec.calls == [(when, n, "vscale") for n in names for when in ("before", "after")]
    assert [n for n, _ in timer.records] == list(names)
    assert all(s >= 0 for _, s in timer.records)
    assert f"total ({len(names)} passes)" in timer.report()
    printed = out.getvalue()
    assert printed.startswith("# after VectorizeLoop\n") and printed.count("# after") == 1
    assert "T.ramp(bx * 4, 1, 4)" in printed  # the vectorized loop's accesses


class Break(transform.Pass):
    """A broken pass: stores float16 into a float32 buffer (an implicit conversion)."""

    def transform(self, func):
        return func.with_body(vkir.from_script(_ILL).body)


def test_check_types_instrument_blames_the_pass(monkeypatch):
    monkeypatch.delenv("VKIR_VERIFY_PASSES")  # the instrument alone, not the suite's own check
    pipe = transform.Pipeline((transform.FlattenBuffer(), Break()))
    assert pipe.names == ("FlattenBuffer", "Break")
    func = vkir.from_script(_WELL)
    with pytest.raises(TypeCheckError):
        verify_types(pipe(func))  # nothing checks without the instrument
    with pytest.raises(TypeCheckError, match=r"pass Break\(\) turned well-typed function 'store'"):
        pipe(func, instruments=[transform.CheckTypes()])
    ill = vkir.from_script(_ILL)
    with pytest.raises(TypeCheckError):
        verify_types(pipe(ill, instruments=[transform.CheckTypes()]))  # garbage in: let through


_WELL = '''@T.prim_func
def store(A: T.Buffer((4,), "float32")):
    for i in T.serial(4):
        A[i] = T.float32(1)
'''
_ILL = _WELL.replace("T.float32(1)", "T.float16(1)")


# -- command line --------------------------------------------------------------------------------
def test_compile_print_after_and_time_passes_offline(tmp_path, capsys):
    src = tmp_path / "k.py"
    src.write_text("from vkir import T\n" + VADD_SOURCE)
    assert main(["compile", str(src), "--target", "lavapipe", "--emit", "lowered",
                 "--print-after", "FlattenBuffer", "--print-after", "CommonSubexprElim",
                 "--time-passes"]) == 0
    out = capsys.readouterr().out
    assert out.count("# after ") == 2
    assert out.index("# after FlattenBuffer") < out.index("# after CommonSubexprElim")
    # lavapipe: the passes of Target() but EmulateInt8 (it has 8-bit storage) and EmulateInt64
    # (it has int64), and SplitLongLoops (its loop-trip quirk)
    passes = len(pipeline(Target()).passes) - 1   # two out, one in
    assert f"total ({passes} passes)" in out and "ms  VectorizeLoop" in out
    assert main(["compile", str(src), "--target", "vulkan1.1", "--print-after", "all"]) == 0
    out = capsys.readouterr().out
    assert out.count("# after ") == len(pipeline(Target.vulkan("vulkan1.1")).passes)
    assert "# after BindParallel" in out and "OpEntryPoint GLCompute" in out
    assert main(["compile", str(src), "--print-after", "NoSuchPass", "--target", "vulkan1.3"]) == 2
    assert "unknown pass NoSuchPass" in capsys.readouterr().err
