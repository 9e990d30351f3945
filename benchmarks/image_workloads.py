"""The `images` workload of `vkir bench`: what images cost against buffers in vkir kernels.

- images_shade: a 1920x1080 (quick: 256x144) shading kernel (a few sines per pixel) writing an
  rgba8 storage image (`vkir`), beside the same kernel writing a float32x4 buffer (`buffer`).
- images_blur: a 3x3 box blur of a 1920x1080 (quick: 256x144) rgba32f picture into a float32x4
  buffer, reading through a sampler (`vkir`: T.sample, nearest, clamp-to-edge addressing) beside
  the same blur with buffer loads and clamped indices (`buffer`).

Data stays on the device (DeviceImages and DeviceArrays), so both sides time the kernel alone:
device_s from timestamp queries and wall_s around them, the implementations alternating round by
round (Bench._timed). A summary line prints the image/buffer ratio of device time.
"""

from __future__ import annotations

import numpy as np

SIZE = {"full": (1080, 1920), "quick": (144, 256)}

_GRID = """
@T.prim_func
def {name}({params}):
    for by in T.thread_binding((h + 7) // 8, "blockIdx.y"):
        for bx in T.thread_binding((w + 7) // 8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    if y < h and x < w:
{body}
"""

_SHADE_BODY = """\
                        u = T.cast(x, "float32") / T.cast(w, "float32")
                        v = T.cast(y, "float32") / T.cast(h, "float32")
                        c = T.float32x4(0.5 + 0.5 * T.sin(u * 12.0 + v * 3.0), u * v,
                                        0.5 + 0.5 * T.cos(v * 9.0 - u * 2.0), 1.0)
                        out[y, x] = c
"""

_TAPS = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
_SAMPLE = ('T.sample(src, T.float32x2((T.cast(x + {dx}, "float32") + 0.5) / T.cast(w, "float32"), '
           '(T.cast(y + {dy}, "float32") + 0.5) / T.cast(h, "float32")))')
_LOAD = "src[T.min(T.max(y + {dy}, 0), h - 1), T.min(T.max(x + {dx}, 0), w - 1)]"
_BLUR = "                        out[y, x] = ({}) * 0.1111111111111111\n"
_BLUR_SAMPLED = _BLUR.format(" + ".join(_SAMPLE.format(dy=dy, dx=dx) for dy, dx in _TAPS))
_BLUR_LOADS = _BLUR.format(" + ".join(_LOAD.format(dy=dy, dx=dx) for dy, dx in _TAPS))


def kernels(vk):
    """The four kernels: {(workload, "image" | "buffer"): PrimFunc}."""
    from vkir import T

    def parse(name, params, body):
        return vk.from_script(_GRID.format(name=name, params=params, body=body), {"T": T})

    buf_out = 'out: T.Buffer(("h", "w"), "float32x4")'
    return {
        ("shade", "image"): parse("shade_image", 'out: T.Image(("h", "w"), "rgba8")',
                                  _SHADE_BODY),
        ("shade", "buffer"): parse("shade_buffer", buf_out, _SHADE_BODY),
        ("blur", "image"): parse("blur_sampled", 'src: T.Texture(("h", "w"), "rgba32f"), '
                                 + buf_out, _BLUR_SAMPLED),
        ("blur", "buffer"): parse("blur_loads", 'src: T.Buffer(("h", "w"), "float32x4"), '
                                  + buf_out, _BLUR_LOADS),
    }


def images(bench) -> None:
    """Both parts of the workload on `bench` (a suite.Bench): results and a summary line each."""
    vk, dev = bench.vkir, bench.dev
    h, w = SIZE["quick" if bench.quick else "full"]
    bench.size = [h, w]
    ks = {key: vk.build(f, device=dev) for key, f in kernels(vk).items()}

    # shading: an rgba8 image vs a float32x4 buffer
    img = vk.empty_image((h, w), "rgba8", device=dev)
    buf = vk.empty((h, w, 4), "float32", dev)
    _compare(bench, "images_shade", {
        "vkir": bench.vkir_steps(ks["shade", "image"], [(img,)]),
        "buffer": bench.vkir_steps(ks["shade", "buffer"], [(buf,)])}, 4 * h * w, (h, w))
    bench.check("images_shade image vs buffer", img.numpy() / np.float32(255),
                buf.numpy(), rtol=0, atol=1 / 255)

    # blur: sampled texture vs buffer loads
    picture = bench.rng.random((h, w, 4), dtype=np.float32)
    tex = vk.image(picture, "rgba32f", device=dev)
    src = vk.array(picture, dev)
    out_s, out_b = vk.empty((h, w, 4), "float32", dev), vk.empty((h, w, 4), "float32", dev)
    sampler = {"src": vk.Sampler()}
    _compare(bench, "images_blur", {
        "vkir": [lambda: ks["blur", "image"].profile(tex, out_s, repeat=1, warmup=0,
                                                     samplers=sampler)],
        "buffer": bench.vkir_steps(ks["blur", "buffer"], [(src, out_b)])}, 16 * 10 * h * w,
        (h, w))
    padded = np.pad(picture, ((1, 1), (1, 1), (0, 0)), mode="edge")
    want = sum(padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)) / 9
    bench.check("images_blur sampled", out_s.numpy(), want, rtol=1e-4, atol=1e-5)
    bench.check("images_blur loads", out_b.numpy(), want, rtol=1e-4, atol=1e-5)


def _compare(bench, workload: str, impls: dict, nbytes: int, size) -> None:
    bench._timed(workload, impls, nbytes=nbytes)
    got = {m.impl: m for m in bench.results if m.workload == workload and m.metric == "device_s"}
    ratio = got["vkir"].median / got["buffer"].median
    print(f"  {workload} {size[1]}x{size[0]}: image {got['vkir'].median * 1e3:.3f} ms, buffer "
          f"{got['buffer'].median * 1e3:.3f} ms (device time, image/buffer {ratio:.2f})",
          flush=True)
