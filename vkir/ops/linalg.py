"""Matrix multiplication: `vkir.ops.matmul(a, b, bias=None, activation=None, trans_a=False,
trans_b=False)` for 2-d and batched 3-d float32 inputs, and its kernel template `kernel`.

The schedule is register tiling: each invocation computes a `tm` x `tn` tile of C kept in a local
buffer (registers), reading a row strip of B as float32x4 vectors and one scalar of A per tile
row for every step of k, so each loaded value feeds `tn` (or `tm`) multiply-adds. `wx` x `wy`
invocations form a workgroup; no shared memory (on CPU devices barriers cost more than the
reuse they buy, and the tile already reuses every load).

The epilogue (bias, ReLU, clipping) is written unfused, as a reduction into a tile followed by an
elementwise nest, and fused exactly by `vkir.schedule.fuse_reduction_epilogue`; `distribute_tile`
then moves the reduction loop outside the tile loops.
"""

from __future__ import annotations

from ..autotuning import autotune
from ..errors import ArgumentError
from ..script import from_script
from ..transform import Simplify
from ._common import Call, check_positive, distribute_tile

_TEMPLATE = '''
@T.prim_func
def matmul({params}):
    for bz in T.thread_binding(BATCH, "blockIdx.z"):
        for by in T.thread_binding((M + BM - 1) // BM, "blockIdx.y"):
            for bx in T.thread_binding((N + BN - 1) // BN, "blockIdx.x"):
                for ty in T.thread_binding(WY, "threadIdx.y"):
                    for tx in T.thread_binding(WX, "threadIdx.x"):
                        out = T.alloc_buffer((TM, TN), "float32", scope="local")
{reduction}
                        for i in T.unroll(TM):
                            for j0 in T.unroll(TN // V):
                                for j in T.vectorized(V):
{store}
'''

# the reduction into `out` (no epilogue) or into `temp` followed by the epilogue nest
_REDUCE = '''\
                        for i in T.unroll(TM, annotations={{"register_tile": 1}}):
                            for j0 in T.unroll(TN // V):
                                for j in T.vectorized(V):
                                    {acc}[i, j0 * V + j] = {init}
                                    for k in T.serial(K):
                                        {acc}[i, j0 * V + j] = {acc}[i, j0 * V + j] + {a} * {b}
'''
_EPILOGUE = '''\
                        for i in T.unroll(TM, annotations={{"register_tile": 1}}):
                            for j0 in T.unroll(TN // V):
                                for j in T.vectorized(V):
                                    out[i, j0 * V + j] = {value}
'''


def _index(batched: bool, *idx: str) -> str:
    return ", ".join(("bz",) + idx if batched else idx)


@autotune(configs={
    # CPU devices (lavapipe: one host thread per workgroup, 8-wide SIMD): large register tiles;
    # first A read as float32x4 along k (vkir.ops.linalg_k4), as the GLSL texel tile does:
    # 1.5x the best plain tile per CPU-second on lavapipe at 1024, 4x on SwiftShader at 256;
    # 32 x 8 is its best tile on lavapipe at 1024 and 2048 (0.44 and 0.43 of the FMA ceiling,
    # 16 x 8 0.42 and 0.39, 16 x 16 0.27 at 2048: more accumulators than the stack keeps fast);
    # SwiftShader (4 lanes) at 512 prefers 16 x 16 and 32 x 16 in 4 x 1 workgroups (0.18 of its
    # ceiling, 16 x 8 0.16; with texel reads 0.24-0.26, the GLSL texel tile 0.23)
    "cpu": [dict(tm=32, tn=8, wx=8, wy=1, ka=4), dict(tm=16, tn=8, wx=8, wy=1, ka=4),
            dict(tm=8, tn=8, wx=8, wy=1, ka=4), dict(tm=16, tn=16, wx=4, wy=1, ka=4),
            dict(tm=32, tn=16, wx=4, wy=1, ka=4),
            dict(tm=8, tn=8, wx=8, wy=8, ka=4), dict(tm=4, tn=8, wx=8, wy=8, ka=4),
            dict(tm=16, tn=16, wx=16, wy=1), dict(tm=16, tn=32, wx=8, wy=1),
            dict(tm=8, tn=16, wx=16, wy=1), dict(tm=8, tn=16, wx=8, wy=8),
            dict(tm=8, tn=16, wx=8, wy=4), dict(tm=16, tn=8, wx=8, wy=4),
            dict(tm=16, tn=16, wx=8, wy=2), dict(tm=8, tn=8, wx=8, wy=8),
            dict(tm=4, tn=16, wx=8, wy=8), dict(tm=8, tn=16, wx=4, wy=8),
            dict(tm=4, tn=32, wx=8, wy=8), dict(tm=1, tn=1, wx=8, wy=8, v=1)],
    # discrete GPUs: more invocations per workgroup, smaller tiles per invocation
    "nvidia": [dict(tm=4, tn=8, wx=16, wy=8), dict(tm=8, tn=8, wx=16, wy=16),
               dict(tm=4, tn=4, wx=16, wy=16), dict(tm=1, tn=1, wx=16, wy=16, v=1)],
    "amd": [dict(tm=4, tn=8, wx=16, wy=4), dict(tm=8, tn=8, wx=8, wy=8),
            dict(tm=4, tn=4, wx=16, wy=16), dict(tm=1, tn=1, wx=16, wy=16, v=1)],
    "default": [dict(tm=4, tn=8, wx=8, wy=8), dict(tm=4, tn=4, wx=16, wy=16),
                dict(tm=1, tn=1, wx=16, wy=16, v=1), dict(tm=4, tn=8, wx=8, wy=8, ka=4)],
}, key=("M", "N", "K", "batch", "trans_a", "trans_b", "bias", "activation"),
   helpers=("vkir.ops.linalg_k4",))
