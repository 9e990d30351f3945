"""The loop-limit workaround only where a call needs it: loops compile plainly, a call whose
actual trip counts exceed llvmpipe's budget runs a variant with split loops, and a call no
variant can run raises UnsupportedError before the dispatch (a loop is never cut short)."""

import numpy as np
import pytest

import vkir
from vkir.errors import UnsupportedError
from vkir.ir import Var
from vkir.driver.loop_budget import LOOP_BUDGET, Loop, choose_split, loops_for_call

COUNT = vkir.from_script('''
@T.prim_func
def count(a: T.Buffer((1,), "int32"), n: T.int32):
    for j in T.serial(n):
        a[0] = a[0] + 1
''')

NEST = vkir.from_script('''
@T.prim_func
def nest(a: T.Buffer((1,), "int32"), m: T.int32, n: T.int32):
    for i in T.serial(m):
        for j in T.serial(n):
            a[0] = a[0] + 1
''')


def test_loops_are_bounded_from_the_call_values():
    n = COUNT.params[1]
    (loop,) = loops_for_call(COUNT, {n: 1000})
    assert (loop.trips, loop.starts, loop.iterations, loop.splittable) == (1000, 1, 1000, True)
    m, n = NEST.params[1:]
    outer, inner = loops_for_call(NEST, {m: 30, n: 70})
    assert (outer.trips, outer.starts) == (30, 1) and (inner.trips, inner.starts) == (70, 30)
    assert inner.outer == {outer.var}


def loop(name, trips, starts=1, outer=()):
    return Loop(Var(name, "int32"), trips, starts, True, frozenset(outer))


def test_choose_split_prefers_no_split_then_the_smallest_factor():
    assert choose_split([loop("j", LOOP_BUDGET)], "k", "dev").factor == 1
    split = choose_split([loop("j", LOOP_BUDGET + 1)], "k", "dev")
    assert split.factor == 2 and split.iterations <= LOOP_BUDGET
    split = choose_split([loop("j", 1_000_000)], "k", "dev")
    assert split.factor == 16 and split.iterations == 62500


def test_nested_loops_are_never_both_split():
    i = loop("i", 2000)
    j = loop("j", 2000, starts=2000, outer=[i.var])
    with pytest.raises(UnsupportedError, match="loops run up to 4002000 iterations"):
        choose_split([i, j], "k", "dev")
    split = choose_split([loop("i", 1000), Loop(Var("j", "int32"), 1000, 1000, True,
                                                   frozenset({Var("i", "int32")}))], "k", "dev")
    assert split.factor == 16 and len(split.loops) == 1


def test_a_loop_that_depends_on_data_is_split_by_the_largest_factor():
    split = choose_split([Loop(Var("j", "int32"), None, 1, True)], "k", "dev")
    assert split.factor == 64 and len(split.loops) == 1


@pytest.mark.device
def test_each_call_runs_whole_or_is_refused(device):
    k = vkir.build(COUNT, device=device)
    limited = "loop_trip_limit_65535" in device.info.quirks
    for n in (0, 7, 65535, 65536, 1_000_003):
        a = np.zeros(1, np.int32)
        k(a, n)
        assert a[0] == n
    assert len(k._variants) == (2 if limited else 0)   # 65536 and 1000003 need splits
    a = np.zeros(1, np.int32)
    if limited:
        with pytest.raises(UnsupportedError, match="stops every loop of an invocation after 65535"):
            k(a, 5_000_000)
        assert a[0] == 0   # refused before the dispatch
    else:
        k(a, 5_000_000)
        assert a[0] == 5_000_000


@pytest.mark.device
def test_a_nest_is_never_unrolled_sixty_four_squared(device):
    k = vkir.build(NEST, device=device)
    assert len(k.spirv) < 4096   # compiled plainly
    for m, n in ((10, 10), (300, 300), (1000, 1000)):
        a = np.zeros(1, np.int32)
        k(a, m, n)
        assert a[0] == m * n
    if "loop_trip_limit_65535" in device.info.quirks:
        with pytest.raises(UnsupportedError):
            k(np.zeros(1, np.int32), 2000, 2000)


WHILE_COUNT = vkir.from_script('''
@T.prim_func
def while_count(a: T.Buffer((1,), "int32"), n: T.int32):
    k = 0
    while k < n:
        k += 1
        if k == 1 << 30:
            break
    a[0] = k
''')


def test_a_while_loop_is_a_loop_of_unknown_trips():
    n = WHILE_COUNT.params[1]
    (loop,) = loops_for_call(vkir.lower(WHILE_COUNT), {n: 10})
    assert loop.trips is None and loop.splittable
    split = choose_split([loop], "k", "dev")
    assert loop.var in split.loops


