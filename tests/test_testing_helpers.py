"""vkir.testing's pass-test helpers: random_arguments covers every parameter kind the suite uses,
check_pass reports a wrong pass output by name, and CompareBeforeAfter runs a before/expected
case stated as a class (its own cases below run through it, passing and failing)."""

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.testing import CompareBeforeAfter, check_pass, random_arguments, same_results
from vkir.transform import Simplify, VectorizeLoop


@T.prim_func
def mixed(a: T.Buffer(("n",), "float32"), b: T.Buffer((4,), "int8x4"), c: T.Buffer((3,), "bool"),
          d: T.Buffer((2, "n"), "uint8"), m: T.int32, x: T.float32):
    T.evaluate(0)


def test_random_arguments_follow_the_parameters():
    a, b, c, d, m, x = random_arguments(mixed, 0, sizes=5)
    assert a.shape == (5,) and a.dtype == np.float32
    assert b.shape == (16,) and b.dtype == np.int8 and np.all((b >= -50) & (b < 50))
    assert c.dtype == np.bool_ and c.shape == (3,)
    assert d.shape == (2, 5) and d.dtype == np.uint8
    assert 0 <= m < 4 and isinstance(x, float)


def test_random_arguments_options():
    rng = np.random.default_rng(1)
    a, b, _, d, m, x = random_arguments(mixed, rng, sizes={"n": 3}, lanes="axis", int_range=None,
                                        float_range=(2, 3), scalars={"m": 7, "x": 0.5})
    assert a.shape == (3,) and np.all((a >= 2) & (a < 3))
    assert b.shape == (4, 4)
    assert d.min() < 0x40 and d.max() > 0xC0   # the whole uint8 range
    assert (m, x) == (7, 0.5)
    same = random_arguments(mixed, 4, sizes=3)
    for u, v in zip(same, random_arguments(mixed, 4, sizes=3)):
        np.testing.assert_array_equal(u, v)      # deterministic in the seed
    called = random_arguments(mixed, 0, sizes=3, scalars=lambda p: p.name)
    assert called[4:] == ["m", "x"]


def test_a_scalar_named_in_sizes_takes_that_value():
    @T.prim_func
    def f(a: T.Buffer(("n",), "float32"), k: T.int32):
        T.evaluate(0)

    a, k = random_arguments(f, 0, sizes={"n": 2, "k": 6})
    assert a.shape == (2,) and k == 6


def test_symbolic_sizes_must_be_given():
    with pytest.raises(vkir.ArgumentError, match="'n'"):
        random_arguments(mixed, 0)


@T.prim_func
def fold_before(A: T.Buffer((2,), "int32")):
    A[0] = 2 + 3
    A[1] = A[0] * 1


@T.prim_func
def fold_expected(A: T.Buffer((2,), "int32")):
    A[0] = 5
    A[1] = A[0]


@T.prim_func
def fold_wrong(A: T.Buffer((2,), "int32")):
    A[0] = 6
    A[1] = A[0]


def test_check_pass_returns_the_output_and_names_a_mismatch():
    after = check_pass(Simplify(), fold_before, fold_expected)
    vkir.assert_structural_equal(after, fold_expected)
    with pytest.raises(AssertionError, match=r"(?s)Simplify on fold_before.*5.*6"):
        check_pass(Simplify(), fold_before, fold_wrong)


def test_same_results_defaults_to_random_arguments():
    same_results(fold_before, fold_expected)
    with pytest.raises(AssertionError):
        same_results(fold_before, fold_wrong)


class TestFoldsConstants(CompareBeforeAfter):
    transform = Simplify()
    same_results = True
    before, expected = fold_before, fold_expected


class TestAnExpectedErrorIsRaised(CompareBeforeAfter):
    transform = VectorizeLoop()
    expected = vkir.TransformError

    @T.prim_func
    def before(A: T.Buffer(("n",), "float32")):
        for i in T.vectorized(n):   # a vectorized loop needs a constant extent
            A[i] = A[i] + 1.0


def test_compare_before_after_fails_on_a_wrong_expectation():
    class Wrong(CompareBeforeAfter):
        transform = Simplify()
        before, expected = fold_before, fold_wrong

    with pytest.raises(AssertionError, match="Simplify on fold_before"):
        Wrong().test_compare()
