"""A sweep of vkir's images on the device: does the driver compile each image access of each
format, and does it compute what vkir.interpret (the definition) computes, within what
docs/semantics.md ("Images") lets a device differ?

`python -m benchmarks.image_sweep [--only SUBSTRING ...] [--no-quirks] [--json FILE]` (the device from
VKIR_DEVICE, VKIR_VALIDATION=1 to collect validation messages) runs one case per
    format (vkir.images.formats.FORMATS) x access x shape,
with shapes 1d (7), 2d (3 x 5), 3d (2 x 3 x 4), 1d_layers (3 layers of 5) and 2d_layers (2 layers
of 3 x 4), and accesses
- storage images (T.Image): "read" (stored bit patterns that stress the conversions: 0, the
  type's extremes, float16 denormals, infinities and NaN), "write" (float32 values at unorm8,
  snorm8 and unorm16 half-steps and just beside them, 0, +-1, out-of-range values that the
  format clamps, float16 overflow, denormals, ties and NaN; integers at their type's extremes and
  beyond them; a NaN written to a normalized format and an integer beyond the format's range
  are left out of the comparison, as Vulkan leaves them undefined), "rmw" (read, modify,
  write back), "size" (T.image_size), and for r32ui/r32i "atomic_<op>" (48 invocations on the
  texels);
- textures (T.Texture): "sample_<filter>_<address>_<where>" for nearest and linear (linear not
  for integer formats), each address mode (clamp, repeat, mirror, border with an opaque white
  border), and coordinates at texel centres ("centre"), between them ("between": inside texels for
  nearest, any fraction for linear; layer coordinates at halves included) and beyond the image
  ("outside").
Comparisons: integers and float32/float16 reads exactly; unorm/snorm reads within 1 ulp; writes
of unorm/snorm exactly, except within 1 of the interpreter where the value lies within 1e-3 of a
rounding tie; float16 writes rounded to nearest even or toward zero; linear sampling within
2^-subTexelPrecisionBits of the neighbouring texels' spread per axis, plus half a step of a
normalized format (a device may filter in fixed point) and float32 rounding.
A format the driver lacks must be refused with UnsupportedError naming it ("rejected"); a crash
or anything else is a finding. Cases run in child processes (benchmarks.case_runner); a kernel
is built once per child for all the cases that share its source.
"""

from __future__ import annotations

import zlib

import numpy as np

from benchmarks.case_runner import command_line

SHAPES = {"1d": ((7,), None), "2d": ((3, 5), None), "3d": ((2, 3, 4), None),
          "1d_layers": ((5,), 3), "2d_layers": ((3, 4), 2)}
STORAGE = ("read", "write", "rmw", "size")
ATOMICS = ("add", "sub", "min", "max", "and", "or", "xor")
ADDRESSES = ("clamp", "repeat", "mirror", "border")
WHERE = ("centre", "between", "outside")
M = 48   # sample coordinates per case


def _fmt(name):
    from vkir.images.formats import FORMATS
    return FORMATS[name]


def cases():
    """Every case name: format:access:shape."""
    from vkir.images.formats import ATOMIC_FORMATS, FORMATS

    out = []
    for name, row in FORMATS.items():
        accesses = list(STORAGE)
        if name in ATOMIC_FORMATS:
            accesses += [f"atomic_{op}" for op in ATOMICS]
        for flt in ("nearest", "linear"):
            if flt == "linear" and row.is_integer:
                continue
            accesses += [f"sample_{flt}_{a}_{w}" for a in ADDRESSES for w in WHERE]
        for access in accesses:
            for shape in SHAPES:
                out.append(f"{name}:{access}:{shape}")
    return out


def _extent(shape):
    """(numpy extent with the layer axis first, spatial dims, layers)."""
    dims, layers = SHAPES[shape]
    return ((layers,) if layers else ()) + dims, len(dims), layers


def _decl(kind, fmt, shape):
    dims, layers = SHAPES[shape]
    extra = f", layers={layers}" if layers else ""
    return f'T.{kind}({dims}, "{fmt}"{extra})'


def _index(shape, i="i"):
    ext = _extent(shape)[0]
    parts, stride = [], 1
    for n in reversed(ext):
        parts.append(f"({i} // {stride}) % {n}" if stride > 1 else f"{i} % {n}")
        stride *= n
    return ", ".join(reversed(parts))