@pytest.mark.device
def test_a_long_while_loop_runs_whole(device):
    """A while loop runs past llvmpipe's 65535 back edges: its variant has 16 copies of the body
    per back edge (where the driver has no loop limit, the plain loop runs)."""
    k = vkir.build(WHILE_COUNT, device=device)
    for n in (0, 5, 65536, 200_000):
        a = np.zeros(1, np.int32)
        k(a, n)
        assert a[0] == n


FIRST_ABOVE = vkir.from_script('''
@T.prim_func
def first_above(a: T.Buffer(("n",), "float32"), out: T.Buffer((1,), "int32"), t: T.float32):
    found = -1
    for i in T.serial(n):
        if a[i] > t:
            found = i
            break
    out[0] = found
''')


def test_a_serial_loop_that_breaks_keeps_its_bound():
    """A serial loop that may break is a while loop over a counter; the budget still knows its
    trip count, so a short call needs no split and a long one gets the smallest split that fits
    (16 copies at most for a while loop: beyond them the call is refused, never cut)."""
    lowered = vkir.lower(FIRST_ABOVE)
    n = lowered.size_vars[0]
    (loop,) = loops_for_call(lowered, {n: 1000})
    assert loop.trips == 1000 and loop.starts == 1
    assert choose_split([loop], "k", "dev").factor == 1
    (loop,) = loops_for_call(lowered, {n: 200_000})
    split = choose_split([loop], "k", "dev")
    assert split.factor == 4 and split.loops == {loop.var} and split.iterations == 50_000
    (loop,) = loops_for_call(lowered, {n: 2_000_000})
    with pytest.raises(UnsupportedError, match="16 for while loops"):
        choose_split([loop], "k", "dev")


@pytest.mark.device
def test_a_long_serial_loop_that_breaks_runs_whole(device):
    k = vkir.build(FIRST_ABOVE, device=device)
    for n, t in ((10, 3.5), (70_000, 69_998.5), (200_000, 1e9)):
        out = np.zeros(1, np.int32)
        k(np.arange(n, dtype=np.float32), out, np.float32(t))
        assert out[0] == (-1 if t > n else int(t) + 1)
    limited = "loop_trip_limit_65535" in device.info.quirks
    assert len(k._variants) == (2 if limited else 0)   # none for the call of 10


SMALL_INNER = vkir.from_script('''
@T.prim_func
def small_inner(a: T.Buffer((1,), "int32"), m: T.int32):
    s = 0
    for i in T.serial(m):
        for j in T.serial(3):
            s += 1
    a[0] = s
''')

TRIANGLE = vkir.from_script('''
@T.prim_func
def triangle(a: T.Buffer((1,), "int32"), n: T.int32):
    s = 0
    for i in T.serial(n):
        for j in T.serial(i):
            s += 1
    a[0] = s
''')


def test_a_short_constant_loop_started_many_times_is_unrolled_whole():
    """3 iterations started 40000 times: a split by 4 leaves no loop of it (40000 back edges
    in all), where one back edge per start (120000 with the outer loop's) was refused."""
    m = SMALL_INNER.params[1]
    outer, inner = loops_for_call(vkir.lower(SMALL_INNER), {m: 40_000})
    assert inner.iterations == 120_000
    split = choose_split([outer, inner], "k", "dev")
    assert (split.factor, split.loops, split.iterations) == (4, {inner.var}, 40_000)
    assert split.whole == {inner.var}


