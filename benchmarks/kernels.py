"""The vkir kernels the benchmarks run, written as T.prim_func scripts. Each mirrors the
algorithm of its GLSL reference in shaders/ so the vkir/GLSL ratio compares code generation,
not algorithms."""

from vkir import T
from vkir.examples.demo_kernels import VADD_SOURCE, block_sum, matmul  # noqa: F401  (the demo's)


@T.prim_func
def vadd4(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32"),
          c: T.Buffer(("n",), "float32")):
    # grid-stride, as shaders/vadd.comp is dispatched: (n + 1023) // 1024 workgroups of 256
    # threads (2^24 elements fit the 65535-workgroup limit); thread g adds elements g,
    # g + stride, g + 2 * stride and g + 3 * stride, stride = 256 * workgroups (>= n / 4)
    for bx in T.thread_binding((n + 1023) // 1024, "blockIdx.x"):
        for tx in T.thread_binding(256, "threadIdx.x"):
            for k in T.serial(4):
                i = k * ((n + 1023) // 1024 * 256) + bx * 256 + tx
                if i < n:
                    c[i] = a[i] + b[i]


@T.func
def add_elements(x: T.float32, y: T.float32) -> T.float32:
    # the `vkir bench` map workload's function: vkir.map(add_elements) is a vadd
    return x + y


@T.prim_func
def softmax(x: T.Buffer(("rows", "cols"), "float32"), y: T.Buffer(("rows", "cols"), "float32")):
    # one workgroup of 256 threads per row; max and sum of exp reduced in shared memory
    for r in T.thread_binding(rows, "blockIdx.x"):
        s = T.alloc_buffer((256,), "float32", scope="shared")
        for tx in T.thread_binding(256, "threadIdx.x"):
            acc = T.alloc_buffer((1,), "float32", scope="local")
            mx = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = T.float32(-3.4028234663852886e38)
            for j in T.serial((cols + 255) // 256):
                c = j * 256 + tx
                if c < cols:
                    acc[0] = T.max(acc[0], x[r, c])
            s[tx] = acc[0]
            T.barrier()
            for level in T.unroll(8):
                stride = 128 >> level
                if tx < stride:
                    s[tx] = T.max(s[tx], s[tx + stride])
                T.barrier()
            mx[0] = s[0]
            T.barrier()
            acc[0] = T.float32(0)
            for j in T.serial((cols + 255) // 256):
                c = j * 256 + tx
                if c < cols:
                    acc[0] = acc[0] + T.exp(x[r, c] - mx[0])
            s[tx] = acc[0]
            T.barrier()
            for level in T.unroll(8):
                stride = 128 >> level
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.barrier()
            inv = T.float32(1) / s[0]
            for j in T.serial((cols + 255) // 256):
                c = j * 256 + tx
                if c < cols:
                    y[r, c] = T.exp(x[r, c] - mx[0]) * inv


@T.prim_func
def noop(a: T.Buffer((1,), "float32")):
    # one invocation that does nothing: dispatch round-trip latency
    for bx in T.thread_binding(1, "blockIdx.x"):
        for tx in T.thread_binding(1, "threadIdx.x"):
            T.evaluate(0)


def add_template(n, w=64, vpt=4, layout="interleave", groups=256, v=4):
    """The tuned vadd ("vkir" in the benchmark): c = a + b on `n` float32 (a multiple of 4),
    `w` invocations per workgroup. Layout "interleave": each invocation adds `vpt` float32x4
    vectors, consecutive invocations on consecutive vectors, as many workgroups as needed.
    Layout "range": `groups` workgroups, each invocation adding one contiguous run of vectors,
    `vpt` per loop step (a memory stream per invocation and few workgroups: on CPU devices every
    workgroup costs a scheduling step). With `v=8` ("range" only) a vector is eight float32,
    loaded and stored as one uint64x4 through explicit pointer casts (`T.decl_buffer`) and
    added as two float32x4 halves: lavapipe pays a loop over its SIMD lanes per load or store
    whatever its width, so 32-byte accesses cost least per element (emulated in word pairs
    without shaderInt64: slower there).
    Layout "chunk": each invocation adds `vpt` consecutive vectors (one contiguous run of
    `vpt * v` elements), as many workgroups of `w` as needed, no loop; with `v=8` it reads
    float32x4 halves (texel fetches on lavapipe) and writes one uint64x4 through a pointer cast
    of c only: on lavapipe, where stores cost a loop over the SIMD lanes per 32 or 64-bit
    component, this is the fastest vadd measured (benchmarks.access_forms vadd_layouts)."""
    from vkir.errors import ArgumentError
    from vkir.script import from_script

    if n % v or v not in (4, 8):
        raise ArgumentError(f"add template: v={v} must be 4 or 8 and divide n={n}")
    if v == 8 and layout not in ("range", "chunk"):
        raise ArgumentError("add template: v=8 takes the range or chunk layout")
    if layout == "chunk":
        text = _ADD_CHUNK_WIDE if v == 8 else _ADD_CHUNK
        return from_script(text, env=dict(N=n, W=w, VPT=vpt, NV=n // v), file="<benchmarks add>")
    if layout == "range":
        if (n // v) % (groups * w * vpt):
            raise ArgumentError(f"add template: {n // v} vectors do not split into "
                                f"{groups * w} runs of whole {vpt}-vector steps")
        steps = n // v // (groups * w * vpt)
        if v == 8:
            return from_script(_ADD_WIDE, env=dict(N=n, W=w, VPT=vpt, G=groups, STEPS=steps),
                               file="<benchmarks add>")
        text = '''
@T.prim_func
def add(a: T.Buffer((N,), "float32"), b: T.Buffer((N,), "float32"), c: T.Buffer((N,), "float32")):
    for bx in T.thread_binding(G, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            for s in T.serial(STEPS):
                for u in T.unroll(VPT):
                    for v in T.vectorized(4):
                        c[(((bx * W + tx) * STEPS + s) * VPT + u) * 4 + v] = a[(((bx * W + tx) * STEPS + s) * VPT + u) * 4 + v] + b[(((bx * W + tx) * STEPS + s) * VPT + u) * 4 + v]
'''
        env = dict(N=n, W=w, VPT=vpt, G=groups, STEPS=steps)
        return from_script(text, env=env, file="<benchmarks add>")
    text = '''
@T.prim_func
def add(a: T.Buffer((N,), "float32"), b: T.Buffer((N,), "float32"), c: T.Buffer((N,), "float32")):
    for bx in T.thread_binding((N // 4 + W * VPT - 1) // (W * VPT), "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            for u in T.unroll(VPT):
                if (bx * VPT + u) * W + tx < N // 4:
                    for v in T.vectorized(4):
                        c[((bx * VPT + u) * W + tx) * 4 + v] = a[((bx * VPT + u) * W + tx) * 4 + v] + b[((bx * VPT + u) * W + tx) * 4 + v]
'''
    return from_script(text, env=dict(N=n, W=w, VPT=vpt), file="<benchmarks add>")


_ADD_WIDE = '''
@T.prim_func
def add(a: T.Buffer((N,), "float32"), b: T.Buffer((N,), "float32"), c: T.Buffer((N,), "float32")):
    aw = T.decl_buffer((N // 8,), "uint64x4", data=a.data)
    bw = T.decl_buffer((N // 8,), "uint64x4", data=b.data)
    cw = T.decl_buffer((N // 8,), "uint64x4", data=c.data)
    for bx in T.thread_binding(G, "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            for s in T.serial(STEPS):
                for u in T.unroll(VPT):
                    i = ((bx * W + tx) * STEPS + s) * VPT + u
                    x = aw[i]
                    y = bw[i]
                    lo = T.reinterpret(T.shuffle([x], [0, 1]), "float32x4") + T.reinterpret(T.shuffle([y], [0, 1]), "float32x4")
                    hi = T.reinterpret(T.shuffle([x], [2, 3]), "float32x4") + T.reinterpret(T.shuffle([y], [2, 3]), "float32x4")
                    cw[i] = T.shuffle([T.reinterpret(lo, "uint64x2"), T.reinterpret(hi, "uint64x2")], [0, 1, 2, 3])
'''


_ADD_CHUNK = '''
@T.prim_func
def add(a: T.Buffer((N,), "float32"), b: T.Buffer((N,), "float32"), c: T.Buffer((N,), "float32")):
    for bx in T.thread_binding((NV + W * VPT - 1) // (W * VPT), "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            for u in T.unroll(VPT):
                if (bx * W + tx) * VPT + u < NV:
                    for v in T.vectorized(4):
                        c[((bx * W + tx) * VPT + u) * 4 + v] = a[((bx * W + tx) * VPT + u) * 4 + v] + b[((bx * W + tx) * VPT + u) * 4 + v]
'''

_ADD_CHUNK_WIDE = '''
@T.prim_func
def add(a: T.Buffer((N,), "float32"), b: T.Buffer((N,), "float32"), c: T.Buffer((N,), "float32")):
    cw = T.decl_buffer((NV,), "uint64x4", data=c.data)
    for bx in T.thread_binding((NV + W * VPT - 1) // (W * VPT), "blockIdx.x"):
        for tx in T.thread_binding(W, "threadIdx.x"):
            for u in T.unroll(VPT):
                i = (bx * W + tx) * VPT + u
                if i < NV:
                    lo = a[T.ramp(i * 8, 1, 4)] + b[T.ramp(i * 8, 1, 4)]
                    hi = a[T.ramp(i * 8 + 4, 1, 4)] + b[T.ramp(i * 8 + 4, 1, 4)]
                    cw[i] = T.shuffle([T.reinterpret(lo, "uint64x2"), T.reinterpret(hi, "uint64x2")], [0, 1, 2, 3])
'''


def _tuned_add():
    from vkir.autotuning import autotune

    return autotune(configs={"cpu": [dict(w=64, vpt=1, layout="chunk", v=8),
                                     dict(w=64, vpt=2, layout="chunk", v=8),
                                     dict(w=128, vpt=2, layout="chunk", v=8),
                                     dict(w=64, vpt=4, layout="chunk"),
                                     dict(w=8, vpt=4, layout="range", groups=256),
                                     dict(w=8, vpt=4, layout="range", groups=64),
                                     dict(w=8, vpt=2, layout="range", groups=256),
                                     dict(w=64, vpt=4, layout="range", groups=32),
                                     dict(w=256, vpt=4), dict(w=64, vpt=1)],
                             "default": [dict(w=256, vpt=1), dict(w=256, vpt=4)]},
                    key=("n",))(add_template)


add = _tuned_add()
