"""simplify_expr on long integer +, -, * chains: linear time (a chain is rebuilt once, at its
root, not at each level) and no RecursionError at thousands of terms, with the same results as
short chains: constants folded with wrap-around, equal atoms combined, values preserved."""

import random
import time

import pytest

from vkir.arith import simplify_expr
from vkir.interpreter import evaluate
from vkir.ir import Add, IntImm, Mul, Sub, Var, const
from vkir.ir.structural import recursion_headroom

xs = [Var(f"x{k}") for k in range(20)]
ys = [Var(f"y{k}") for k in range(400)]  # many distinct atoms: long partial sums


def _chain(n: int, right: bool, seed: int):
    """n terms (vars times constants, bare vars, constants) joined by + and -, left- or
    right-nested."""
    rnd = random.Random(seed)
    terms = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.4:
            terms.append(rnd.choice(ys) * rnd.randint(-7, 7))
        elif r < 0.8:
            terms.append(rnd.choice(ys))
        else:
            terms.append(const(rnd.choice([1, -3, 2**31 - 1, -2**31, 12345])))
    e = terms[0]
    for t in terms[1:]:
        op = Sub if rnd.random() < 0.3 else Add
        e = op(t, e) if right else op(e, t)
    return e


def _value(e, env):
    with recursion_headroom():  # evaluating the unsimplified chain recurses once per level
        return evaluate(e, env)


@pytest.mark.parametrize("right", [False, True])
def test_2000_term_sum_is_exact(right):
    e = _chain(2000, right, seed=1 + right)
    out = simplify_expr(e)  # no outer recursion guard: simplify_expr brings its own
    assert out.dtype == e.dtype
    assert sum(1 for _ in _atoms(out)) <= len(ys)  # equal vars combined
    rnd = random.Random(7)
    for _ in range(3):
        env = {v: rnd.choice([rnd.randint(-2**31, 2**31 - 1), rnd.randint(-9, 9)]) for v in ys}
        assert _value(out, env) == _value(e, env)


def _atoms(e):
    """The Vars of a rebuilt sum."""
    stack = [e]
    while stack:
        n = stack.pop()
        if isinstance(n, Var):
            yield n
        elif isinstance(n, (Add, Sub, Mul)):
            stack.extend((n.a, n.b))


def test_300_term_mixed_expression_folds():
    i, j = Var("i"), Var("j")
    e = None
    for k in range(1, 301):
        if k % 3 == 0:
            t = i * k
        elif k % 3 == 1:
            t = Sub(j, const(k))
        else:
            t = Mul(const(2), Add(i, const(k)))
        e = t if e is None else Add(e, t)
    # j: 100 terms; i: 3 + 6 + ... + 300 plus 2 per k = 2 mod 3; constants -1 - 4 - ... - 298
    # plus 2 * (2 + 5 + ... + 299)
    expected = Add(Add(Mul(j, const(100)), Mul(i, const(15150 + 200))), const(30100 - 14950))
    assert simplify_expr(e) == expected
    # plus 2**31 - 1 minus (-2**31 - i): i + 2**32 - 1, which wraps to i - 1
    wrapped = simplify_expr(Sub(Add(e, const(2**31 - 1)), Sub(const(-2**31), i)))
    assert wrapped == Add(Add(Mul(j, const(100)), Mul(i, const(15351))), const(15149))
    env = {i: 123456, j: -98765}
    assert _value(wrapped, env) == _value(Sub(Add(e, const(2**31 - 1)), Sub(const(-2**31), i)),
                                          env)


def test_long_chain_cancels_to_a_constant():
    # x0 + 1 + x1 + 1 + ... then minus every var again: only the constants remain
    e = IntImm("int32", 0)
    for v in xs * 50:
        e = Add(Add(e, v), const(1))
    for v in xs * 50:
        e = Sub(e, v)
    assert simplify_expr(e) == const(1000)


@pytest.mark.timing
@pytest.mark.parametrize("right", [False, True])
def test_2000_term_sum_simplifies_within_a_second(right):
    e = _chain(2000, right, seed=1 + right)
    start = time.perf_counter()
    simplify_expr(e)
    assert time.perf_counter() - start < 1.0