def kernel(M, N, K, batch=None, trans_a=False, trans_b=False, bias=None, activation=None,
           tm=8, tn=16, wx=8, wy=4, v=4, ka=1):
    """The matmul PrimFunc C = act(A @ B + bias) for these shapes and schedule.

    Shapes: A (M, K) or (K, M) with `trans_a`, B (K, N) or (N, K) with `trans_b`, C (M, N); a
    leading `batch` dim on all three when `batch` is an int. `bias`: None, "n" (shape (N,)) or
    "mn" (shape (M, N), or (batch, M, N)). `activation`: None, "relu" or ("clip", lo, hi).
    Schedule: each invocation computes a `tm` x `tn` tile (`tn` a multiple of the vector width
    `v`), `wx` x `wy` invocations per workgroup. Sizes that the tile does not divide are handled
    with clamped loads and guarded stores. `ka=4`: A read as float32x4 along k, four k per
    step (vkir.ops.linalg_k4; plain operands and whole tiles only)."""
    check_positive("matmul kernel", M=M, N=N, K=K, tm=tm, tn=tn, wx=wx, wy=wy, v=v)
    if v not in (1, 2, 4) or tn % v:
        raise ArgumentError(f"matmul kernel: tn={tn} must be a multiple of the vector width "
                            f"v={v} (1, 2 or 4)")
    if ka not in (1, 4):
        raise ArgumentError(f"matmul kernel: ka must be 1 or 4, got {ka!r}")
    if ka == 4:
        from .linalg_k4 import kernel_k4

        if v > 1 and N % v:
            raise ArgumentError(f"matmul kernel: N={N} is not a multiple of the vector width {v}")
        return kernel_k4(M, N, K, batch, trans_a, trans_b, bias, activation, tm, tn, wx, wy, v)
    if v > 1 and N % v:
        raise ArgumentError(f"matmul kernel: N={N} is not a multiple of the vector width {v}")
    if bias not in (None, "n", "mn"):
        raise ArgumentError(f"matmul kernel: bias must be None, 'n' or 'mn', got {bias!r}")
    batched = batch is not None
    BM, BN = tm * wy, tn * wx
    guard = M % BM != 0 or N % BN != 0
    row, col = "(by * WY + ty) * TM + i", "(bx * WX + tx) * TN + j0 * V + j"
    r = f"T.min({row}, M - 1)" if guard else row
    c = f"T.min({col}, N - 1)" if guard else col
    a = f"A[{_index(batched, 'k', r) if trans_a else _index(batched, r, 'k')}]"
    b = f"B[{_index(batched, c, 'k') if trans_b else _index(batched, 'k', c)}]"
    shape = (lambda *d: "(" + ", ".join(("BATCH",) + d if batched else d) + ",)")
    params = [f"A: T.Buffer({shape('K', 'M') if trans_a else shape('M', 'K')}, \"float32\")",
              f"B: T.Buffer({shape('N', 'K') if trans_b else shape('K', 'N')}, \"float32\")"]
    bias_value = None
    if bias == "n":
        params.append('bias: T.Buffer((N,), "float32")')
        bias_value = f"bias[{c}]"
    elif bias == "mn":
        params.append(f'bias: T.Buffer({shape("M", "N")}, "float32")')
        bias_value = f"bias[{_index(batched, r, c)}]"
    params.append(f'C: T.Buffer({shape("M", "N")}, "float32")')

    act = _activation(activation)
    zero = "T.float32(0)"
    if act is None and bias_value is None:
        reduction = _REDUCE.format(acc="out", init=zero, a=a, b=b)
    else:
        # the unfused form: reduce into `temp`, then the elementwise epilogue into `out`; a
        # clipping epilogue after a bias takes the bias as the reduction's initial value (what
        # the fusion itself does for a bias), so the epilogue is a clip of the result
        init = bias_value if (bias_value is not None and act and act[0] == "clip") else zero
        x = "temp[i, j0 * V + j]"
        if bias_value is not None and init == zero:
            x = f"{x} + {bias_value}"
        if act is None:
            value = x
        elif act[0] == "relu":
            value = f"T.max({x}, T.float32(0))"
        else:
            value = f"T.min(T.max({x}, T.float32({act[1]!r})), T.float32({act[2]!r}))"
        reduction = ('                        temp = T.alloc_buffer((TM, TN), "float32", '
                     'scope="local")\n' + _REDUCE.format(acc="temp", init=init, a=a, b=b)
                     + _EPILOGUE.format(value=value))
    store = f"C[{_index(batched, row, col)}] = out[i, j0 * V + j]"
    if guard:
        store = f"if {row} < M and {col} < N:\n" + " " * 40 + store
    text = _TEMPLATE.format(params=", ".join(params), reduction=reduction.rstrip("\n"),
                            store=" " * 36 + store)
    env = dict(M=M, N=N, K=K, BATCH=batch or 1, TM=tm, TN=tn, WX=wx, WY=wy, V=v, BM=BM, BN=BN)
    func = from_script(text, env=env, file="<vkir.ops.matmul>")
    if act is not None or bias_value is not None:
        from ..schedule import fuse_reduction_epilogue

        func = fuse_reduction_epilogue(Simplify()(func), "temp")
    return distribute_tile(func)


