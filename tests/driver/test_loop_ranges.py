"""A loop whose range passes its variable's type (int32 past INT32_MAX) gives one answer on the
device and in the interpreter: the same ArgumentError, raised by the Kernel before the dispatch
where the call's sizes and scalars fix the loop's bounds (vkir.driver.loop_ranges), where
lavapipe used to refuse the loop budget and SwiftShader to run no iteration."""

import numpy as np
import pytest

import vkir
from vkir.driver.loop_ranges import check_call
from vkir.errors import ArgumentError

PAST = vkir.from_script('''
@T.prim_func
def past(out: T.Buffer((1,), "int32"), n: T.int32):
    for i in T.serial(n, n + 20):
        out[0] = out[0] + 1
''')

# the bounds come through a let of the scalar, inside a branch the call does not take
LET_UNREACHED = vkir.from_script('''
@T.prim_func
def let_unreached(out: T.Buffer((4,), "int32"), n: T.int32):
    m = n + 7
    if n < 0:
        for i in T.serial(m, m + 4):
            out[i - m] = i
''')


def _interpreter_error(func, *args) -> str:
    with pytest.raises(ArgumentError) as info:
        vkir.interpret(func, *args)
    return str(info.value)


def test_the_host_check_names_the_loop_its_range_and_line():
    n = PAST.params[1]
    check_call(PAST, {n: 2147483627}, "past")   # its end, n + 20, is INT32_MAX: fits
    with pytest.raises(ArgumentError, match=r"kernel past: loop i \(int32\) would run from "
                       r"2147483640 to 2147483659: its end, min \+ extent = 2147483660, passes "
                       r"the int32 maximum 2147483647 at <script>:4:5\n"
                       r"    for i in T.serial\(n, n \+ 20\)"):
        check_call(PAST, {n: 2147483640}, "past")


@pytest.mark.device
@pytest.mark.parametrize("func, size, n", [(PAST, 1, 2147483640), (PAST, 1, 2147483628),
                                           (LET_UNREACHED, 4, 2147483640)])
def test_the_kernel_refuses_before_the_dispatch_as_the_interpreter_does(device, func, size, n):
    """n = 2147483628: the last value would be INT32_MAX, the end n + 20 wraps (lavapipe ran
    no iteration where the interpreter ran 20)."""
    kernel = vkir.build(func, device=device)
    out = np.zeros(size, np.int32)
    expected = _interpreter_error(func, out.copy(), n)
    with pytest.raises(ArgumentError) as info:
        kernel(out, n)
    assert str(info.value) == expected
    assert not out.any()   # nothing ran


@pytest.mark.device
def test_a_range_ending_at_int32_max_runs_whole_on_the_device(device):
    kernel = vkir.build(PAST, device=device)
    out, reference = np.zeros(1, np.int32), np.zeros(1, np.int32)
    kernel(out, 2147483627)
    vkir.interpret(PAST, reference, 2147483627)
    assert out[0] == reference[0] == 20
