"""Cube textures: `T.TextureCube((size, size), format)` sampled by direction, Vulkan's face
selection and face coordinates in the interpreter (vkir.images.cube), the same texels on the
device from a numpy (6, size, size, channels) array and from `vkir.image(..., cube=True)`, a
GLSL samplerCube as published, and the errors."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.errors import ArgumentError, ScriptError
from vkir.images import FORMATS
from vkir.images.cube import cube_coordinates


@pytest.mark.parametrize("direction, face, s, t", [
    ((1, 0.5, -0.25), 0, 0.625, 0.25), ((-1, 0.5, -0.25), 1, 0.375, 0.25),
    ((0.5, 1, -0.25), 2, 0.75, 0.375), ((0.5, -1, -0.25), 3, 0.75, 0.625),
    ((0.5, -0.25, 1), 4, 0.75, 0.625), ((0.5, -0.25, -1), 5, 0.25, 0.625),
    ((0, 0, 2), 4, 0.5, 0.5)])
def test_faces_and_coordinates_follow_the_specification_table(direction, face, s, t):
    got = cube_coordinates(np.array(direction, np.float32))
    assert tuple(got) == (s, t, face)


@T.prim_func
def look(cube: T.TextureCube((4, 4), "rgba8"), dirs: T.Buffer((96,), "float32x3"),
         out: T.Buffer((96,), "float32x4"), size: T.Buffer((1,), "int32x2")):
    for i in T.thread_binding(96, "threadIdx.x"):
        out[i] = T.sample(cube, dirs[i])
        if i == 0:
            size[0] = T.image_size(cube)


def _faces():
    return np.random.default_rng(0).integers(0, 256, (6, 4, 4, 4)).astype(np.uint8)


def _directions():
    """Directions at the centres of every face's texels (16 per face), scaled differently."""
    c = (np.arange(4) + 0.5) / 4 * 2 - 1
    sc, tc = [a.reshape(-1) for a in np.meshgrid(c, c, indexing="xy")]
    one = np.ones(16)
    faces = [(one, -tc, -sc), (-one, -tc, sc), (sc, one, tc), (sc, -one, -tc), (sc, -tc, one),
             (-sc, -tc, -one)]
    scale = np.repeat([1, 2, 0.5, 3, 1, 7], 16)[:, None]
    return (np.concatenate([np.stack(f, -1) for f in faces]) * scale).astype(np.float32)


def test_each_direction_reads_its_face_texel_in_the_interpreter():
    faces = _faces()
    out, size = np.zeros((96, 4), np.float32), np.zeros((1, 2), np.int32)
    vkir.interpret(look, faces, _directions(), out, size)
    want = faces.reshape(6, 16, 4).reshape(96, 4) / np.float32(255)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    assert size.tolist() == [[4, 4]]
    vkir.assert_structural_equal(vkir.from_script(look.script()), look)
    assert 'T.TextureCube((4, 4), "rgba8")' in look.script()


def test_cube_textures_on_the_device(device):
    faces = _faces()
    dirs = _directions()
    want = np.zeros((96, 4), np.float32)
    vkir.interpret(look, faces, dirs, want, np.zeros((1, 2), np.int32))
    kernel = vkir.build(look)
    for texture in (faces, vkir.image(faces, "rgba8", cube=True)):
        out, size = np.zeros((96, 4), np.float32), np.zeros((1, 2), np.int32)
        kernel(texture, dirs, out, size)
        np.testing.assert_allclose(out, want, atol=1e-6)
        assert size.tolist() == [[4, 4]]


SKYBOX = """
#version 450
layout(local_size_x = 32) in;
layout(binding = 0) uniform samplerCube sky;
layout(std430, binding = 1) readonly buffer D { vec4 dirs[]; };
layout(std430, binding = 2) writeonly buffer O { vec4 colors[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    colors[i] = textureLod(sky, dirs[i].xyz, 0.0);
}
"""


def test_a_glsl_sampler_cube_runs_as_published(device):
    faces = _faces()
    dirs = np.concatenate([_directions(), np.ones((96, 1), np.float32)], axis=1)
    out = np.zeros((96, 4), np.float32)
    vkir.compile_glsl(SKYBOX)(vkir.image(faces, "rgba8", cube=True), dirs, out, grid=3)
    np.testing.assert_allclose(out, faces.reshape(96, 4) / np.float32(255), atol=1e-6)


def test_cube_errors(device):
    with pytest.raises(ScriptError, match="faces of a cube image are square"):
        vkir.from_script('''
@T.prim_func
def f(c: T.TextureCube((4, 8), "rgba8"), out: T.Buffer((1,), "float32x4")):
    out[0] = T.sample(c, T.float32x3(1.0, 0.0, 0.0))
''')
    with pytest.raises(ArgumentError, match="6 faces"):
        vkir.image(np.zeros((5, 4, 4, 4), np.uint8), "rgba8", cube=True)
    with pytest.raises(ArgumentError, match="is a cube image"):
        vkir.build(look)(vkir.image(_faces(), "rgba8", layered=True), _directions(),
                         np.zeros((96, 4), np.float32), np.zeros((1, 2), np.int32))
    assert FORMATS["rgba8"].channels == 4