def _activation(activation):
    """None, ("relu",) or ("clip", lo, hi) from the user's spelling."""
    if activation is None:
        return None
    if activation == "relu":
        return ("relu",)
    if isinstance(activation, (tuple, list)) and len(activation) == 3 and activation[0] == "clip":
        lo, hi = float(activation[1]), float(activation[2])
        if not lo <= hi:
            raise ArgumentError(f"matmul: clip bounds must satisfy lo <= hi, got {lo}, {hi}")
        return ("clip", lo, hi)
    raise ArgumentError(f"matmul: activation must be None, 'relu' or ('clip', lo, hi), "
                        f"got {activation!r}")


def matmul(a, b, bias=None, activation=None, trans_a=False, trans_b=False, device=None,
           out=None):
    """act(a @ b + bias) for float32 matrices (2-d) or stacks of matrices (3-d, same batch),
    with `a` (or `b`) given transposed when `trans_a` (`trans_b`). `bias` has shape (N,) or the
    result's shape; `activation` is None, "relu" or ("clip", lo, hi), applied once to the full
    sum. Returns a DeviceArray when any input is one, else a numpy array."""
    call = Call("matmul", {"a": a, "b": b, "bias": bias}, device, out)
    A, B = call.arrays["a"], call.arrays["b"]
    if A.ndim != B.ndim or A.ndim not in (2, 3):
        raise ArgumentError(f"matmul: a and b must both be 2-d or both 3-d, got shapes "
                            f"{list(A.shape)} and {list(B.shape)}")
    batch = A.shape[0] if A.ndim == 3 else None
    if batch is not None and B.shape[0] != batch:
        raise ArgumentError(f"matmul: batch sizes differ ({A.shape[0]} and {B.shape[0]})")
    K, M = A.shape[-2:] if trans_a else A.shape[-2:][::-1]
    N, Kb = B.shape[-2:] if trans_b else B.shape[-2:][::-1]
    if K != Kb:
        raise ArgumentError(f"matmul: inner dimensions differ: a gives K={K}, b gives K={Kb} "
                            f"(shapes {list(A.shape)}, {list(B.shape)}, trans_a={trans_a}, "
                            f"trans_b={trans_b})")
    c_shape = (M, N) if batch is None else (batch, M, N)
    bias_kind = None
    if bias is not None:
        bshape = tuple(call.arrays["bias"].shape)
        if bshape == (N,):
            bias_kind = "n"
        elif bshape == c_shape:
            bias_kind = "mn"
        else:
            raise ArgumentError(f"matmul: bias shape {list(bshape)} is neither (N,) = [{N}] nor "
                                f"the result's {list(c_shape)}")
    act = _activation(activation)
    act_key = None if act is None else (act[0] if act[0] == "relu" else list(act))
    k = kernel.kernel(call.device, M=M, N=N, K=K, batch=batch, trans_a=bool(trans_a),
                      trans_b=bool(trans_b), bias=bias_kind, activation=act_key)
    C = call.result(c_shape)
    args = [call.device_array("a"), call.device_array("b")]
    if bias_kind is not None:
        args.append(call.device_array("bias"))
    k(*args, C)
    return call.finish(C)


matmul.kernel = kernel