def source(case: str) -> str:
    """The T script of one case (the sample cases of one format and shape share one)."""
    name, access, shape = case.split(":")
    row = _fmt(name)
    lane = row.lane_dtype
    ext, dims, layers = _extent(shape)
    n = int(np.prod(ext))
    head = "@T.prim_func\n"
    if access.startswith("sample"):
        k = dims + bool(layers)
        crd = "crd[i]" if k == 1 else f"T.float32x{k}(" + ", ".join(
            f"crd[i * {k} + {j}]" for j in range(k)) + ")"
        return head + (
            f"def sweep(tex: {_decl('Texture', name, shape)}, crd: T.Buffer(({M * k},), \"float32\"),\n"
            f"          out: T.Buffer(({M * 4},), \"{lane}\")):\n"
            f"    for i in T.thread_binding({M}, \"threadIdx.x\"):\n"
            f"        out[T.ramp(i * 4, 1, 4)] = T.sample(tex, {crd})\n")
    idx = _index(shape)
    if access == "size":
        k = len(ext)
        body = "        s = T.image_size(img)\n" + "".join(
            f"        out[{j}] = s[{j}]\n" for j in range(k)) if k > 1 else \
            "        out[0] = T.image_size(img)\n"
        return head + (f"def sweep(img: {_decl('Image', name, shape)}, out: T.Buffer((4,), \"int32\")):\n"
                       f"    for i in T.thread_binding(1, \"threadIdx.x\"):\n" + body)
    if access.startswith("atomic"):
        op = access.split("_", 1)[1]
        return head + (
            f"def sweep(img: {_decl('Image', name, shape)}, val: T.Buffer((48,), \"{lane}\")):\n"
            f"    for t in T.thread_binding(48, \"threadIdx.x\"):\n"
            f"        i = t % {n}\n"
            f"        T.atomic_{op}(img[{idx}], val[t])\n")
    if access == "read":
        stmt = f"out[T.ramp(i * 4, 1, 4)] = img[{idx}]"
    elif access == "write":
        stmt = f"img[{idx}] = inp[T.ramp(i * 4, 1, 4)]"
    elif row.is_integer:   # rmw: an xor with small values stays inside the format's range
        stmt = f"img[{idx}] = img[{idx}] ^ inp[T.ramp(i * 4, 1, 4)]"
    else:
        stmt = f"img[{idx}] = img[{idx}] * T.broadcast(T.float32(0.5), 4) + inp[T.ramp(i * 4, 1, 4)]"
    return head + (
        f"def sweep(img: {_decl('Image', name, shape)}, inp: T.Buffer(({n * 4},), \"{lane}\"),\n"
        f"          out: T.Buffer(({n * 4},), \"{lane}\")):\n"
        f"    for i in T.thread_binding({n}, \"threadIdx.x\"):\n"
        f"        {stmt}\n")


# ---- values ---------------------------------------------------------------------------------

