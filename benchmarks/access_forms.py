"""What each way of reading memory costs on a CPU Vulkan driver, measured beside numpy.

`python -m benchmarks.access_forms [loads|broadcast|vadd|vadd_layouts|vadd_split|sum_forms|matmul|peak ...] [--repeat N]` runs hand-written
GLSL compute shaders (vkir.compile_glsl) that differ only in how they read memory, and prints
their times with numpy's in the same process, sampled in alternation (one vkir sample, one numpy
sample, ...) so that a change of load on a shared host falls on both: the ratio column is
numpy's time over the shader's (1.0 = as fast as numpy, higher is better).

Why: llvmpipe (lavapipe) runs 8 invocations in one 256-bit SIMD register set and turns each
storage-buffer access whose address it cannot prove uniform into a loop over the 8 lanes; this
script measures which other forms (shared memory, uniform buffers, texel buffers, physical
storage buffer pointers) avoid that, what a subgroup broadcast costs (sharing a load across
lanes instead), what a matmul reaches with each, and the driver's own ceiling (register-only
FMAs). docs/performance.md records the results.

Physical storage buffer pointers are measured on lavapipe only: vkir has no device-address API
yet, and lavapipe's device address of a buffer is the host address of its mapped memory, so the
script passes that (SwiftShader also lacks the int64 feature the GLSL form needs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vkir.errors import UnsupportedError

_LOADS_HEAD = """#version 450
#extension GL_EXT_buffer_reference : enable
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer X { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer Xs { float xs[]; };
layout(std430, binding = 2) buffer O { vec4 o[]; };
layout(std140, binding = 3) uniform U { vec4 u[4096]; };
layout(binding = 4) uniform samplerBuffer tb;
#ifdef BDA
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer P4 { vec4 v[]; };
layout(push_constant) uniform PC { uint64_t addr; } pc;
#endif
shared vec4 sh[1024];
void main() {
    uint lane = gl_LocalInvocationID.x;
    vec4 acc = vec4(0);
    for (uint k = 0; k < 1024u; ++k) {
        BODY
    }
    o[gl_GlobalInvocationID.x] = acc;
}
"""

# one load per loop iteration; "lane": the address differs per invocation, "k": the same address
# in every invocation (dynamically uniform, from the loop counter)
LOADS = {
    "none (loop only)": "acc = acc * 1.0001 + 1.0;",
    "ssbo float, per lane": "acc.x += xs[(k * 64 + lane) & 65535];",
    "ssbo vec4, per lane": "acc += x4[(k * 64 + lane) & 16383];",
    "ssbo vec4, uniform": "acc += x4[k];",
    "shared vec4, per lane": "acc += sh[(k + lane) & 1023];",
    "shared vec4, uniform": "acc += sh[k & 1023];",
    "ubo vec4, per lane": "acc += u[(k * 64 + lane) & 4095];",
    "ubo vec4, uniform": "acc += u[k & 4095];",
    "texel buffer vec4, per lane": "acc += texelFetch(tb, int((k * 64 + lane) & 16383));",
    "device address vec4, per lane": "acc += P4(pc.addr).v[(k * 64 + lane) & 16383];",
}


def _lavapipe(dev) -> bool:
    return "llvmpipe" in dev.info.name.lower()


def _host_address(array):
    from vkir.runtime.host_import import host_address

    return host_address(array.buffer)


def _args(kernel, pool):
    """The arguments of `kernel` by binding name, in its binding order (unused ones are gone)."""
    names = [b.name for b in kernel.bindings] + [i.name for i in (kernel.info.images or ())]
    return [pool[n] for n in names]


def loads(vkir, dev, repeat):
    """Nanoseconds per invocation and loop iteration of each load form (64 x 64 invocations,
    1024 iterations each)."""
    x = np.random.default_rng(0).random(65536 * 4, dtype=np.float32)
    pool = {"X": vkir.array(x, dev), "Xs": vkir.array(x, dev),
            "O": vkir.empty(64 * 64 * 4, "float32", dev), "U": vkir.array(x[:16384], dev),
            "tb": x.reshape(-1, 4)[:16384].copy()}
    print(f"{'load form':32s} {'ns/invocation-iteration':>24s}")
    for name, body in LOADS.items():
        bda = "device address" in body or "pc.addr" in body
        if bda and not _lavapipe(dev):
            print(f"{name:32s} {'(lavapipe only)':>24s}")
            continue
        src = _LOADS_HEAD.replace("BODY", body)
        if bda:
            src = src.replace("#version 450\n", "#version 450\n#define BDA 1\n", 1)
        k = vkir.compile_glsl(src, device=dev)
        push = {"addr": _host_address(pool["X"])} if bda else None
        t = min(k.profile(*_args(k, pool), grid=(64, 1, 1), push=push, repeat=3,
                          warmup=1).median for _ in range(repeat))
        print(f"{name:32s} {t / (64 * 64 * 1024) * 1e9:24.3f}", flush=True)


_VADD = {
    "ssbo": """layout(std430, binding = 0) readonly buffer A { vec4 a[]; };
layout(std430, binding = 1) readonly buffer B { vec4 b[]; };
layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };
void main() { uint i = gl_GlobalInvocationID.x; c[i] = a[i] + b[i]; }""",
    "texel buffers": """layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };
