"""Images in the script and the IR: parameters, reads, writes, T.sample, T.image_size and image
atomics parse to the image nodes, print and parse back structurally equal, and the type checker
refuses what the typing rules forbid, naming the node and the rule."""

import pytest

import vkir
from vkir import T
from vkir.errors import ScriptError, TypeCheckError
from vkir.ir import ImageLoad, ImageSample, ImageSize, ImageStore, ImageType, walk


@T.prim_func
def shade(img: T.Image(("h", "w"), "rgba8"), tex: T.Texture((16, 16), "rgba8"),
          hist: T.Image((256,), "r32ui"), arr: T.Image((4, 4), "rgba32f", layers=3),
          vol: T.Image((2, 3, 4), "rgba16i")):
    for ty in T.thread_binding(8, "threadIdx.y"):
        for tx in T.thread_binding(8, "threadIdx.x"):
            if ty < h and tx < w:
                uv = T.float32x2(T.cast(tx, "float32") / T.cast(w, "float32"),
                                 T.cast(ty, "float32") / T.cast(h, "float32"))
                c = T.sample(tex, uv)
                img[ty, tx] = c * 0.5 + img[ty, tx]
                s = T.image_size(img)
                T.atomic_add(hist[T.cast(c[0] * 255.0, "int32")], T.uint32(1))
                arr[1, ty % 4, tx % 4] = arr[0, 0, 0] + T.cast(T.broadcast(s[0], 4), "float32x4")
                vol[1, 2, 3] = vol[0, 0, 0]


def test_nodes_and_types():
    img, tex, hist, arr, vol = shade.params
    assert img.dtype == ImageType("rgba8", shade.size_vars)
    assert tex.dtype.sampled and not img.dtype.sampled
    assert arr.dtype.layered and arr.dtype.dims == 2 and len(arr.dtype.shape) == 3
    assert vol.dtype.dims == 3 and vol.dtype.texel == "int32x4"
    nodes = list(walk(shade.body))
    loads = [n for n in nodes if isinstance(n, ImageLoad)]
    assert {n.image.name for n in loads} == {"img", "hist", "arr", "vol"}
    assert all(n.dtype == "float32x4" for n in loads if n.image is img)
    (sample,) = [n for n in nodes if isinstance(n, ImageSample)]
    assert sample.dtype == "float32x4" and sample.coords.dtype == "float32x2"
    (size,) = [n for n in nodes if isinstance(n, ImageSize)]
    assert size.dtype == "int32x2"
    atomic = next(n for n in nodes if getattr(n, "op", None) == "atomic_add")
    assert atomic.dtype == "uint32" and isinstance(atomic.args[0], ImageLoad)
    assert len([n for n in nodes if isinstance(n, ImageStore)]) == 3
    vkir.analysis.verify_types(shade)
    vkir.analysis.verify_well_formed(shade)


def test_round_trip():
    text = shade.script()
    assert 'T.Image((4, 4), "rgba32f", layers=3)' in text
    assert 'T.Texture((16, 16), "rgba8")' in text and "T.sample(tex, uv)" in text
    again = vkir.from_script(text)
    vkir.assert_structural_equal(again, shade)
    assert again.script() == text


def test_structural_inequality_of_formats():
    other = vkir.from_script(shade.script().replace('"rgba16i"', '"rgba16ui"'))
    assert not vkir.ir.structural_equal(other, shade)


def _check(src_body, params='img: T.Image((8, 8), "rgba8"), tex: T.Texture((8, 8), "rgba8"), '
                           'cnt: T.Image((8,), "r32ui")'):
    text = f"@T.prim_func\ndef f({params}):\n" + "".join(
        f"    {line}\n" for line in src_body.splitlines())
    return vkir.from_script(text)


@pytest.mark.parametrize("body, rule, words", [
    ("img[0, 0] = T.float32x4(1, 2, 3, 4) * 2.0 + T.cast(T.broadcast(1, 4), 'float32x4')", None, None),
    ("img[0, 0] = T.uint32x4(1, 2, 3, 4)", 3, "takes the format's 4-lane type"),
    ("img[0] = T.float32x4(1, 2, 3, 4)", 1, "takes 2 indices, got 1"),
    ("img[0, T.int64(0)] = T.float32x4(1, 2, 3, 4)", 1, "must be a scalar int32"),
    ("img[0, 9] = T.float32x4(1, 2, 3, 4)", 6, "constant index 9"),
    ("T.evaluate(T.sample(tex, T.float32(0)))", 3, "float32x2"),
    ("T.evaluate(T.atomic_add(cnt[0], T.uint32(1)))", None, None),
    ("T.evaluate(T.atomic_add(img[0, 0], T.float32(1)))", 3, "r32ui or r32i"),
])
def test_type_rules(body, rule, words):
    f = _check(body)
    if rule is None:
        vkir.analysis.verify_types(f)
        return
    with pytest.raises(TypeCheckError) as info:
        vkir.analysis.verify_types(f)
    assert f"rule {rule}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("body, words", [
    ("tex[0, 0] = T.float32x4(1, 2, 3, 4)", "read-only"),
    ("x = tex[0, 0]", "read only through T.sample"),
    ("T.evaluate(T.sample(img, T.float32x2(0, 0)))", "is a image; a texture"),
    ("x = img + 1", "not a value"),
])
def test_script_errors(body, words):
    with pytest.raises(ScriptError) as info:
        _check(body)
    assert words in str(info.value)


def test_unknown_format_and_dims():
    with pytest.raises(ScriptError, match="unknown image format 'rgb7'"):
        _check("T.evaluate(0)", 'img: T.Image((8, 8), "rgb7")')
    with pytest.raises(ScriptError, match="1, 2 or 3 dimensions"):
        _check("T.evaluate(0)", 'img: T.Image((2, 2, 2, 2), "rgba8")')


@pytest.mark.parametrize("annotation, words", [
    ('T.Image((-1, 4), "r32f")', "T.Image: image extents must be positive: the height is -1 "
                                 "(shape (-1, 4))"),
    ('T.Image((4, 0), "rgba8")', "the width is 0 (shape (4, 0))"),
    ('T.Texture((0,), "r32f")', "T.Texture: image extents must be positive: the width is 0"),
    ('T.Image((2, 2, -3), "r32f")', "the width is -3 (shape (2, 2, -3))"),
    ('T.Image((2, 2), "r32f", layers=0)', "the layer count is 0 (shape (2, 2), layers=0)"),
])
def test_non_positive_extents_are_refused_where_declared(annotation, words):
    """A constant extent below 1 is refused at the annotation, naming it (it was accepted, and
    a call reported an index out of dim 0 of extent -1)."""
    with pytest.raises(ScriptError) as info:
        _check("T.evaluate(0)", f"img: {annotation}")
    assert words in str(info.value)
    assert str(info.value).startswith("<script>:")
    with pytest.raises(vkir.ArgumentError, match="image extents must be positive: the height "
                                                 "is -2"):
        ImageType("r32f", (-2, 3))


def test_image_vars_are_not_values_to_the_checker():
    img = vkir.ir.Var("img", ImageType("rgba8", (4, 4)))
    f = vkir.ir.PrimFunc((img,), vkir.ir.Evaluate(vkir.ir.Cast("int32", vkir.ir.IntImm("int32", 0))))
    vkir.analysis.verify_types(f)
    bad = vkir.ir.PrimFunc((img,), vkir.ir.LetStmt(vkir.ir.Var("x", "int32"), img,
                                                     vkir.ir.Evaluate(0)))
    with pytest.raises(TypeCheckError, match="rule 5.*image img used as a value"):
        vkir.analysis.verify_types(bad)