def test_a_triangular_nest_is_counted_per_start():
    """The inner loop of `for i in range(n): for j in range(i)` runs n(n-1)/2 times, not
    n(n-1): for n = 2500 split by 64 it takes 52540 back edges, which fit."""
    n = TRIANGLE.params[1]
    outer, inner = loops_for_call(vkir.lower(TRIANGLE), {n: 2500})
    assert outer.values == (0, 2499) and inner.trips == 2499
    assert inner.iterations == 2500 * 2499 // 2
    split = choose_split([outer, inner], "k", "dev")
    assert (split.factor, split.loops, split.iterations) == (64, {inner.var}, 52_540)
    # a loop between them that runs the same values on every start keeps the count exact; one
    # whose extent also follows i does not (each i starts j a different number of times)
    i, k, j = loops_for_call(vkir.lower(THREE), {THREE.params[1]: 300})
    assert k.values == (0, 1) and j.iterations == 2 * (300 * 299 // 2)
    i, k, j = loops_for_call(vkir.lower(SKEWED), {SKEWED.params[1]: 300})
    assert k.values is None and j.per_start == () and j.iterations == (300 * 299 // 2) * 299
    # a nest whose plain bound fits is not counted start by start (no cost per call)
    outer, inner = loops_for_call(vkir.lower(TRIANGLE), {n: 200})
    assert inner.per_start == () and inner.iterations == 200 * 199


THREE = vkir.from_script('''
@T.prim_func
def three(a: T.Buffer((1,), "int32"), n: T.int32):
    for i in T.serial(n):
        for k in T.serial(2):
            for j in T.serial(i):
                a[0] = a[0] + 1
''')

SKEWED = vkir.from_script('''
@T.prim_func
def skewed(a: T.Buffer((1,), "int32"), n: T.int32):
    for i in T.serial(n):
        for k in T.serial(i):
            for j in T.serial(i):
                a[0] = a[0] + 1
''')


def test_nested_loops_of_unknown_length_split_the_inner_one_only():
    i = Loop(Var("i", "int32"), None, 1, True)
    j = Loop(Var("j", "int32"), None, None, True, frozenset({i.var}))
    assert choose_split([i, j], "k", "dev").loops == {j.var}
    # a known loop chosen for the budget is not split again around an unknown one
    k = Loop(Var("k", "int32"), 100_000, 1, True)
    q = Loop(Var("q", "int32"), None, None, True, frozenset({k.var}))
    assert choose_split([k, q], "k", "dev").loops == {k.var}


VAR_INNER = vkir.from_script('''
@T.prim_func
def var_inner(a: T.Buffer((1,), "int32"), m: T.int32, q: T.int32):
    s = 0
    for i in T.serial(m):
        for j in T.serial(q):
            s += 1
    a[0] = s
''')


def test_a_short_loop_of_a_scalar_count_is_unrolled_whole_for_the_calls_it_fits():
    """The same for a count from a scalar: the variant unrolls it into `factor` guarded copies,
    so it serves only calls whose count the chunk covers (`whole` is part of the variant)."""
    m, q = VAR_INNER.params[1:]
    lowered = vkir.lower(VAR_INNER)
    split = choose_split(loops_for_call(lowered, {m: 40_000, q: 3}), "k", "dev")
    assert split.factor == 4 and split.whole == split.loops and split.iterations == 40_000
    split = choose_split(loops_for_call(lowered, {m: 600, q: 200}), "k", "dev")
    assert split.whole == frozenset() and split.loops


@pytest.mark.device
def test_bounded_nests_the_estimate_refused_now_run_whole(device):
    k = vkir.build(VAR_INNER, device=device)
    for m, q in ((40_000, 3), (40_000, 5), (40_000, 7), (600, 200), (40_000, 3), (1000, 60)):
        a = np.zeros(1, np.int32)
        k(a, m, q)
        assert a[0] == m * q
    k = vkir.build(SMALL_INNER, device=device)
    a = np.zeros(1, np.int32)
    k(a, 40_000)
    assert a[0] == 120_000
    k = vkir.build(TRIANGLE, device=device)
    k(a, 2500)
    assert a[0] == 2500 * 2499 // 2


FLOOR_DIV = vkir.from_script('''
@T.prim_func
def floor_div(a: T.Buffer((4000,), "float32"), b: T.Buffer((4000,), "float32"),
              out: T.Buffer((4000,), "float32"), n: T.int32):
    for i in T.serial(n):
        out[i] = a[i] // b[i]
''')


def test_a_float_floor_division_is_a_loop_of_the_budget():
    """codegen computes a float `//` exactly with a loop of up to 4 iterations (float32: 32
    reduction steps, 8 an iteration): it spends the same budget, so n = 20000 of them cannot
    run whole on llvmpipe."""
    n = FLOOR_DIV.params[3]
    outer, hidden = loops_for_call(vkir.lower(FLOOR_DIV), {n: 2000})
    assert (hidden.trips, hidden.starts, hidden.splittable) == (4, 2000, False)
    assert choose_split([outer, hidden], "k", "dev").iterations == 2000 + 8_000
    with pytest.raises(UnsupportedError, match="each float //, % or fmod is a loop"):
        choose_split(loops_for_call(vkir.lower(FLOOR_DIV), {n: 20000}), "k", "dev")


@pytest.mark.device
def test_float_floor_divisions_in_a_loop_run_whole_or_are_refused(device):
    rng = np.random.default_rng(0)
    a = rng.uniform(1, 1e6, 4000).astype(np.float32)
    b = rng.uniform(0.5, 2, 4000).astype(np.float32)
    k = vkir.build(FLOOR_DIV, device=device)
    out = np.zeros(4000, np.float32)
    k(a, b, out, 2000)
    np.testing.assert_array_equal(out[:2000], a[:2000] // b[:2000])
    k(a, b, out, 4000)     # 4 x 4000 back edges of llvmpipe's budget (2000 of 4000 came back
    np.testing.assert_array_equal(out, a // b)   # wrong, silently, when each took 32)
