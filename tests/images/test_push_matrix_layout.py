"""Matrices in push constants are packed by their reflected layout (RowMajor or ColMajor with
MatrixStride): a GLSL shader echoes every element of each matCxR, C and R in 2..4, both ways."""

import itertools

import numpy as np
import pytest

import vkir

ECHO = """
#version 450
layout(local_size_x = 1) in;
layout(push_constant, {layout}) uniform P {{ float pad; mat{c}x{r} m; }} p;
layout(std430, binding = 0) buffer O {{ float o[]; }};
void main() {{
    for (int i = 0; i < {c}; i++)
        for (int j = 0; j < {r}; j++)
            o[i * {r} + j] = p.m[i][j];
}}
"""
SHAPES = list(itertools.product((2, 3, 4), (2, 3, 4)))


@pytest.fixture(scope="module")
def echoes(_vulkan_device):
    return {(layout, c, r): vkir.compile_glsl(ECHO.format(layout=layout, c=c, r=r),
                                              device=_vulkan_device)
            for layout in ("row_major", "column_major") for c, r in SHAPES}


@pytest.mark.parametrize("layout", ["row_major", "column_major"])
def test_matrix_push_constants_echo(echoes, layout):
    for c, r in SHAPES:
        sk = echoes[layout, c, r]
        assert sk.push_constants[1].type.row_major == (layout == "row_major")
        columns = np.arange(1, c * r + 1, dtype=np.float32).reshape(c, r)
        out = np.zeros(c * r, np.float32)
        sk(out, grid=(1,), push={"pad": 0.0, "m": columns})
        assert np.array_equal(out, columns.reshape(-1)), (layout, c, r, out)
