"""Rendering a frame with an existing GLSL compute shader: a plasma effect (a sum of sine waves
through a cosine palette, with a soft ring) that writes one RGBA8 pixel per invocation, packed
into a uint32 storage buffer with `packUnorm4x8`, the way shaders written for a swapchain-less
renderer often do. `render_frame` compiles it with vkir.compile_glsl and returns the frame as the
(h, w, 4) uint8 array a PNG stores; `reference_frame` is the same formula in numpy.

    frame = render_frame(320, 180, time=1.5)
    vkir.golden_images.save_image("plasma.png", frame)
"""

from __future__ import annotations

import numpy as np

__all__ = ["PLASMA_GLSL", "render_frame", "reference_frame", "plasma_kernel"]

PLASMA_GLSL = """
#version 450
// One RGBA8 pixel per invocation, packed into a uint32 (red in the low byte), row 0 at the top.
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, set = 0, binding = 0) writeonly buffer Frame { uint pixels[]; };
layout(push_constant) uniform Params { uint width; uint height; float time; } p;

void main() {
    uvec2 id = gl_GlobalInvocationID.xy;
    if (id.x >= p.width || id.y >= p.height) {
        return;
    }
    vec2 uv = (vec2(id) + 0.5) / vec2(p.width, p.height);
    float aspect = float(p.width) / float(p.height);
    vec2 q = vec2((uv.x - 0.5) * aspect, uv.y - 0.5);
    float v = sin(q.x * 9.0 + p.time)
            + sin(q.y * 7.0 - p.time * 0.7)
            + sin((q.x + q.y) * 6.0 + p.time * 1.3)
            + sin(length(q) * 12.0 - p.time * 2.0);
    vec3 color = 0.5 + 0.5 * cos(v * 1.1 + vec3(0.0, 2.1, 4.2));
    float ring = 1.0 - smoothstep(0.0, 0.02, abs(length(q) - 0.32));
    color = mix(color, vec3(1.0), ring * 0.8);
    pixels[id.y * p.width + id.x] = packUnorm4x8(vec4(color, 1.0));
}
"""


def plasma_kernel(device=None):
    """The plasma shader compiled for `device` (default: vkir's default device): a ShaderKernel
    to keep for rendering several frames."""
    import vkir

    return vkir.compile_glsl(PLASMA_GLSL, device=device)


def render_frame(width: int, height: int, time: float = 0.0, device=None,
                 kernel=None) -> np.ndarray:
    """The plasma frame at `time`, rendered by the GLSL shader (`kernel` from plasma_kernel, else
    compiled now) on the device: an (height, width, 4) uint8 RGBA array, row 0 at the top."""
    kernel = kernel if kernel is not None else plasma_kernel(device)
    pixels = np.zeros(width * height, np.uint32)
    kernel(pixels, grid=((width + 7) // 8, (height + 7) // 8),
                          push={"width": width, "height": height, "time": float(time)})
    # packUnorm4x8 puts red in the low byte: the little-endian bytes of each word are R, G, B, A
    return pixels.astype("<u4").view(np.uint8).reshape(height, width, 4)


def reference_frame(width: int, height: int, time: float = 0.0) -> np.ndarray:
    """The same frame computed by numpy in float32 (the device may differ by one 8-bit step
    where its sine and cosine round differently)."""
    f = np.float32
    y, x = np.mgrid[0:height, 0:width].astype(f)
    t = f(time)
    u, v_ = (x + f(0.5)) / f(width), (y + f(0.5)) / f(height)
    qx, qy = (u - f(0.5)) * (f(width) / f(height)), v_ - f(0.5)
    r = np.sqrt(qx * qx + qy * qy)
    v = (np.sin(qx * f(9) + t) + np.sin(qy * f(7) - t * f(0.7))
         + np.sin((qx + qy) * f(6) + t * f(1.3)) + np.sin(r * f(12) - t * f(2)))
    color = f(0.5) + f(0.5) * np.cos(v[..., None] * f(1.1) + np.array([0, 2.1, 4.2], f))
    e = np.clip(np.abs(r - f(0.32)) / f(0.02), 0, 1)
    ring = f(1) - e * e * (f(3) - f(2) * e)
    color = color + (f(1) - color) * (ring * f(0.8))[..., None]
    rgba = np.concatenate([color, np.ones_like(color[..., :1])], axis=-1)
    return np.round(np.clip(rgba, 0, 1) * f(255)).astype(np.uint8)
