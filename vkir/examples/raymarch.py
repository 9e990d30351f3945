"""A ray-marched scene as a vkir kernel: two spheres on a checkered floor, lambert shading and a
hard shadow from one directional light, over a sky gradient. `vkir demo` renders it on the
device and checks it against the interpreter; the golden-image tests render it small.

The scene is a signed distance field (the distance from a point to the nearest surface). A
primary ray marches from the camera until it is within HIT of a surface or past FAR; a hit point
is shaded by the light's angle to the surface normal (analytic for the spheres and the floor) and
darkened where a second march, toward the light, hits something first. A ray that goes down but
leaves the march's reach meets the floor analytically, and far surfaces fade into the horizon's
haze, so the floor runs smoothly into the sky. Each invocation shades
one pixel of an (h, w) float32x4 buffer (RGBA in [0, 1], row 0 at the top); `to_rgba8` turns it
into the (h, w, 4) uint8 picture a PNG stores. `render_scene_rgba8` is the same kernel drawing
into an rgba8 storage image (`T.Image`), which converts on the device (what `vkir demo` renders).
"""

from __future__ import annotations

import numpy as np

from vkir import T

__all__ = ["render_scene", "render_scene_rgba8", "to_rgba8", "render_reference",
           "render_reference_rgba8"]

# the scene, literal in the kernel and its two distance functions: an orange sphere at
# (-0.75, 0.7, 0.6) of radius 0.7, a blue one at (0.85, 0.45, 0) of radius 0.45, the floor y = 0;
# the light comes from (-0.48, 0.8, -0.36) (a unit vector); the camera sits at (0, 1.2, -3.5)
# looking down +z, tilted a little downward


@T.func
def orange_distance(px: T.float32, py: T.float32, pz: T.float32) -> T.float32:
    """The signed distance from (px, py, pz) to the orange sphere (each march step, the hit
    point and the shadow ray use it; the call inlines)."""
    return T.sqrt((px + 0.75) * (px + 0.75) + (py - 0.7) * (py - 0.7)
                  + (pz - 0.6) * (pz - 0.6)) - 0.7


@T.func
def blue_distance(px: T.float32, py: T.float32, pz: T.float32) -> T.float32:
    """The signed distance from (px, py, pz) to the blue sphere."""
    return T.sqrt((px - 0.85) * (px - 0.85) + (py - 0.45) * (py - 0.45) + pz * pz) - 0.45