def _raw_stress(row, finite: bool):
    """Stored values that stress reads: the type's extremes, 0, and for float16/float32 signed
    zeros, denormals, the largest finite value and (unless `finite`) infinities and NaN."""
    dt = np.dtype(row.storage_dtype)
    if dt.kind == "f":
        info = np.finfo(dt)
        vals = [0.0, -0.0, 1.0, -1.0, 0.5, float(info.max), -float(info.max),
                float(info.smallest_subnormal), -float(info.smallest_subnormal),
                float(info.smallest_normal), float(info.smallest_normal - info.smallest_subnormal),
                1 / 3, 65504.0 if dt.itemsize == 2 else 1e30]
        if not finite:
            vals += [np.inf, -np.inf, np.nan]
        return np.array(vals, dt)
    info = np.iinfo(dt)
    vals = [0, 1, info.max, info.max - 1, info.max // 2, info.max // 2 + 1]
    if info.min < 0:
        vals += [-1, info.min, info.min + 1, -(info.max // 2)]
    return np.array(vals, dt)


def _texels(row, ext, rng, finite=False):
    """An image of shape ext + (channels,): the stress values first, random ones after."""
    count = int(np.prod(ext)) * row.channels
    dt = np.dtype(row.storage_dtype)
    if dt.kind == "f":
        rand = rng.uniform(-2, 2, count).astype(dt)
    else:
        info = np.iinfo(dt)
        rand = rng.integers(info.min, info.max, count, dtype=dt, endpoint=True)
    stress = _raw_stress(row, finite)
    rand[:min(count, stress.size)] = stress[:count]
    return rand.reshape(tuple(ext) + (row.channels,))


def _write_values(row, count, rng):
    """(float32/uint32/int32 values to write, whether each is defined): rounding ties of the
    format and their neighbours, clamped out-of-range values, float16 edge cases."""
    lane = np.dtype(row.lane_dtype)
    defined = np.ones(count, bool)
    if row.encoding in ("unorm", "snorm"):
        top = float(np.iinfo(np.dtype(row.storage_dtype)).max)
        lo = 0 if row.encoding == "unorm" else -top
        ks = rng.integers(lo, top, count)
        kind = rng.integers(0, 5, count)
        frac = np.choose(kind, [0.5, 0.5, 0.5, 0.25, 0.0])
        v = ((ks + frac) / top).astype(np.float32)
        v = np.where(kind == 1, np.nextafter(v, np.float32(np.inf)), v)
        v = np.where(kind == 2, np.nextafter(v, np.float32(-np.inf)), v)
        fixed = [0.0, 1.0, -1.0, 2.0, -2.0, 1.5, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30]
        v[:len(fixed)] = fixed
        return v.astype(lane), ~np.isnan(v)   # NaN: Vulkan defines no normalized value
    if row.encoding == "float":
        v = rng.uniform(-3, 3, count).astype(np.float32)
        if row.storage_dtype == "float16":
            fixed = [0.0, -0.0, 65504.0, 65519.0, 65520.0, 1e5, -1e5, 2.0 ** -24, 2.0 ** -25,
                     3 * 2.0 ** -26, 2.0 ** -26, 1e-8, -3e-8, np.nan, np.inf, -np.inf, 1 / 3,
                     1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, -(1 + 2.0 ** -11), 2.0 ** -14,
                     2.0 ** -14 - 2.0 ** -25, 1e-45, 6e-5]
        else:
            fixed = [0.0, -0.0, 3.4e38, -3.4e38, 1e-45, -1e-45, 1.1754942e-38, np.nan, np.inf,
                     -np.inf]
        v[:len(fixed)] = fixed
        return v, defined
    dt = np.dtype(row.storage_dtype)
    info = np.iinfo(dt)
    wide = np.iinfo(lane)
    v = rng.integers(info.min, info.max, count, endpoint=True).astype(np.int64)
    fixed = [0, 1, info.max, info.min, info.max - 1]
    if info.min < 0:
        fixed += [-1, info.min + 1]
    v[:len(fixed)] = fixed
    if dt.itemsize < 4:   # beyond the format's range: Vulkan leaves the stored value undefined
        beyond = [info.max + 1, info.min - 1, wide.max, wide.min]
        v[len(fixed):len(fixed) + len(beyond)] = beyond
        defined = (v >= info.min) & (v <= info.max)
    return (v % (1 << 32)).astype(np.uint64).astype(np.uint32).view(lane) if lane == np.int32 \
        else v.astype(np.int64).astype(lane), defined


def _coords(row, shape, flt, where, rng):
    """M coordinate vectors (x first, the layer last), normalized."""
    ext, dims, layers = _extent(shape)
    sizes = ext[::-1][:dims]    # x first
    cols = []
    for n in sizes:
        if where == "centre":
            j, f = rng.integers(0, n, M), np.full(M, 0.5)
        elif where == "between":
            j = rng.integers(0, n, M)
            f = rng.choice([0.1, 0.3, 0.7, 0.9] if flt == "nearest" else
                           [0.0, 0.25, 0.5, 1 / 3, 0.77, 0.9], M)
        else:
            j = rng.integers(-2 * n, 3 * n, M)
            f = rng.choice([0.3, 0.7] if flt == "nearest" else [0.0, 0.3, 0.5, 0.77], M)
        cols.append(((j + f) / n).astype(np.float32))
    if layers:
        if where == "centre":
            cols.append(rng.integers(0, layers, M).astype(np.float32))
        elif where == "between":
            cols.append(rng.choice(np.arange(layers * 4) / 4, M).astype(np.float32))
        else:
            cols.append(rng.choice([-2.0, -0.6, layers - 0.4, layers + 3.0], M).astype(np.float32))
    return np.stack(cols, -1).astype(np.float32)


# ---- comparison ---------------------------------------------------------------------------------

def _ulps_apart(got, want):
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    same = (g == w) | both_nan
    return ~same & ~(np.abs(g - w) <= np.spacing(np.abs(want).astype(np.float32)))


def _bad_read(row, got, want):
    """Mask of elements that differ beyond what the docs allow for a read."""
    if row.is_integer:
        return got != want
    if row.encoding == "float":
        return ~((got == want) | (np.isnan(got) & np.isnan(want)))
    return _ulps_apart(got, want)


def _rtz16(x):
    """float32 -> float16 rounded toward zero (overflow to the largest finite value)."""
    x = np.asarray(x, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        r = x.astype(np.float16)
        too_far = np.isfinite(x) & (np.abs(r.astype(np.float32)) > np.abs(x))
        r = np.where(too_far, np.nextafter(r, np.float16(0)), r)
    return r.astype(np.float16)


def _bad_write(row, got, want, values, defined):
    """Mask over stored texels (n, channels) that differ beyond what the docs allow."""
    ch = row.channels
    v = values.reshape(-1, 4)[:, :ch]
    ok_def = defined.reshape(-1, 4)[:, :ch]
    if row.is_integer:
        return (got != want) & ok_def
    if row.encoding == "float" and row.storage_dtype == "float16":
        nan = np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
        return ~((got == want) | (got == _rtz16(v)) | nan)
    if row.encoding == "float":
        return ~((got == want) | (np.isnan(got) & np.isnan(want)))
    top = float(np.iinfo(np.dtype(row.storage_dtype)).max)
    # a tie as the device may compute it: f * top in float32 (within 2 of its ulps of k + 0.5)
    scaled = (np.clip(np.nan_to_num(v), -1, 1).astype(np.float32) * np.float32(top)).astype(np.float64)
    near_tie = np.abs(scaled - np.floor(scaled) - 0.5) <= 2 * np.abs(np.spacing(scaled.astype(np.float32)))
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    return ((diff > 1) | ((diff == 1) & ~near_tie)) & ok_def


def _bad_linear(row, got, want, raw, dims, bits):
    spread = np.ptp(raw.reshape(-1, row.channels).astype(np.float64), axis=0)
    spread = np.concatenate([spread, np.full(4 - row.channels, 0.0)])
    step = 0.0   # a device may filter normalized texels in fixed point: half a step of the format
    if row.encoding in ("unorm", "snorm"):
        top = float(np.iinfo(raw.dtype).max)
        spread /= top
        step = 0.5 / top
    atol = dims * 2.0 ** -bits * spread + step + 4 * np.spacing(np.abs(want).astype(np.float32)) \
        + 1e-7
    return ~((np.abs(got - want) <= atol) | (np.isnan(got) & np.isnan(want)))


# ---- running ----------------------------------------------------------------------------------

_BUILT = {}


def _kernel(func, src, device):
    import vkir

    if src not in _BUILT:
        _BUILT[src] = vkir.build(func, device=device, precise=True)
    return _BUILT[src]


def run_case(case: str, device) -> dict:
    """One case in this process: {"case", "outcome", "detail"}."""
    import vkir
    from vkir import runtime
    from vkir.errors import UnsupportedError, VkirError

    name, access, shape = case.split(":")
    row = _fmt(name)
    src = source(case)
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    ext, dims, layers = _extent(shape)
    n = int(np.prod(ext))
    lane = np.dtype(row.lane_dtype)
    call = {}
    try:
        func = vkir.from_script(src)
        if access.startswith("sample"):
            _, flt, address, where = access.split("_")
            raw = _texels(row, ext, rng, finite=flt == "linear")
            crd = _coords(row, shape, flt, where, rng).ravel()
            args = [raw, crd, np.zeros(M * 4, lane)]
            border = (0.0, 0.0, 0.0, 1.0) if row.is_integer else (1.0, 1.0, 1.0, 1.0)
            call = {"samplers": {"tex": vkir.Sampler(filter=flt, address=address, border=border)}}
        elif access == "size":
            args = [_texels(row, ext, rng), np.full(4, -7, np.int32)]
        elif access.startswith("atomic"):
            raw = _texels(row, ext, rng)
            vals = rng.integers(-50, 50, 48).astype(lane) if lane == np.int32 else \
                rng.integers(0, 1 << 32, 48, dtype=np.uint64).astype(lane)
            vals[:4] = [0, np.iinfo(lane).max, np.iinfo(lane).min, 1]
            args = [raw, vals]
        else:
            raw = _texels(row, ext, rng)
            if access == "write":
                inp, defined = _write_values(row, n * 4, rng)
            elif row.is_integer:
                inp, defined = rng.integers(0, 16, n * 4).astype(lane), None
            else:
                inp, defined = rng.uniform(-0.6, 0.6, n * 4).astype(np.float32), None
            args = [raw, inp, np.zeros(n * 4, lane)]
        kernel = _kernel(func, src, device)
    except UnsupportedError as err:
        ok = name in str(err)
        return {"case": case, "outcome": "rejected" if ok else "mismatch",
                "detail": f"UnsupportedError{'' if ok else ' not naming the format'}: {err}"}
    except VkirError as err:
        return {"case": case, "outcome": "rejected", "detail": f"{type(err).__name__}: {err}"}
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    bits = device.info.limits.sub_texel_precision_bits
    try:
        vkir.interpret(func, *want, sub_texel_precision_bits=bits, **call)
    except VkirError as err:
        return {"case": case, "outcome": "rejected", "detail": f"interpreter: {err}"}
    try:
        kernel(*got, **call)
    except UnsupportedError as err:
        ok = name in str(err)
        return {"case": case, "outcome": "rejected" if ok else "mismatch",
                "detail": f"UnsupportedError at the call{'' if ok else ' not naming the format'}: {err}"}
    messages = runtime.validation_messages()
    if messages:
        return {"case": case, "outcome": "validation", "detail": "; ".join(messages[:2])[:400]}
    if access.startswith("sample"):
        g, w = got[2].reshape(M, 4), want[2].reshape(M, 4)
        if access.split("_")[1] == "linear":
            bad = _bad_linear(row, g, w, args[0], dims, bits)
        else:
            bad = _bad_read(row, g, w)
        where = "coordinate"
    elif access == "read":
        g, w = got[2].reshape(n, 4), want[2].reshape(n, 4)
        bad, where = _bad_read(row, g, w), "texel"
    elif access == "size":
        g, w = got[1], want[1]
        bad, where = g != w, "lane"
    else:
        g = got[0].reshape(n, row.channels)
        w = want[0].reshape(n, row.channels)
        if access == "write":
            bad = _bad_write(row, g, w, args[1], defined)
        elif access == "rmw" and not row.is_integer:   # a read 1 ulp off may move one step
            bad = _bad_write(row, g, w, np.zeros(n * 4, np.float32), np.ones(n * 4, bool)) \
                if row.encoding != "float" else ~(
                    (g == w) | (np.abs(g.astype(np.float64) - w) <= 2 * np.spacing(np.abs(w)))
                    | (np.isnan(g) & np.isnan(w)))
            if row.encoding != "float":
                bad = np.abs(g.astype(np.int64) - w.astype(np.int64)) > 1
        else:
            bad = g != w
        where = "texel"
    bad = np.asarray(bad)
    rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=-1)) if bad.ndim else []
    if len(rows):
        sample = "; ".join(f"{where} {j}: device {g[j].tolist()} interp {w[j].tolist()}"
                           + (f" input {args[1].reshape(-1, 4)[j].tolist()}" if access == "write" else "")
                           + (f" at {args[1].reshape(M, -1)[j].tolist()}" if access.startswith("sample") else "")
                           for j in rows[:3])
        return {"case": case, "outcome": "mismatch",
                "detail": f"{len(rows)}/{bad.shape[0]} {where}s differ; {sample}"}
    return {"case": case, "outcome": "ok", "detail": f"{bad.shape[0] if bad.ndim else 1} compared"}


def _access_group(case: str) -> str:
    access = case.split(":")[1]
    parts = access.split("_")
    return parts[0] + ("_" + parts[1] if access.startswith("sample") else "")


def main(argv=None) -> None:
    """Command line: see the module docstring."""
    command_line(argv, __doc__, "benchmarks.image_sweep", cases, run_case, source,
                 {"format": lambda c: c.split(":")[0], "access": _access_group,
                  "shape": lambda c: c.split(":")[2]})

if __name__ == "__main__":
    main()
