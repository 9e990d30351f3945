"""The default Vulkan pipeline runs FlattenBuffer, VectorizeLoop, Simplify,
VectorTypeRewrite, BoolToInt8 in that order, then CommonSubexprElim, then the checker."""

import pytest

import vkir
from vkir import T, transform
from vkir.errors import TypeCheckError
from vkir.lowering import default_passes

ORDER = [transform.FlattenBuffer, transform.VectorizeLoop, transform.Simplify,
         transform.VectorTypeRewrite, transform.BoolToInt8, transform.CommonSubexprElim]


@pytest.mark.parametrize("pointer_casts", [False, True])
def test_default_pipeline_order(pointer_casts):
    kinds = [type(p) for p in default_passes(None, pointer_casts)]
    positions = [kinds.index(cls) for cls in ORDER]
    assert positions == sorted(positions), kinds
    assert kinds[-1] is transform.CommonSubexprElim  # after every vector pass
    if pointer_casts:  # the pointer-cast alternative runs before the VectorTypeRewriter
        assert kinds.index(transform.Simplify) < kinds.index(transform.PointerCastVectorize) \
            < kinds.index(transform.VectorTypeRewrite)
    else:
        assert transform.PointerCastVectorize not in kinds


@T.prim_func
def implicit_cast(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "int32")):
    for i in T.serial(16):
        b[i] = a[i]


def test_lower_ends_with_the_checker():
    with pytest.raises(TypeCheckError):
        vkir.lower(implicit_cast)