@T.prim_func
def render_scene(img: T.Buffer(("h", "w"), "float32x4")):
    """Shade pixel (y, x) of the scene: march the camera ray, then the shadow ray."""
    for by in T.thread_binding((h + 7) // 8, "blockIdx.y"):
        for bx in T.thread_binding((w + 7) // 8, "blockIdx.x"):
            for ty in T.thread_binding(8, "threadIdx.y"):
                for tx in T.thread_binding(8, "threadIdx.x"):
                    y = by * 8 + ty
                    x = bx * 8 + tx
                    if y < h and x < w:
                        aspect = T.cast(w, "float32") / T.cast(h, "float32")
                        u = ((T.cast(x, "float32") + 0.5) / T.cast(w, "float32") * 2.0 - 1.0) * aspect
                        v = 1.0 - (T.cast(y, "float32") + 0.5) / T.cast(h, "float32") * 2.0
                        # the unit ray direction through the pixel
                        rl = T.sqrt(u * u + (v - 0.25) * (v - 0.25) + 2.56)
                        dx = u / rl
                        dy = (v - 0.25) / rl
                        dz = T.float32(1.6) / rl
                        # sphere tracing: step by the distance to the nearest surface
                        t = T.float32(0)
                        hit = False
                        for step in T.serial(96):
                            px = dx * t
                            py = dy * t + 1.2
                            pz = dz * t - 3.5
                            a = orange_distance(px, py, pz)
                            b = blue_distance(px, py, pz)
                            d = T.min(T.min(a, b), py)
                            if d < 0.001:
                                hit = True
                                break
                            t += d
                            if t > 30.0:
                                break
                        # past the march's reach a ray going down meets the floor where it
                        # crosses y = 0 (without this, FAR would cut the floor off in an arc of
                        # sky below the horizon)
                        if not hit and dy < 0.0:
                            t = -1.2 / dy
                            hit = True
                        # the hit point, the surface it lies on and that surface's normal
                        px = dx * t
                        py = dy * t + 1.2
                        pz = dz * t - 3.5
                        a = orange_distance(px, py, pz)
                        b = blue_distance(px, py, pz)
                        on_a = a < b and a < py
                        on_b = not on_a and b < py
                        nx = T.select(on_a, (px + 0.75) / 0.7, T.select(on_b, (px - 0.85) / 0.45, 0.0))
                        ny = T.select(on_a, (py - 0.7) / 0.7, T.select(on_b, (py - 0.45) / 0.45, 1.0))
                        nz = T.select(on_a, (pz - 0.6) / 0.7, T.select(on_b, pz / 0.45, 0.0))
                        # the shadow ray: from just above the surface toward the light
                        lit = T.float32(1)
                        if hit:
                            s = T.float32(0.02)
                            for step2 in T.serial(64):
                                qx = px + nx * 0.002 - 0.48 * s
                                qy = py + ny * 0.002 + 0.8 * s
                                qz = pz + nz * 0.002 - 0.36 * s
                                a2 = orange_distance(qx, qy, qz)
                                b2 = blue_distance(qx, qy, qz)
                                d2 = T.min(T.min(a2, b2), qy)
                                if d2 < 0.001:
                                    lit = T.float32(0)
                                    break
                                s += d2
                                if s > 10.0:
                                    break
                        lambert = T.max(nx * -0.48 + ny * 0.8 + nz * -0.36, 0.0)
                        shade = 0.15 + 0.85 * lambert * lit
                        # surface colors: orange and blue spheres, a checkered floor
                        # (a check narrower than a few pixels would alias into arcs: the checks
                        # fade to their mean where one pixel covers more floor, about t * t / h)
                        check = T.cast(T.floor(px * 2.0) + T.floor(pz * 2.0), "int32") & 1
                        fade = T.min(T.max((t * t / (T.cast(h, "float32") * 1.2) - 0.05) * 8.0,
                                           0.0), 1.0)
                        light = T.select(check == 0, 0.25, -0.25) * (1.0 - fade)
                        r = T.select(on_a, 0.95, T.select(on_b, 0.25, 0.6 + light))
                        g = T.select(on_a, 0.55, T.select(on_b, 0.45, 0.6 + light))
                        bl = T.select(on_a, 0.2, T.select(on_b, 0.95, 0.6 + 0.8 * light))
                        # the sky: pale haze at the horizon, blue above; far surfaces fade into
                        # the same haze (fog), so the floor meets the sky without a seam and its
                        # distant checks do not alias
                        up = T.min(T.max(dy, 0.0) * 3.0, 1.0)
                        fog = T.select(hit, 1.0 - T.exp(-(t * 0.05) * (t * 0.05)), 1.0)
                        haze_r = 0.7 + (0.35 - 0.7) * up
                        haze_g = 0.74 + (0.55 - 0.74) * up
                        haze_b = 0.8 + (0.92 - 0.8) * up
                        img[y, x] = T.float32x4(
                            T.select(hit, r * shade, 0.0) * (1.0 - fog) + haze_r * fog,
                            T.select(hit, g * shade, 0.0) * (1.0 - fog) + haze_g * fog,
                            T.select(hit, bl * shade, 0.0) * (1.0 - fog) + haze_b * fog,
                            T.float32(1))


def to_rgba8(image: np.ndarray) -> np.ndarray:
    """An (h, w, 4) float picture in [0, 1] as uint8 (clamped, rounded to nearest)."""
    return (np.clip(np.asarray(image, np.float32), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def render_reference(h: int, w: int) -> np.ndarray:
    """The scene rendered by vkir.interpret (the definition): an (h, w, 4) float32 array. Slow:
    keep it small (the interpreter walks every pixel's march)."""
    import vkir

    out = np.zeros((h, w, 4), np.float32)
    vkir.interpret(render_scene, out)
    return out


def _into_image(func, fmt: str):
    """`func` with its one float32x4 buffer parameter replaced by a storage image of `fmt` of
    the same shape: each store to the buffer becomes a store to the image."""
    from vkir.ir import Mutator, PrimFunc, Var
    from vkir.ir.image import ImageStore
    from vkir.ir.image_type import ImageType

    param = func.params[0]
    buf = func.buffer_map[param]
    img = Var(param.name, ImageType(fmt, buf.shape))

    class _Stores(Mutator):
        def visit_BufferStore(self, s):
            if s.buffer.data is buf.data:
                return ImageStore(img, self.visit(s.value), s.indices)
            return self.generic_visit(s)

    return PrimFunc((img,), _Stores().visit(func.body), {},
                    func.attrs.set("global_symbol", f"{func.name}_{fmt}"))


render_scene_rgba8 = _into_image(render_scene, "rgba8")


def render_reference_rgba8(h: int, w: int) -> np.ndarray:
    """`render_scene_rgba8` run by vkir.interpret: the (h, w, 4) uint8 picture (small sizes)."""
    import vkir

    out = np.zeros((h, w, 4), np.uint8)
    vkir.interpret(render_scene_rgba8, out)
    return out
