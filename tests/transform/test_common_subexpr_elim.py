"""CommonSubexprElim: the two worked examples of TVM's CSE design, one expected script per rule,
determinism and naming, and differential tests against the interpreter."""

import re

import numpy as np
import pytest

import vkir
from vkir import T, ir
from vkir.analysis import verify_types, verify_well_formed
from vkir.testing import check_pass, random_arguments
from vkir.transform import CommonSubexprElim


def _cse(func, **options):
    out = CommonSubexprElim(**options)(func)
    verify_types(out)
    verify_well_formed(out)
    return out


def _check(before, expected, **options):
    after = check_pass(CommonSubexprElim(**options), before,
                       expected.with_attr("global_symbol", before.name))
    # deterministic: the same input prints byte-identically
    assert CommonSubexprElim(**options)(before).script() == after.script()
    return after


def _unchanged(before, **options):
    after = _cse(before, **options)
    assert after is before
    return after


def _cse_names(func):
    return [n.var.name for n in ir.walk(func.body) if isinstance(n, (ir.LetStmt, ir.Let))
            and n.var.name.startswith("cse_")]


# ----------------------------------------------------------------------------------------------
# the worked examples of TVM's CSE design


@T.prim_func
def seed_cse(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32, z3: T.int32):
    z1 = 1
    z2 = 2
    buffer[i1] = z1 + z2
    x = 1
    y = 1
    a = (x + y) + (z1 + z2)
    b = (x + y) + z3
    buffer[i2] = a + b


@T.prim_func
def seed_cse_expected(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32, z3: T.int32):
    z1 = 1
    z2 = 2
    cse_v1 = z1 + z2
    buffer[i1] = cse_v1
    x = 1
    y = 1
    cse_v2 = x + y
    a = cse_v2 + cse_v1
    b = cse_v2 + z3
    buffer[i2] = a + b


def test_seed_example_cse():
    after = _check(seed_cse, seed_cse_expected)
    assert _cse_names(after) == ["cse_v1", "cse_v2"]


@T.prim_func
def seed_cascade(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32, i3: T.int32,
                 x: T.int32, y: T.int32, z: T.int32):
    buffer[i1] = (x + y) + z
    buffer[i2] = (x + y) + z
    buffer[i3] = x + y


@T.prim_func
def seed_cascade_expected(buffer: T.Buffer((50,), "int32"), i1: T.int32, i2: T.int32,
                          i3: T.int32, x: T.int32, y: T.int32, z: T.int32):
    cse_v2 = x + y
    cse_v1 = cse_v2 + z
    buffer[i1] = cse_v1
    buffer[i2] = cse_v1
    buffer[i3] = cse_v2


def test_seed_example_cascade():
    after = _check(seed_cascade, seed_cascade_expected)
    # the larger computation is bound first, so it gets the first name
    assert _cse_names(after) == ["cse_v2", "cse_v1"]
    lets = [n for n in ir.walk(after.body) if isinstance(n, ir.LetStmt)]
    assert lets[0].var.name == "cse_v2" and lets[1].value == ir.Add(lets[0].var, after.params[6])


# ----------------------------------------------------------------------------------------------
# eligibility


@T.prim_func
def not_eligible(a: T.Buffer((16,), "int32"), b: T.Buffer((16,), "int32"),
                 v: T.Buffer((4,), "int32x4"), x: T.int32, y: T.int32):
    a[0] = x  # variables
    a[1] = x
    a[2] = 7  # constants
    a[3] = 7
    v[0] = T.broadcast(y, 4)  # broadcasts
    v[1] = T.broadcast(y, 4)
    a[T.ramp(x, 1, 4)] = T.ramp(y, 2, 4)  # ramps
    a[T.ramp(x, 1, 4)] = T.ramp(y, 2, 4)
    if x < y:  # bool predicates
        a[4] = T.select(x < y, 1, 2)
    if x < y and x != 3:
        a[5] = T.select(x < y and x != 3, 1, 2)
    a[6] = b[x] + 1  # anything containing a load
    a[7] = b[x] + 1


def test_constants_vars_ramps_broadcasts_predicates_and_loads_are_not_commoned():
    _unchanged(not_eligible)