void main() { int i = int(gl_GlobalInvocationID.x); c[i] = texelFetch(A, i) + texelFetch(B, i); }""",
    "texel read+store": """layout(binding = 0) uniform samplerBuffer A;
layout(binding = 1) uniform samplerBuffer B;
layout(rgba32f, binding = 2) writeonly uniform imageBuffer C;
void main() { int i = int(gl_GlobalInvocationID.x); imageStore(C, i, texelFetch(A, i) + texelFetch(B, i)); }""",
    "device address": """#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(buffer_reference, std430, buffer_reference_align = 16) buffer P4 { vec4 v[]; };
layout(push_constant) uniform PC { uint64_t a, b, c; } pc;
void main() { uint i = gl_GlobalInvocationID.x; P4(pc.c).v[i] = P4(pc.a).v[i] + P4(pc.b).v[i]; }""",
}


def _paired(run, numpy_call, repeat):
    """(median shader seconds, median numpy seconds, median of numpy/shader per pair)."""
    vs, ns = [], []
    for _ in range(repeat):
        vs.append(run())
        t0 = time.perf_counter()
        numpy_call()
        ns.append(time.perf_counter() - t0)
    return float(np.median(vs)), float(np.median(ns)), float(np.median([n / v for v, n in zip(vs, ns)]))


def vadd(vkir, dev, repeat, n=1 << 24):
    """c = a + b on 2^24 float32, one vec4 per invocation, with each read form (and one
    write form besides storage buffers: a storage texel buffer)."""
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B, C = vkir.array(a, dev), vkir.array(b, dev), vkir.empty(n, "float32", dev)
    grid = (n // 4 // 256, 1, 1)
    for name, body in _VADD.items():
        if name == "device address" and not _lavapipe(dev):
            print(f"vadd {name:16s} (lavapipe only)")
            continue
        k = vkir.compile_glsl("#version 450\nlayout(local_size_x = 256) in;\n" + body, device=dev)
        if name == "device address":
            args, push = (), {"a": _host_address(A), "b": _host_address(B), "c": _host_address(C)}
        elif name == "texel buffers":
            args, push = (a.reshape(-1, 4), b.reshape(-1, 4), C), None
        elif name == "texel read+store":   # a storage texel buffer takes a numpy array
            args, push = (a.reshape(-1, 4), b.reshape(-1, 4), c.reshape(-1, 4)), None
        else:
            args, push = (A, B, C), None
        try:
            k(*args, grid=grid, push=push)
        except UnsupportedError as exc:
            print(f"vadd {name:16s} not run: {exc}")
            continue
        got = c if name == "texel read+store" else C.numpy()
        assert np.array_equal(got, a + b), name
        v, t, r = _paired(lambda: k.profile(*args, grid=grid, push=push, repeat=1, warmup=0).median,
                          lambda: np.add(a, b, out=c), repeat)
        print(f"vadd {name:16s} {v * 1e3:7.1f} ms {12 * n / v / 1e9:5.2f} GB/s   numpy "
              f"{12 * n / t / 1e9:5.2f} GB/s   numpy/shader time {r:.2f}", flush=True)


LAYOUTS = (dict(w=64, vpt=1, layout="chunk", v=8), dict(w=64, vpt=2, layout="chunk", v=8),
           dict(w=128, vpt=2, layout="chunk", v=8), dict(w=64, vpt=4, layout="chunk"),
           dict(w=8, vpt=2, layout="range", groups=128, v=8),
           dict(w=8, vpt=4, layout="range", groups=256), dict(w=256, vpt=4), dict(w=64, vpt=1))


def vadd_layouts(vkir, dev, repeat, n=1 << 24):
    """c = a + b on 2^24 float32 through vkir (benchmarks.kernels.add_template) in each layout
    and vector width, beside np.add(out=), per CPU-second (process CPU time, llvmpipe's threads
    included): what an invocation's share of the work (a contiguous run or an interleaved
    slice), the workgroup size and the access width (float32x4, or uint64x4 through a pointer
    cast) cost. Configs a device cannot run (uint64 without shaderInt64) are reported."""
    from .host_numpy import timed_calls
    from .kernels import add_template

    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    A, B, C = vkir.array(a, dev), vkir.array(b, dev), vkir.empty(n, "float32", dev)
    for config in LAYOUTS:
        if config.get("v") == 8 and "int64" not in dev.info.features:
            print(f"vadd {config} not run: uint64x4 accesses need shaderInt64")
            continue
        try:
            k = vkir.build(add_template(n, **config), device=dev)
            k(A, B, C)
        except UnsupportedError as exc:
            print(f"vadd {config} not run: {exc}")
            continue
        assert np.array_equal(C.numpy(), a + b), config
        vw, vc, nw, nc = [], [], [], []
        for _ in range(repeat):   # alternating, so a change of load falls on both
            w, cp = timed_calls(lambda: k(A, B, C), 1, warmup=0)
            vw += w
            vc += cp
            w, cp = timed_calls(lambda: np.add(a, b, out=c), 1, warmup=0)
            nw += w
            nc += cp
        v_cpu, n_cpu = 12 * n / np.median(vc) / 1e9, 12 * n / np.median(nc) / 1e9
        print(f"vadd {str(config):58s} {12 * n / np.median(vw) / 1e9:6.2f} GB/s {v_cpu:6.2f} "
              f"GB/CPU-s   numpy {n_cpu:6.2f} GB/CPU-s   ratio per CPU-s {v_cpu / n_cpu:.2f}",
              flush=True)


_SPLIT_HEAD = '''
@T.prim_func
def k(a: T.Buffer((N4,), "float32x4"), b: T.Buffer((N4,), "float32x4"), c: T.Buffer((N4,), "float32x4")):
    cw = T.decl_buffer((N4 // 2,), "uint64x4", data=c.data)
    for bx in T.thread_binding(N4 // 256, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            for u in T.unroll(2):
                i = (bx * 64 + tx) * 2 + u
'''
SPLIT = {
    "vadd: read 8 B, write 4 B": '''
                lo = a[2 * i] + b[2 * i]
                hi = a[2 * i + 1] + b[2 * i + 1]
                cw[i] = T.shuffle([T.reinterpret(lo, "uint64x2"), T.reinterpret(hi, "uint64x2")], [0, 1, 2, 3])
''',
    "write 4 B only": '''
                lo = T.broadcast(T.cast(i, "float32"), 4)
                cw[i] = T.shuffle([T.reinterpret(lo, "uint64x2"), T.reinterpret(lo, "uint64x2")], [0, 1, 2, 3])
''',
    "read 8 B only": '''
                lo = a[2 * i] + b[2 * i] + a[2 * i + 1] + b[2 * i + 1]
                if lo[0] == T.float32(-1):
                    c[i] = lo
''',
}


def vadd_split(vkir, dev, repeat, n=1 << 24):
    """Where vadd's time goes: the chunk form (64 invocations, two groups of eight float32
    each: float32x4 reads, uint64x4 stores) doing the whole vadd, only its stores (values
    from the index), or only its reads (no store), in nanoseconds per element and CPU-second;
    numpy's np.add(out=) beside. Needs shaderInt64."""
    from vkir.script import from_script

    from .host_numpy import timed_calls

    if "int64" not in dev.info.features:
        print("vadd_split not run: uint64x4 stores need shaderInt64")
        return
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    args = [vkir.array(x, dev).reshape(n // 4, 4) for x in (a, b, c)]
    for name, body in SPLIT.items():
        k = vkir.build(from_script(_SPLIT_HEAD + body, env=dict(N4=n // 4)), device=dev)
        k(*args)
        vc, nc = [], []
        for _ in range(repeat):
            vc += timed_calls(lambda: k(*args), 1, warmup=0)[1]
            nc += timed_calls(lambda: np.add(a, b, out=c), 1, warmup=0)[1]
        print(f"{name:28s} {np.median(vc) / n * 1e9:6.3f} ns per element (CPU)   numpy vadd "
              f"{np.median(nc) / n * 1e9:6.3f}", flush=True)


def vadd_glsl(texel: bool, wide: bool) -> str:
    """The best hand-written GLSL vadd measured (the chunk form): 64 invocations per workgroup,
    each adding 16 consecutive float32 (with `wide` as two u64vec4 stores of 8, needs
    shaderInt64; else four vec4 stores), a and b read through rgba32f texel buffers (`texel`)
    or as storage-buffer vec4; no bounds tests (n a multiple of 1024)."""
    if texel:
        decl = ("layout(binding = 0) uniform samplerBuffer A;\n"
                "layout(binding = 1) uniform samplerBuffer B;\n")
        ld = (lambda buf, e: f"texelFetch({buf}, int({e}))")
    else:
        decl = ("layout(std430, binding = 0) readonly buffer A_ { vec4 a[]; };\n"
                "layout(std430, binding = 1) readonly buffer B_ { vec4 b[]; };\n")
        ld = (lambda buf, e: f"{buf.lower()}[{e}]")
    head = "#version 450\n"
    if wide:
        head += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        decl += ("layout(std430, binding = 2) writeonly buffer C_ { u64vec4 c[]; };\n"
                 "u64vec4 pk(vec4 l, vec4 h) { uvec4 p = floatBitsToUint(l), q = floatBitsToUint(h);"
                 " return u64vec4(packUint2x32(p.xy), packUint2x32(p.zw), packUint2x32(q.xy),"
                 " packUint2x32(q.zw)); }\n")
        body = "".join(
            f"    {{ uint i = base + {u}u; c[i] = pk({ld('A', '2u * i')} + {ld('B', '2u * i')}, "
            f"{ld('A', '2u * i + 1u')} + {ld('B', '2u * i + 1u')}); }}\n" for u in range(2))
    else:
        decl += "layout(std430, binding = 2) writeonly buffer C_ { vec4 c[]; };\n"
        body = "".join(f"    {{ uint i = base + {u}u; c[i] = {ld('A', 'i')} + {ld('B', 'i')}; }}\n"
                       for u in range(4))
    per = 2 if wide else 4          # stores per invocation
    return (head + "layout(local_size_x = 64) in;\n" + decl + "void main() {\n"
            f"    uint base = gl_GlobalInvocationID.x * {per}u;\n" + body + "}\n")


def vadd_launch(dev, A, B, C, n: int):
    """(pipeline, resources, groups, form) of `vadd_glsl` for c = a + b on float32 DeviceArrays
    of n elements (a multiple of 1024): texel reads where rgba32f views of a and b can be made,
    u64vec4 stores where the device has int64; `form` names the choice."""
    from vkir import runtime
    from vkir.images import image_format
    from vkir.runtime.buffer_texels import texel_view
    from vkir.runtime.glsl import compile_glsl

    if n % 1024:
        raise ValueError(f"the GLSL vadd takes a multiple of 1024 elements, got {n}")
    fmt = image_format("rgba32f")
    views = [texel_view(X.buffer, fmt) for X in (A, B)]
    texel = all(v is not None for v in views)
    wide = "int64" in dev.info.features
    kinds = ("uniform_texel_buffer",) * 2 if texel else ("storage",) * 2
    pipe = runtime.get_pipeline(dev, compile_glsl(vadd_glsl(texel, wide)), "main", (0, 1, 2), 0,
                                descriptor_types=(*kinds, "storage"))
    resources = [*views, C.buffer] if texel else [A.buffer, B.buffer, C.buffer]
    form = f"{'texel' if texel else 'storage'} reads, {'u64vec4' if wide else 'vec4'} stores"
    return pipe, resources, (n // 1024, 1, 1), form


SUM_PARTS = 512   # partial sums of the GLSL sum's first pass


def sum_glsl(texel: bool, steps: int) -> str:
    """The first pass of the best hand-written GLSL sum measured (vkir.ops.sum's form): 8
    invocations per workgroup, each summing one contiguous run of `steps` x 4 vec4 of x in
    four vec4 accumulators, read through an rgba32f texel buffer (`texel`) or as storage vec4,
    and writing one partial sum."""
    if texel:
        decl = "layout(binding = 0) uniform samplerBuffer X;\n"
        ld = (lambda e: f"texelFetch(X, int({e}))")
    else:
        decl = "layout(std430, binding = 0) readonly buffer X_ { vec4 x[]; };\n"
        ld = (lambda e: f"x[{e}]")
    adds = " ".join(f"s{u} += {ld(f'i + {u}u')};" for u in range(4))
    return ("#version 450\nlayout(local_size_x = 8) in;\n" + decl +
            "layout(std430, binding = 1) writeonly buffer P_ { float p[]; };\n"
            "void main() {\n    uint g = gl_GlobalInvocationID.x;\n"
            "    vec4 s0 = vec4(0), s1 = vec4(0), s2 = vec4(0), s3 = vec4(0);\n"
            f"    for (uint s = 0u; s < {steps}u; ++s) {{\n"
            f"        uint i = (g * {steps}u + s) * 4u;\n        {adds}\n    }}\n"
            "    vec4 t = (s0 + s1) + (s2 + s3);\n    p[g] = (t.x + t.y) + (t.z + t.w);\n}\n")


def sum_launch(dev, X, P, n: int):
    """(pipeline, resources, groups, form) of `sum_glsl`'s pass over n float32 (a multiple of
    16 * SUM_PARTS) of DeviceArray X into the SUM_PARTS partials of P: texel reads where an
    rgba32f view of X can be made."""
    from vkir import runtime
    from vkir.images import image_format
    from vkir.runtime.buffer_texels import texel_view
    from vkir.runtime.glsl import compile_glsl

    if n % (16 * SUM_PARTS):
        raise ValueError(f"the GLSL sum takes a multiple of {16 * SUM_PARTS} elements, got {n}")
    view = texel_view(X.buffer, image_format("rgba32f"))
    texel = view is not None
    words = compile_glsl(sum_glsl(texel, n // (16 * SUM_PARTS)))
    pipe = runtime.get_pipeline(dev, words, "main", (0, 1), 0, descriptor_types=(
        "uniform_texel_buffer" if texel else "storage", "storage"))
    resources = [view if texel else X.buffer, P.buffer]
    return pipe, resources, (SUM_PARTS // 8, 1, 1), "texel" if texel else "storage"


SUM_FORMS = (dict(lanes=512, w=8, v=4, u=4, layout="range"),
             dict(lanes=256, w=8, v=4, u=4, layout="range"),
             dict(lanes=512, w=8, v=4, u=8, layout="range"),
             dict(lanes=2048, w=64, v=4, u=4, layout="range"),
             dict(lanes=8192, w=64, v=4, u=4, layout="range"),
             dict(lanes=512, w=8, v=8, u=2, layout="range"),
             dict(lanes=512, w=64, v=4), dict(lanes=512, w=64, v=1))


def sum_forms(vkir, dev, repeat, n=1 << 24):
    """The first pass of vkir.ops.sum on 2^24 float32 (vkir.ops.reduce.rows_kernel: P parts,
    each one invocation's contiguous run or interleaved slice, `u` accumulators of `v` lanes)
    in several forms, beside numpy's x.sum(), per CPU-second: float32x4 loads (whole-texel
    fetches on lavapipe, the parameter retyped) against uint64x4 loads through a pointer cast
    (v=8: storage reads), few long runs against many short ones."""
    from vkir.ops.reduce import rows_kernel

    from .host_numpy import timed_calls

    x = np.random.default_rng(0).random(n, dtype=np.float32)
    X = vkir.array(x, dev).reshape(1, n)
    want = float(x.astype(np.float64).sum())
    for config in SUM_FORMS:
        if config.get("v") == 8 and "int64" not in dev.info.features:
            print(f"sum {config} not run: uint64x4 loads need shaderInt64")
            continue
        k = vkir.build(rows_kernel.fn(1, n, op="sum", **config), device=dev)
        parts = k.func.buffer_map[k.func.params[1]].shape[1].value
        Y = vkir.empty((1, parts), "float32", dev)
        k(X, Y)
        got = float(Y.numpy().astype(np.float64).sum())
        assert abs(got - want) <= 1e-5 * want, (config, got, want)
        vc, nc = [], []
        for _ in range(repeat):   # alternating, so a change of load falls on both
            vc += timed_calls(lambda: k(X, Y), 1, warmup=0)[1]
            nc += timed_calls(x.sum, 1, warmup=0)[1]
        v_cpu, n_cpu = 4 * n / np.median(vc) / 1e9, 4 * n / np.median(nc) / 1e9
        print(f"sum {str(config):58s} {parts:6d} parts {v_cpu:6.2f} GB/CPU-s   numpy "
              f"{n_cpu:6.2f} GB/CPU-s   ratio per CPU-s {v_cpu / n_cpu:.2f}", flush=True)


def matmul_glsl(tm, tn4, wx, n, texel):
    """C = A @ B (n x n float32): each invocation a `tm` x 4*`tn4` register tile of vec4
    accumulators, columns interleaved by `wx` invocations, A read as vec4 over k (k unrolled by
    4), everything unrolled in the source; A and B as storage buffers or rgba32f texel buffers."""
    k4 = n4 = n // 4
    if texel:
        decl = "layout(binding = 0) uniform samplerBuffer A;\nlayout(binding = 1) uniform samplerBuffer B;"
        ld_a, ld_b = (lambda e: f"texelFetch(A, int({e}))"), (lambda e: f"texelFetch(B, int({e}))")
    else:
        decl = ("layout(std430, binding = 0) readonly buffer A_ { vec4 a[]; };\n"
                "layout(std430, binding = 1) readonly buffer B_ { vec4 b[]; };")
        ld_a, ld_b = (lambda e: f"a[{e}]"), (lambda e: f"b[{e}]")
    lines = ["#version 450", f"layout(local_size_x = {wx}) in;", decl,
             "layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };", "void main() {",
             f"    uint row0 = gl_WorkGroupID.y * {tm};",
             f"    uint col0 = gl_WorkGroupID.x * {wx * tn4} + gl_LocalInvocationID.x;"]
    tiles = [(i, t) for i in range(tm) for t in range(tn4)]
    lines += [f"    vec4 c{i}_{t} = vec4(0);" for i, t in tiles]
    lines.append(f"    for (uint k4 = 0; k4 < {k4}; ++k4) {{")
    lines += [f"        vec4 a{i} = {ld_a(f'(row0 + {i}) * {k4} + k4')};" for i in range(tm)]
    for kk in range(4):
        lines += [f"        vec4 b{t}_{kk} = {ld_b(f'(k4 * 4 + {kk}) * {n4} + col0 + {t * wx}')};"
                  for t in range(tn4)]
        lines += [f"        c{i}_{t} = fma(vec4(a{i}[{kk}]), b{t}_{kk}, c{i}_{t});" for i, t in tiles]
    lines.append("    }")
    lines += [f"    c[(row0 + {i}) * {n4} + col0 + {t * wx}] = c{i}_{t};" for i, t in tiles]
    return "\n".join(lines + ["}"])


def _fma_peak_glsl(nacc, typ="vec4"):
    decl = "\n".join(f"    {typ} c{i} = {typ}({i}) * m;" for i in range(nacc))
    body = " ".join(f"c{i} = fma(c{i}, m, d);" for i in range(nacc))
    return ("#version 450\nlayout(local_size_x = 64) in;\n"
            f"layout(std430, binding = 0) buffer O {{ {typ} o[]; }};\nvoid main() {{\n"
            f"    {typ} m = o[gl_GlobalInvocationID.x], d = m * 0.5;\n" + decl +
            f"\n    for (uint k = 0; k < 4096u; ++k) {{ {body} {body} {body} {body} }}\n"
            f"    o[gl_GlobalInvocationID.x] = {' + '.join(f'c{i}' for i in range(nacc))};\n}}")


_BROADCAST_HEAD = """#version 450
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer O { vec4 o[]; };
void main() {
    vec4 x = o[gl_GlobalInvocationID.x], acc = vec4(0);
    for (uint k = 0; k < 1024u; ++k) { BODY }
    o[gl_GlobalInvocationID.x] = acc;
}
"""

# eight operations per loop iteration; the lane of each broadcast is a constant
BROADCASTS = {
    "vec4 fma, dependent chain": " ".join(f"acc = fma(acc, x, vec4({i}.5));" for i in range(8)),
    "vec4 component splat": " ".join(f"acc += vec4(x[{i % 4}]);" for i in range(8)),
    "subgroupBroadcast float": " ".join(f"acc.x += subgroupBroadcast(x.y, {i});" for i in range(8)),
    "subgroupBroadcast vec4": " ".join(f"acc += subgroupBroadcast(x, {i});" for i in range(8)),
}


def broadcast(vkir, dev, repeat):
    """Nanoseconds per invocation and operation of a subgroup broadcast from a constant lane,
    beside a chain of dependent vec4 FMAs and a component splat (64 x 64 invocations, 1024 x 8 operations each):
    whether sharing loaded values across a subgroup's lanes is cheaper than loading them."""
    O = vkir.array(np.ones(64 * 64 * 4, np.float32), dev)
    print(f"{'operation':32s} {'ns/invocation-operation':>24s}")
    for name, body in BROADCASTS.items():
        k = vkir.compile_glsl(_BROADCAST_HEAD.replace("BODY", body), device=dev)
        t = min(k.profile(O, grid=(64, 1, 1), repeat=3, warmup=1).median for _ in range(repeat))
        print(f"{name:32s} {t / (64 * 64 * 1024 * 8) * 1e9:24.3f}", flush=True)


def matmul_broadcast_glsl(tm, tn4, n):
    """C = A @ B (n x n float32, rgba32f texel buffers) with subgroup broadcasts (subgroups of
    8): each lane owns `tm` rows (8 apart) of `tn4` vec4 columns that all lanes share; per 8
    steps of k each lane fetches its rows' A as two vec4s and one row of B per vec4 column, and
    the B rows reach the other lanes by subgroupBroadcast from constant lanes."""
    n4 = n // 4
    lines = ["#version 450", "#extension GL_KHR_shader_subgroup_ballot : require",
             "layout(local_size_x = 64) in;",
             "layout(binding = 0) uniform samplerBuffer A;\nlayout(binding = 1) uniform samplerBuffer B;",
             "layout(std430, binding = 2) writeonly buffer C { vec4 c[]; };", "void main() {",
             "    uint lane = gl_SubgroupInvocationID, sg = gl_SubgroupID;",
             f"    uint row0 = gl_WorkGroupID.y * {8 * tm} + lane;",
             f"    uint col0 = (gl_WorkGroupID.x * 8 + sg) * {tn4};"]
    tiles = [(i, t) for i in range(tm) for t in range(tn4)]
    lines += [f"    vec4 c{i}_{t} = vec4(0);" for i, t in tiles]
    lines.append(f"    for (uint k0 = 0; k0 < {n}u; k0 += 8u) {{")
    for i in range(tm):
        lines += [f"        vec4 al{i} = texelFetch(A, int((row0 + {8 * i}) * {n4} + k0 / 4));",
                  f"        vec4 ah{i} = texelFetch(A, int((row0 + {8 * i}) * {n4} + k0 / 4 + 1));"]
    lines += [f"        vec4 bl{t} = texelFetch(B, int((k0 + lane) * {n4} + col0 + {t}));"
              for t in range(tn4)]
    for kk in range(8):
        lines += [f"        vec4 b{t}_{kk} = subgroupBroadcast(bl{t}, {kk});" for t in range(tn4)]
        half = "al" if kk < 4 else "ah"
        lines += [f"        c{i}_{t} = fma(vec4({half}{i}[{kk % 4}]), b{t}_{kk}, c{i}_{t});"
                  for i, t in tiles]
    lines.append("    }")
    lines += [f"    c[(row0 + {8 * i}) * {n4} + col0 + {t}] = c{i}_{t};" for i, t in tiles]
    return "\n".join(lines + ["}"])


def matmul(vkir, dev, repeat, n=1024, configs=((8, 2, 8), (8, 1, 8), (4, 2, 8)),
           broadcast_configs=((3, 2), (4, 1))):
    """1024^3 float32 matmul: vkir.ops.matmul's template (its first "cpu" config), the GLSL
    register tiles on storage buffers and on texel buffers, and (lavapipe) tiles whose B rows
    are shared by subgroup broadcasts."""
    from vkir.ops import matmul as op

    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    want = a @ b
    A, B, C = vkir.array(a, dev), vkir.array(b, dev), vkir.empty((n, n), "float32", dev)
    runs = {}
    first = op.kernel.configs_for(dev.info)[0]
    tk = vkir.build(op.kernel(M=n, N=n, K=n, **first), device=dev)
    runs[f"vkir template {first}"] = (tk, (A, B, C), {})
    for tm, tn4, wx in configs:
        grid = {"grid": (n // (wx * tn4 * 4), n // tm, 1)}
        runs[f"glsl ssbo {tm}x{4 * tn4} wg{wx}"] = (
            vkir.compile_glsl(matmul_glsl(tm, tn4, wx, n, False), device=dev), (A, B, C), grid)
        runs[f"glsl texel {tm}x{4 * tn4} wg{wx}"] = (
            vkir.compile_glsl(matmul_glsl(tm, tn4, wx, n, True), device=dev),
            (a.reshape(-1, 4), b.reshape(-1, 4), C), grid)
    if _lavapipe(dev):   # subgroups of 8 (SwiftShader's are 4)
        for tm, tn4 in broadcast_configs:
            runs[f"glsl texel broadcast {8 * tm}x{4 * tn4}"] = (
                vkir.compile_glsl(matmul_broadcast_glsl(tm, tn4, n), device=dev),
                (a.reshape(-1, 4), b.reshape(-1, 4), C),
                {"grid": (n // (32 * tn4), n // (8 * tm), 1)})
    for name, (k, args, kw) in runs.items():
        try:
            k(*args, **kw)
        except UnsupportedError as exc:   # SwiftShader: 65536 texels per texel buffer
            print(f"matmul {name:40s} not run: {exc}")
            continue
        err = float(np.abs(C.numpy() - want).max())
        assert err < 1e-2, (name, err)
        v, t, r = _paired(lambda: k.profile(*args, repeat=1, warmup=0, **kw).median,
                          lambda: a @ b, repeat)
        print(f"matmul {name:40s} {v * 1e3:7.1f} ms {2 * n ** 3 / v / 1e9:6.1f} GFLOP/s   numpy "
              f"{2 * n ** 3 / t / 1e9:6.1f}   numpy/shader time {r:.3f}", flush=True)


def peak(vkir, dev, repeat, n=1024):
    """Register-only FMAs (no loads) with scalar or vec4 accumulators of several counts: the
    driver's arithmetic ceiling, beside numpy's matmul (the most accumulators that still fit
    the CPU's registers win)."""
    a = np.random.default_rng(0).random((n, n), dtype=np.float32)
    for typ, lanes, counts in (("float", 1, (4, 8, 12)), ("vec4", 4, (4, 8, 16))):
        O = vkir.array(np.ones(64 * 64 * lanes, np.float32), dev)
        for nacc in counts:
            k = vkir.compile_glsl(_fma_peak_glsl(nacc, typ), device=dev)
            flops = 64 * 64 * 4096 * 4 * nacc * lanes * 2
            v, t, r = _paired(lambda: k.profile(O, grid=(64, 1, 1), repeat=1, warmup=0).median,
                              lambda: a @ a, repeat)
            print(f"fma ceiling, {nacc:2d} {typ} accumulators: {flops / v / 1e9:6.1f} GFLOP/s   "
                  f"numpy matmul {2 * n ** 3 / t / 1e9:6.1f}   ratio {(flops / v) / (2 * n ** 3 / t):.2f}",
                  flush=True)


def main(argv=None):
    import vkir

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parts = ["loads", "broadcast", "vadd", "vadd_layouts", "vadd_split", "sum_forms", "peak",
             "matmul"]
    parser.add_argument("parts", nargs="*", default=parts, choices=parts)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    dev = vkir.device()
    print(f"device: {dev.info.name}")
    for part in args.parts:
        globals()[part](vkir, dev, args.repeat)


if __name__ == "__main__":
    main()