@T.prim_func
def load_indices(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32"), x: T.int32):
    a[x * 4 + 1] = b[x * 4 + 1] + b[x * 4 + 1]


@T.prim_func
def load_indices_expected(a: T.Buffer((64,), "int32"), b: T.Buffer((64,), "int32"), x: T.int32):
    cse_v1 = x * 4 + 1
    a[cse_v1] = b[cse_v1] + b[cse_v1]


def test_index_arithmetic_inside_loads_is_commoned_but_not_the_loads():
    _check(load_indices, load_indices_expected)


def test_impure_calls_are_not_commoned():
    x = ir.Var("x", "int32")
    a = ir.decl_buffer((4,), "int32", "a")
    opaque = ir.Call("int32", "device_counter", (x + 1,))  # unknown op: impure
    body = ir.seq(a.store(opaque * 2, 0), a.store(opaque * 2, 1))
    func = ir.PrimFunc((a.data, x), body, {a.data: a})
    after = CommonSubexprElim()(func)
    # the calls stay, only the pure argument inside them is commoned
    calls = [n for n in ir.walk(after.body) if isinstance(n, ir.Call)]
    assert len(calls) == 2 and all(c.args[0] == calls[0].args[0] for c in calls)
    assert isinstance(after.body, ir.LetStmt) and after.body.value == x + 1


@T.prim_func
def pure_math(a: T.Buffer((4,), "float32"), x: T.float32):
    a[0] = T.exp(x * 2.0) + 1.0
    a[1] = T.exp(x * 2.0) - 1.0
    a[2] = T.sqrt(x) * T.sqrt(x)


@T.prim_func
def pure_math_expected(a: T.Buffer((4,), "float32"), x: T.float32):
    cse_v1 = T.exp(x * 2.0)
    a[0] = cse_v1 + 1.0
    a[1] = cse_v1 - 1.0
    cse_v2 = T.sqrt(x)
    a[2] = cse_v2 * cse_v2


def test_pure_math_intrinsics_are_commoned():
    _check(pure_math, pure_math_expected)


# ----------------------------------------------------------------------------------------------
# how many times, which first


@T.prim_func
def single_use(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    a[0] = (y + x) * z
    a[1] = x * (z + y)


def test_single_use_is_left_as_written_even_with_equivalences():
    _unchanged(single_use)
    _unchanged(single_use, identify_equiv_terms=True)


@T.prim_func
def three_levels(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, z: T.int32, w: T.int32):
    a[0] = ((x + y) * z - w) * 3
    a[1] = ((x + y) * z - w) * 5
    a[2] = (x + y) * z
    a[3] = x + y


@T.prim_func
def three_levels_expected(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, z: T.int32,
                          w: T.int32):
    cse_v3 = x + y
    cse_v2 = cse_v3 * z
    cse_v1 = cse_v2 - w
    a[0] = cse_v1 * 3
    a[1] = cse_v1 * 5
    a[2] = cse_v2
    a[3] = cse_v3


def test_cascade_larger_first_uses_smaller_bindings():
    after = _check(three_levels, three_levels_expected)
    assert _cse_names(after) == ["cse_v3", "cse_v2", "cse_v1"]


@T.prim_func
def nested_but_once(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    a[0] = (x + y) * z
    a[1] = (x + y) * z


@T.prim_func
def nested_but_once_expected(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    cse_v1 = (x + y) * z
    a[0] = cse_v1
    a[1] = cse_v1


def test_subcomputation_used_only_inside_the_bound_one_is_not_bound_again():
    _check(nested_but_once, nested_but_once_expected)


# ----------------------------------------------------------------------------------------------
# placement


@T.prim_func
def in_one_branch(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    if x < y:
        a[0] = x * y + 1
        a[1] = x * y + 1
    else:
        a[2] = 0


@T.prim_func
def in_one_branch_expected(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    if x < y:
        cse_v1 = x * y + 1
        a[0] = cse_v1
        a[1] = cse_v1
    else:
        a[2] = 0


def test_two_uses_in_one_branch_stay_in_that_branch():
    _check(in_one_branch, in_one_branch_expected)


@T.prim_func
def in_both_branches(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    a[3] = 5
    if x < y:
        a[0] = x * y + 1
    else:
        a[1] = x * y + 1


@T.prim_func
def in_both_branches_expected(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    a[3] = 5
    cse_v1 = x * y + 1
    if x < y:
        a[0] = cse_v1
    else:
        a[1] = cse_v1


def test_one_use_in_each_branch_is_hoisted_above_the_if():
    _check(in_both_branches, in_both_branches_expected)


@T.prim_func
def in_condition(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    if x * y + 1 < 10:
        a[0] = x * y + 1


@T.prim_func
def in_condition_expected(a: T.Buffer((4,), "int32"), x: T.int32, y: T.int32):
    cse_v1 = x * y + 1
    if cse_v1 < 10:
        a[0] = cse_v1


def test_use_in_the_condition_hoists_above_the_if():
    _check(in_condition, in_condition_expected)


@T.prim_func
def loops(a: T.Buffer((64,), "int32"), x: T.int32, y: T.int32, n: T.int32):
    for i in T.serial(n):
        a[i * 4 + x] = i * 4 + x + 1
        a[i] = x * y
        a[i + 1] = x * y
    for j in T.serial(n):
        a[j] = x - y
    a[0] = x - y


@T.prim_func
def loops_expected(a: T.Buffer((64,), "int32"), x: T.int32, y: T.int32, n: T.int32):
    for i in T.serial(n):
        cse_v1 = i * 4 + x
        a[cse_v1] = cse_v1 + 1
        cse_v2 = x * y
        a[i] = cse_v2
        a[i + 1] = cse_v2
    cse_v3 = x - y
    for j in T.serial(n):
        a[j] = cse_v3
    a[0] = cse_v3


def test_loop_variant_stays_in_loop_and_bindings_are_innermost():
    # i*4+x uses the loop var; x*y is invariant but used only in the loop body (innermost scope);
    # x-y is used in a loop and after it, so it is bound before the loop
    _check(loops, loops_expected)


@T.prim_func
def let_scopes(a: T.Buffer((8,), "int32"), x: T.int32):
    for i in T.serial(4):
        t = i + x
        a[i] = (t * 2 + 1) + (t * 2 + 1)
        a[i + 4] = (i * 3) * (i * 3)


@T.prim_func
def let_scopes_expected(a: T.Buffer((8,), "int32"), x: T.int32):
    for i in T.serial(4):
        t = i + x
        cse_v1 = t * 2 + 1
        a[i] = cse_v1 + cse_v1
        cse_v2 = i * 3
        a[i + 4] = cse_v2 * cse_v2


def test_binding_never_leaves_the_scope_of_its_variables():
    _check(let_scopes, let_scopes_expected)


@T.prim_func
def let_expression(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32"), x: T.int32):
    a[x] = T.let(t := b[x], (t + 1) * (t + 1)) + 2


@T.prim_func
def let_expression_expected(a: T.Buffer((8,), "int32"), b: T.Buffer((8,), "int32"), x: T.int32):
    a[x] = T.let(t := b[x], T.let(cse_v1 := t + 1, cse_v1 * cse_v1)) + 2


def test_inside_let_expressions_a_let_expression_is_introduced():
    _check(let_expression, let_expression_expected)


@T.prim_func
def ite_arms(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
    a[0] = T.if_then_else(x < y, (x + y) * (x + y), 0)
    a[1] = T.if_then_else(x < 5, (x - y) * 2, (x - y) * 3)


@T.prim_func
def ite_arms_expected(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
    a[0] = T.if_then_else(x < y, T.let(cse_v1 := x + y, cse_v1 * cse_v1), 0)
    cse_v2 = x - y
    a[1] = T.if_then_else(x < 5, cse_v2 * 2, cse_v2 * 3)


def test_if_then_else_arms_are_scopes_like_if_branches():
    _check(ite_arms, ite_arms_expected)


@T.prim_func
def select_sides(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
    a[0] = T.select(x < y, x * y, 1) + T.select(y < x, x * y, 2)


@T.prim_func
def select_sides_expected(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
    cse_v1 = x * y
    a[0] = T.select(x < y, cse_v1, 1) + T.select(y < x, cse_v1, 2)


def test_select_evaluates_both_sides_so_it_is_no_scope():
    _check(select_sides, select_sides_expected)


# ----------------------------------------------------------------------------------------------
# integer division that may trap is never speculated


@T.prim_func
def guarded_division(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32):
    a[0] = T.if_then_else(d != 0, x // d, 0) + T.if_then_else(d != 0, x // d + 1, 0)
    if d != 0:
        a[1] = T.truncdiv(x, d)
    if d > 0:
        a[2] = T.truncdiv(x, d) + x % d * (x % d)
    a[3] = x // 4 + 1
    if d < 0:
        a[4] = x // 4 + 1


@T.prim_func
def guarded_division_expected(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32):
    a[0] = T.if_then_else(d != 0, x // d, 0) + T.if_then_else(d != 0, x // d + 1, 0)
    if d != 0:
        a[1] = T.truncdiv(x, d)
    if d > 0:
        cse_v2 = x % d
        a[2] = T.truncdiv(x, d) + cse_v2 * cse_v2
    cse_v1 = x // 4 + 1
    a[3] = cse_v1
    if d < 0:
        a[4] = cse_v1


def test_division_by_a_possibly_zero_divisor_is_not_hoisted_out_of_conditionals():
    _check(guarded_division, guarded_division_expected)


@T.prim_func
def unguarded_division(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32):
    a[0] = x // d + x // d


@T.prim_func
def unguarded_division_expected(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32):
    cse_v1 = x // d
    a[0] = cse_v1 + cse_v1


def test_unconditional_divisions_are_commoned():
    _check(unguarded_division, unguarded_division_expected)


@T.prim_func
def guards_and_loops(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32, n: T.int32):
    if x > 0:
        a[0] = T.if_then_else(d != 0, x // d, 0)
    else:
        a[1] = T.if_then_else(d != 0, x // d, 0) + 1
    for i in T.serial(n):
        a[i] = x % d
    a[2] = x % d


@T.prim_func
def guards_and_loops_expected(a: T.Buffer((8,), "int32"), x: T.int32, d: T.int32, n: T.int32):
    cse_v1 = T.if_then_else(d != 0, x // d, 0)
    if x > 0:
        a[0] = cse_v1
    else:
        a[1] = cse_v1 + 1
    for i in T.serial(n):
        a[i] = x % d
    a[2] = x % d


def test_guarded_division_moves_with_its_guard_but_never_out_of_a_loop():
    # the if_then_else keeps guarding its arm wherever it is bound; x % d would run before a
    # loop that may run zero times, so it is not commoned
    _check(guards_and_loops, guards_and_loops_expected)


# ----------------------------------------------------------------------------------------------
# vector types


@T.prim_func
def vectors(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "int32"), x: T.int32,
            s: T.float32):
    a[T.ramp(x * 4, 1, 4)] = (T.cast(T.ramp(x * 4, 1, 4), "float32x4") * T.broadcast(s, 4)
                              + T.cast(T.ramp(x * 4, 1, 4), "float32x4") * T.broadcast(s, 4))
    b[T.ramp(x * 4, 1, 4)] = T.ramp(x * 4, 1, 4) * 3 + T.ramp(x * 4, 1, 4) * 3


@T.prim_func
def vectors_expected(a: T.Buffer((16,), "float32"), b: T.Buffer((16,), "int32"), x: T.int32,
                     s: T.float32):
    cse_v3 = x * 4
    cse_v1 = T.cast(T.ramp(cse_v3, 1, 4), "float32x4") * T.broadcast(s, 4)
    a[T.ramp(cse_v3, 1, 4)] = cse_v1 + cse_v1
    cse_v2 = T.ramp(cse_v3, 1, 4) * 3
    b[T.ramp(cse_v3, 1, 4)] = cse_v2 + cse_v2


def test_vector_computations_are_commoned_ramps_stay():
    _check(vectors, vectors_expected)


# ----------------------------------------------------------------------------------------------
# identify_equiv_terms


@T.prim_func
def equiv_int(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    a[0] = x + y
    a[1] = y + x
    a[2] = (x + y) + z
    a[3] = z + (y + x)
    a[4] = x * (y - z)
    a[5] = x * y - z * x


@T.prim_func
def equiv_int_expected(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32, z: T.int32):
    cse_v3 = x + y
    a[0] = cse_v3
    a[1] = cse_v3
    cse_v1 = cse_v3 + z
    a[2] = cse_v1
    a[3] = cse_v1
    cse_v2 = x * (y - z)
    a[4] = cse_v2
    a[5] = cse_v2


def test_equivalent_integer_terms_commutativity_associativity_distributivity():
    _check(equiv_int, equiv_int_expected, identify_equiv_terms=True)
    # syntactically only x + y (a[0], in a[2]) and y + x (a[1], in a[3]) repeat
    assert _cse_names(_cse(equiv_int)) == ["cse_v1", "cse_v2"]


@T.prim_func
def equiv_float(a: T.Buffer((8,), "float32"), x: T.float32, y: T.float32, z: T.float32):
    a[0] = x + y
    a[1] = y + x
    a[2] = (x + y) + z
    a[3] = x + (y + z)
    a[4] = x * (y - z)
    a[5] = x * y - x * z


@T.prim_func
def equiv_float_expected(a: T.Buffer((8,), "float32"), x: T.float32, y: T.float32,
                         z: T.float32):
    cse_v1 = x + y
    a[0] = cse_v1
    a[1] = cse_v1
    a[2] = cse_v1 + z
    a[3] = x + (y + z)
    a[4] = x * (y - z)
    a[5] = x * y - x * z


def test_floats_are_identified_only_up_to_commutativity():
    _check(equiv_float, equiv_float_expected, identify_equiv_terms=True)


@T.prim_func
def equiv_wrap(a: T.Buffer((8,), "uint8"), x: T.uint8, y: T.uint8):
    a[0] = (x + T.uint8(200)) * T.uint8(2) + y
    a[1] = y + x * T.uint8(2) + T.uint8(144)


@T.prim_func
def equiv_wrap_expected(a: T.Buffer((8,), "uint8"), x: T.uint8, y: T.uint8):
    cse_v1 = (x + T.uint8(200)) * T.uint8(2) + y
    a[0] = cse_v1
    a[1] = cse_v1


def test_integer_normal_form_is_modulo_two_to_the_bits():
    # 200 * 2 = 400 = 144 (mod 256)
    _check(equiv_wrap, equiv_wrap_expected, identify_equiv_terms=True)


@T.prim_func
def cancelling(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
    for i in T.serial(4):
        a[i] = (i - i) * x
    a[4] = (y - y) * x


def test_equal_terms_over_different_variables_are_not_identified():
    # i - i and y - y are both 0, but a binding of i - i cannot leave the loop
    _unchanged(cancelling, identify_equiv_terms=True)


# ----------------------------------------------------------------------------------------------
# determinism and naming


def test_second_run_changes_nothing_and_names_continue():
    once = _cse(seed_cascade)
    assert CommonSubexprElim()(once) is once

    @T.prim_func
    def again(a: T.Buffer((8,), "int32"), x: T.int32, y: T.int32):
        cse_v1 = x * 2
        a[0] = cse_v1 + (x - y) * (x - y)

    after = _cse(again)
    assert _cse_names(after) == ["cse_v1", "cse_v2"]


def test_input_is_not_mutated():
    text = seed_cse.script()
    _cse(seed_cse)
    assert seed_cse.script() == text


# ----------------------------------------------------------------------------------------------
# differential tests: random kernels full of repeated subexpressions, interpreted before and after

N_OUT = 16


class _RandomKernel:
    """Builds a random kernel whose expressions often reuse earlier ones (so CSE has work),
    with loops, ifs, let statements, Let expressions, if_then_else (guarding divisions), selects,
    loads, casts, math calls and int32x4 vectors. Every store index is in bounds."""

    def __init__(self, seed: int):
        import random

        self.rng = random.Random(seed)
        self.out = ir.decl_buffer((N_OUT,), "int32", "out")
        self.fout = ir.decl_buffer((N_OUT,), "float32", "fout")
        self.inp = ir.decl_buffer((N_OUT,), "int32", "inp")
        self.scalars = [ir.Var(n, "int32") for n in ("x", "y", "z")]
        self.scope = list(self.scalars)  # int32 vars visible now
        self.pool: list = []  # (depth, expr): earlier expressions, reused to create duplicates
        self.depth = 0
        self.names = 0

    def func(self) -> ir.PrimFunc:
        body = self.block(3, 6)
        bufs = (self.out, self.fout, self.inp)
        return ir.PrimFunc(tuple(b.data for b in bufs) + tuple(self.scalars), body,
                           {b.data: b for b in bufs}, {"global_symbol": "random_kernel"})

    # -- scoping of the reuse pool --

    def _enter(self, var=None):
        self.depth += 1
        if var is not None:
            self.scope.append(var)

    def _leave(self, var=None):
        self.pool = [(d, e) for d, e in self.pool if d < self.depth]
        self.depth -= 1
        if var is not None:
            self.scope.remove(var)

    def _fresh(self, prefix):
        self.names += 1
        return ir.Var(f"{prefix}{self.names}", "int32")

    # -- expressions --

    def int_expr(self, depth: int):
        rng = self.rng
        if self.pool and rng.random() < 0.35:
            return rng.choice(self.pool)[1]
        if depth == 0 or rng.random() < 0.15:
            return rng.choice(self.scope) if rng.random() < 0.75 else ir.const(rng.randint(-3, 9))
        a, b = self.int_expr(depth - 1), self.int_expr(depth - 1)
        kind = rng.choice(["add", "add", "sub", "mul", "mul", "min", "max", "fdiv", "fmod",
                           "guard", "select", "ite", "load", "let", "cast", "bits"])
        if kind in ("guard", "select", "ite"):  # these use a and b twice: keep the IR SSA
            a, b = (e if _no_let(e) else rng.choice(self.scope) for e in (a, b))
        if kind == "add":
            e = a + b
        elif kind == "sub":
            e = a - b
        elif kind == "mul":
            e = a * b
        elif kind == "min":
            e = ir.Min(a, b)
        elif kind == "max":
            e = ir.Max(a, b)
        elif kind == "fdiv":
            e = ir.FloorDiv(a, ir.const(rng.choice([2, 3, 4, -5])))
        elif kind == "fmod":
            e = ir.FloorMod(a, ir.const(rng.choice([2, 3, 7])))
        elif kind == "guard":
            div = rng.choice([ir.FloorDiv, ir.Div, ir.FloorMod, ir.Mod])
            e = ir.Call("int32", "if_then_else", (ir.NE(b, 0), div(a, b), ir.const(1)))
        elif kind == "select":
            e = ir.Select(ir.LT(a, b), a * 2, b + 1)
        elif kind == "ite":
            e = ir.Call("int32", "if_then_else", (ir.GE(a, b), a - b, b * a))
        elif kind == "load":
            e = ir.BufferLoad(self.inp, (ir.FloorMod(a, N_OUT),)) + b
        elif kind == "let":
            v = self._fresh("t")
            value = a
            self._enter(v)
            body = self.int_expr(depth - 1) + v
            self._leave(v)
            e = ir.Let(v, value, body)
        elif kind == "cast":
            e = ir.Cast("int32", ir.Call("float32", "floor", (ir.Cast("float32", a) * 0.5,)))
        else:
            e = ir.Call("int32", rng.choice(["bitwise_and", "bitwise_xor", "shift_right"]),
                        (a, ir.const(rng.randint(0, 5)) if rng.random() < 0.5 else b))
            if e.op == "shift_right":
                e = ir.Call("int32", "shift_right", (a, ir.const(rng.randint(0, 5))))
        # keep kernels small (reuse only small terms) and SSA (never reuse a Let)
        if sum(1 for _ in ir.walk(e)) <= 24 and _no_let(e):
            self.pool.append((self.depth, e))
        return e

    def shared_expr(self, depth: int):
        """An int expression that may appear twice (so it contains no Let)."""
        e = self.int_expr(depth)
        return e if _no_let(e) else self.rng.choice(self.scope)

    def float_expr(self):
        a = ir.Cast("float32", self.shared_expr(2))
        b = ir.Cast("float32", self.shared_expr(2))
        exp = ir.Call("float32", "exp", (a * 0.125,))
        f = self.rng.choice([
            lambda: exp * ir.Call("float32", "exp", (a * 0.125,)),
            lambda: ir.Call("float32", "sqrt", (ir.Call("float32", "fabs", (a,)),)) * b,
            lambda: (a + b) * (a + b) - a / (ir.Call("float32", "fabs", (b,)) + 1.0),
        ])
        return f()

    def vec_expr(self):
        a, b = self.shared_expr(2), self.shared_expr(2)
        ramp = ir.Ramp(a, self.rng.choice([1, 2]), 4)
        bc = ir.Broadcast(b, 4)
        return self.rng.choice([
            lambda: (ramp + bc) * (ramp + bc),
            lambda: ir.Max(ramp * bc, bc - ramp) + ramp * bc,
        ])()

    def cond(self):
        a, b = self.int_expr(2), self.int_expr(2)
        c = self.rng.choice([ir.LT, ir.GE, ir.NE])(a, b)
        if self.rng.random() < 0.3:
            c = ir.And(c, ir.LT(self.int_expr(1), self.int_expr(1)))
        return c

    # -- statements --

    def store(self):
        rng = self.rng
        r = rng.random()
        index = ir.const(rng.randrange(N_OUT)) if rng.random() < 0.5 else \
            ir.FloorMod(self.int_expr(2), N_OUT)
        if r < 0.15:
            return self.fout.store(self.float_expr(), index)
        if r < 0.3:
            return self.out.store(self.vec_expr(), ir.Ramp(ir.const(4 * rng.randrange(4)), 1, 4))
        return self.out.store(self.int_expr(3), index)

    def block(self, depth: int, length: int):
        items = []
        for k in range(self.rng.randint(1, length)):
            r = self.rng.random()
            if depth > 0 and r < 0.15:
                v = self._fresh("i")
                extent = self.rng.randint(0, 3)
                self._enter(v)
                body = self.block(depth - 1, 3)
                self._leave(v)
                items.append(ir.For(v, 0, extent, "serial", body))
            elif depth > 0 and r < 0.3:
                cond = self.cond()
                self._enter()
                then = self.block(depth - 1, 3)
                self._leave()
                self._enter()
                other = self.block(depth - 1, 3) if self.rng.random() < 0.6 else None
                self._leave()
                items.append(ir.IfThenElse(cond, then, other))
            elif depth > 0 and r < 0.4:
                v = self._fresh("v")
                value = self.int_expr(3)
                self._enter(v)
                body = self.block(depth - 1, 4)
                self._leave(v)
                items.append(ir.LetStmt(v, value, body))
                break  # the let's body is the rest of this block
            else:
                items.append(self.store())
        return ir.seq(*items)


def _no_let(expr) -> bool:
    return not any(isinstance(n, ir.Let) for n in ir.walk(expr))


def _kernel_args(func, seed):
    """Random out, fout, inp and the int scalars (in [-6, 7)) of a _RandomKernel's function."""
    rng = np.random.default_rng(seed)
    return random_arguments(func, rng, scalars=lambda p: int(rng.integers(-6, 7)))


def _run_random(func, seed):
    args = _kernel_args(func, seed)
    vkir.interpret(func, *args)
    return args[0], args[1]


@pytest.mark.parametrize("equiv", [False, True])
def test_random_kernels_compute_the_same_after_cse(equiv):
    changed = 0
    for seed in range(25):
        func = _RandomKernel(seed).func()
        verify_types(func)
        verify_well_formed(func)
        after = _cse(func, identify_equiv_terms=equiv)
        changed += after is not func
        vkir.assert_structural_equal(vkir.from_script(after.script()), after)
        for input_seed in range(2):
            want = _run_random(func, input_seed)
            got = _run_random(after, input_seed)
            np.testing.assert_array_equal(got[0], want[0], err_msg=f"seed {seed}")
            np.testing.assert_array_equal(got[1], want[1], err_msg=f"seed {seed}")
    assert changed >= 20  # the generator really produces common subexpressions


def test_batched_rounds_give_exactly_the_one_binding_per_round_result():
    from vkir.transform.common_subexpr_elim import eliminate

    for seed in range(12):
        func = _RandomKernel(100 + seed).func()
        for equiv in (False, True):
            batched = func.with_body(eliminate(func.body, equiv))
            reference = func.with_body(eliminate(func.body, equiv, batched=False))
            assert batched.script() == reference.script(), f"seed {100 + seed}"


def test_skipping_the_final_scan_gives_the_scan_until_nothing_is_left_result(monkeypatch):
    from vkir.lowering import default_passes
    from vkir.ops import conv2d, layer_norm, matmul
    from vkir.transform import common_subexpr_elim as cse

    scans = []

    class CountingScan(cse.Scan):
        def __init__(self, keys):
            super().__init__(keys)
            scans.append(self)

    monkeypatch.setattr(cse, "Scan", CountingScan)
    passes = default_passes()
    before_cse = passes[:[p.name for p in passes].index("CommonSubexprElim")]

    def as_cse_gets_it(func):
        for p in before_cse:
            func = p(func)
        return func

    funcs = [_RandomKernel(200 + seed).func() for seed in range(25)]
    funcs += [as_cse_gets_it(f) for f in (matmul.kernel(64, 48, 32), layer_norm.kernel(4, 128),
                                          conv2d.kernel(1, 8, 16, 16, 8, 3, 3, padding=1))]
    skipped = 0
    for func in funcs:
        for equiv in (False, True):
            del scans[:]
            fast = func.with_body(cse.eliminate(func.body, equiv))
            fast_scans = len(scans)
            del scans[:]
            reference = func.with_body(cse.eliminate(func.body, equiv, skip_final_scan=False))
            assert fast.script() == reference.script(), func.name
            assert fast_scans in (len(scans), len(scans) - 1)
            skipped += fast_scans < len(scans)
    assert skipped >= 20  # the skip is taken on most kernels


def test_a_variable_object_bound_in_two_sibling_scopes_is_two_variables():
    # not SSA (verify_well_formed would object), but CSE must still not hoist i * 4 + 1 out of
    # the loops, where i is unbound
    i, n = ir.Var("i", "int32"), ir.Var("n", "int32")
    a = ir.decl_buffer((64,), "int32", "a")
    loop = ir.For(i, 0, n, "serial", ir.seq(a.store(i * 4 + 1, i), a.store(i * 4 + 1, i + 1)))
    func = ir.PrimFunc((a.data, n), ir.seq(loop, loop), {a.data: a})
    after = CommonSubexprElim()(func)
    loops = [s for s in after.body.seq]
    assert len(loops) == 2 and all(isinstance(s, ir.For) for s in loops)
    for s in loops:
        assert isinstance(s.body, ir.LetStmt) and s.body.value == i * 4 + 1


# ----------------------------------------------------------------------------------------------
# SPIR-V: fewer instructions


@T.prim_func
def stencil(a: T.Buffer((1024,), "float32"), b: T.Buffer((1024,), "float32")):
    for bx in T.thread_binding(16, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            b[(bx * 64 + tx) // 32 * 32 + (bx * 64 + tx) % 32] = (
                a[(bx * 64 + tx) // 32 * 32 + (bx * 64 + tx) % 32]
                + a[((bx * 64 + tx) // 32 + 1) % 32 * 32 + (bx * 64 + tx) % 32]
                + a[(bx * 64 + tx) // 32 * 32 + ((bx * 64 + tx) % 32 + 1) % 32])


def _instruction_count(module) -> int:
    from vkir.spirv import disassemble

    return sum(1 for line in disassemble(module.words).splitlines()
               if line.strip() and not line.lstrip().startswith(";"))


_INTEGER_ARITHMETIC = re.compile(
    r"= Op(?:[ISU](?:Add|Sub|Mul|Div|Mod|Rem)|ShiftRightLogical|ShiftRightArithmetic|"
    r"ShiftLeftLogical|BitwiseAnd) ")


def _arithmetic_count(module) -> int:
    """Integer arithmetic instructions: what index CSE removes."""
    from vkir.spirv import disassemble

    return len(_INTEGER_ARITHMETIC.findall(disassemble(module.words)))


def test_repeated_index_arithmetic_gives_fewer_spirv_instructions():
    from vkir.spirv import codegen, validate

    after = _cse(stencil)
    assert _cse_names(after) == ["cse_v5", "cse_v3", "cse_v2", "cse_v4", "cse_v1"]
    before_module, after_module = codegen(stencil), codegen(after)
    validate(after_module.words)
    before_count, after_count = _instruction_count(before_module), _instruction_count(after_module)
    before_arith, after_arith = _arithmetic_count(before_module), _arithmetic_count(after_module)
    # measured: 107 -> 89 instructions, of which integer arithmetic 38 -> 15
    assert after_count < before_count - 10, (before_count, after_count)
    assert 2 * after_arith < before_arith, (before_arith, after_arith)
    assert len(after_module.words) < len(before_module.words)
    a = np.random.default_rng(0).standard_normal(1024).astype("float32")
    want, got = np.zeros(1024, "float32"), np.zeros(1024, "float32")
    vkir.interpret(stencil, a, want)
    vkir.interpret(after, a, got)
    np.testing.assert_array_equal(got, want)


def test_default_pipeline_with_cse_gives_fewer_spirv_instructions():
    from vkir.lowering import default_passes
    from vkir.spirv import codegen

    without = stencil
    for p in default_passes():
        if not isinstance(p, CommonSubexprElim):
            without = p(without)
    lowered = vkir.lower(stencil)
    assert _cse_names(lowered)  # CSE is part of the default pipeline
    # measured: 100 -> 91 instructions, of which integer arithmetic 30 -> 17 (Simplify and the
    # codegen's shifts for power-of-two division already remove part of the repetition)
    assert _instruction_count(codegen(lowered)) < _instruction_count(codegen(without))
    assert _arithmetic_count(codegen(lowered)) < _arithmetic_count(codegen(without)) - 10


@pytest.mark.device
def test_cse_kernels_run_on_the_device_like_the_originals_interpreted(device):
    a = np.random.default_rng(0).standard_normal(1024).astype("float32")
    want, got = np.zeros(1024, "float32"), np.zeros(1024, "float32")
    vkir.interpret(stencil, a, want)
    vkir.build(stencil, device=device)(a, got)  # the default pipeline includes CSE
    np.testing.assert_array_equal(got, want)
    for seed in range(8):
        func = _RandomKernel(seed).func()
        for equiv in (False, True):
            kernel = vkir.build(_cse(func, identify_equiv_terms=equiv), device=device)
            out, fout, inp, *scalars = _kernel_args(func, seed)
            want_out, want_fout = out.copy(), fout.copy()
            vkir.interpret(func, want_out, want_fout, inp, *scalars)
            kernel(out, fout, inp, *scalars)
            np.testing.assert_array_equal(out, want_out, err_msg=f"seed {seed}")
            np.testing.assert_allclose(fout, want_fout, rtol=1e-4, atol=1e-4,
                                       err_msg=f"seed {seed}")
