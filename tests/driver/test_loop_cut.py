"""A loop whose count is read from a buffer runs whole, or the call raises LoopLimitError naming
the loop the driver cut: never a silent short result. llvmpipe (quirk loop_trip_limit_65535)
stops every loop of an invocation after 65535 back edges in all; vkir splits such loops as far as
it goes and, past that, the loop's check reports the cut. Drivers without the limit run whole."""

import numpy as np
import pytest

import vkir
from vkir.driver.loop_budget import loops_for_call
from vkir.driver.loop_cut import LoopCheckedKernel, instrument, needs_checks
from vkir.errors import LoopLimitError, UnsupportedError
from vkir.ir import For
from vkir.ir.traversal import walk
from vkir.quirks import LAVAPIPE, LOOP_TRIP_LIMIT
from vkir.spirv.codegen.loop_cut import RECORD, SITE

WHILE = vkir.from_script('''
@T.prim_func
def while_data(a: T.Buffer((1,), "int32"), n: T.Buffer((1,), "int32")):
    k = 0
    while k < n[0]:
        k += 1
    a[0] = k
''')

SERIAL = vkir.from_script('''
@T.prim_func
def serial_data(a: T.Buffer((1,), "int32"), n: T.Buffer((1,), "int32")):
    s = 0
    for j in T.serial(n[0]):
        s += 1
    a[0] = s
''')

NEST = vkir.from_script('''
@T.prim_func
def nest_data(a: T.Buffer((1,), "int32"), n: T.Buffer((2,), "int32")):
    s = 0
    for i in T.serial(n[0]):
        for j in T.serial(n[1]):
            s += 1
    a[0] = s
''')

# a while loop drains the budget exactly, and a loop of known length after it is the one cut
DRAIN = vkir.from_script('''
@T.prim_func
def drain(a: T.Buffer((2,), "int32"), n: T.Buffer((1,), "int32"), m: T.int32):
    k = 0
    while k < n[0]:
        k += 1
    s = 0
    for j in T.serial(m):
        s += 1
    a[0] = k
    a[1] = s
''')

ATOMIC_WHILE = vkir.from_script('''
@T.prim_func
def atomic_while(a: T.Buffer((1,), "int32"), n: T.Buffer((1,), "int32")):
    while T.atomic_add(a[0], 1) < n[0] - 1:
        pass
''')


def limited(device) -> bool:
    return LOOP_TRIP_LIMIT in device.info.quirks


def call(k, count, n, size=1):
    a = np.zeros(size, np.int32)
    k(a, np.array(n, np.int32), *count)
    return a


# -- without a device ----------------------------------------------------------------------------
def test_only_kernels_with_loops_of_data_dependent_length_are_checked():
    assert needs_checks(WHILE, LAVAPIPE) and needs_checks(SERIAL, LAVAPIPE)
    assert needs_checks(NEST, LAVAPIPE) and needs_checks(DRAIN, LAVAPIPE)
    assert not needs_checks(SERIAL, frozenset())   # a driver without the limit: nothing
    bounded = vkir.from_script('''
@T.prim_func
def bounded(a: T.Buffer((1,), "int32"), m: T.int32):
    for i in T.serial(m):
        for j in T.serial(4):
            a[0] = a[0] + 1
''')
    assert not needs_checks(bounded, LAVAPIPE)


def test_every_loop_of_a_checked_kernel_gets_a_site():
    checked, sites = instrument(DRAIN)
    assert checked.params[-1].name == RECORD and len(checked.params) == len(DRAIN.params) + 1
    assert [s.loop for s in sites] == ["while", "j"]
    assert sites[1].source_line.strip() == "for j in T.serial(m):"
    assert sites[1].location.endswith(":8:5")
    loops = [n for n in walk(checked.body) if isinstance(n, For)]
    assert [dict(f.annotations) for f in loops] == [{SITE: 1}]


def test_an_impure_while_condition_is_evaluated_once_per_iteration():
    checked, _ = instrument(ATOMIC_WHILE)
    text = str(checked)
    assert text.count("T.atomic_add") == 2   # before the loop and at the end of each iteration
    assert "vkir_loop_go" in text


def test_a_counting_while_loop_keeps_its_bound_when_checked():
    """A serial loop that may break is a while loop over a counter; its check's flag, set after
    the count, leaves the loop budget's bound of it alone."""
    f = vkir.from_script('''
@T.prim_func
def first(a: T.Buffer((8,), "int32"), n: T.Buffer((1,), "int32"), m: T.int32):
    for j in T.serial(n[0]):
        a[0] = a[0] + 1
    for i in T.serial(m):
        if a[i % 8] > 3:
            break
''')
    checked, sites = instrument(f)
    assert [s.loop for s in sites] == ["j", "i"]
    m = checked.params[2]
    loops = loops_for_call(vkir.lower(checked), {m: 1000})
    assert [lp.trips for lp in loops] == [None, 1000]


# -- on the device -------------------------------------------------------------------------------
@pytest.mark.device
def test_a_long_while_loop_runs_whole_or_reports_the_cut(device):
    k = vkir.build(WHILE, device=device)
    assert isinstance(k, LoopCheckedKernel) == limited(device)
    assert call(k, (), [100])[0] == 100
    # the most a while loop split by 16 runs: the driver's last back edge ends it, no report
    assert call(k, (), [65_535 * 16])[0] == 65_535 * 16
    if limited(device):
        with pytest.raises(LoopLimitError, match=r"while loop at <script>:5:5 was cut short") as e:
            call(k, (), [1_500_000])
        assert e.value.loop == "while" and e.value.location == "<script>:5:5"
        assert "while k < n[0]:" in str(e.value) and "scalar arguments" in str(e.value)
        assert isinstance(e.value, UnsupportedError)
        assert call(k, (), [100])[0] == 100   # the next call starts from a clean record
    else:
        assert call(k, (), [1_500_000])[0] == 1_500_000


@pytest.mark.device
def test_a_serial_loop_of_a_count_read_from_a_buffer(device):
    k = vkir.build(SERIAL, device=device)
    assert call(k, (), [70_000])[0] == 70_000   # split by 64 on llvmpipe
    assert call(k, (), [65_535 * 64])[0] == 65_535 * 64   # the most that split runs
    if limited(device):
        with pytest.raises(LoopLimitError, match=r"the loop over j at <script>:5:5") as e:
            call(k, (), [5_000_000])
        assert e.value.loop == "j"
    else:
        assert call(k, (), [5_000_000])[0] == 5_000_000


@pytest.mark.device
def test_a_nest_of_loops_read_from_a_buffer(device):
    k = vkir.build(NEST, device=device)
    assert call(k, (), [300, 300])[0] == 90_000
    if limited(device):
        assert len(k.kernel._variants) == 1 and k.kernel._variants   # the inner loop split only
        with pytest.raises(LoopLimitError, match=r"the loop over j at <script>:6:9"):
            call(k, (), [3000, 3000])
    else:
        assert call(k, (), [3000, 3000])[0] == 9_000_000


@pytest.mark.device
def test_the_first_cut_is_reported_even_in_a_loop_of_known_length(device):
    k = vkir.build(DRAIN, device=device)
    np.testing.assert_array_equal(call(k, (10,), [1000], 2), [1000, 10])
    drained = 65_530 * 16   # 65530 back edges of the while loop split by 16
    if limited(device):
        with pytest.raises(LoopLimitError, match=r"the loop over j at <script>:8:5"):
            call(k, (10,), [drained], 2)
    else:
        np.testing.assert_array_equal(call(k, (10,), [drained], 2), [drained, 10])


@pytest.mark.device
def test_a_while_loop_with_an_atomic_condition(device):
    k = vkir.build(ATOMIC_WHILE, device=device)
    assert call(k, (), [50])[0] == 50
    if limited(device):
        with pytest.raises(LoopLimitError, match="while loop"):
            call(k, (), [1_500_000])
    else:
        assert call(k, (), [1_500_000])[0] == 1_500_000


@pytest.mark.device
def test_launches_and_sequences_report_the_cut(device):
    k = vkir.build(WHILE, device=device)
    a = vkir.array(np.zeros(1, np.int32), device=device)
    short = vkir.array(np.array([7], np.int32), device=device)
    long = vkir.array(np.array([1_500_000], np.int32), device=device)
    k.launch(a, short).wait(timeout=60)
    assert a.numpy()[0] == 7
    with vkir.sequence(device=device) as good:
        k(a, short)
    good.wait(timeout=60)
    with vkir.sequence(device=device) as bad:
        k(a, short)
        k(a, long)
    handle = k.launch(a, long)
    if limited(device):
        with pytest.raises(LoopLimitError):
            bad.wait(timeout=60)
        with pytest.raises(LoopLimitError):
            handle.wait(timeout=60)
        good.run().wait(timeout=60)   # a replay starts from a clean record
    else:
        bad.wait(timeout=60)
        handle.wait(timeout=60)
        assert a.numpy()[0] == 1_500_000


@pytest.mark.device
def test_profile_reports_the_cut_as_a_call_does(device):
    """Kernel.profile runs the checked kernel too: a cut in its runs raises, numpy or device
    arrays (it returned the cut count with no error)."""
    k = vkir.build(WHILE, device=device)
    a = np.zeros(1, np.int32)
    k.profile(a, np.array([7], np.int32), repeat=2)   # no cut: no error
    assert a[0] == 7
    long = np.array([1_500_000], np.int32)
    for args in ((np.zeros(1, np.int32), long),
                 (vkir.zeros(1, "int32", device=device), vkir.array(long, device=device))):
        if limited(device):
            with pytest.raises(LoopLimitError, match="while loop"):
                k.profile(*args, repeat=1, warmup=0)
        else:
            k.profile(*args, repeat=1, warmup=0)


@pytest.mark.device
def test_bounds_checks_and_loop_checks_together(device):
    k = vkir.build(SERIAL, device=device, check_bounds=True)
    assert call(k, (), [1000])[0] == 1000
    if limited(device):
        with pytest.raises(LoopLimitError, match="loop over j"):
            call(k, (), [5_000_000])


@pytest.mark.device
def test_a_kernel_with_bounded_loops_has_no_record(device):
    k = vkir.build(vkir.from_script('''
@T.prim_func
def count(a: T.Buffer((1,), "int32"), n: T.int32):
    for j in T.serial(n):
        a[0] = a[0] + 1
'''), device=device)
    assert not isinstance(k, LoopCheckedKernel)
    assert len(k.module.bindings) == 1 and "atomic" not in k.asm.lower()


PER_INVOCATION = vkir.from_script('''
@T.prim_func
def per_invocation(a: T.Buffer((64,), "int32"), n: T.Buffer((64,), "int32")):
    for bx in T.thread_binding(2, "blockIdx.x"):
        for tx in T.thread_binding(32, "threadIdx.x"):
            i = bx * 32 + tx
            k = 0
            while k < n[i]:
                k += 1
            s = 0
            for j in T.serial(n[63 - i]):
                s += 1
            a[i] = k + s
''')


@pytest.mark.device
def test_loops_of_many_invocations(device):
    k = vkir.build(PER_INVOCATION, device=device)
    n = np.arange(64, dtype=np.int32) * 1000
    a = np.zeros(64, np.int32)
    k(a, n)
    np.testing.assert_array_equal(a, n + n[::-1])
    n[37] = 2_000_000
    if limited(device):
        with pytest.raises(LoopLimitError, match="while loop"):
            k(a, n)
    else:
        k(a, n)
        np.testing.assert_array_equal(a, n + n[::-1])


# a while loop leaves 1 back edge of the budget; the float // after it needs 2 (its exponent
# difference is about 120, 8 steps an iteration): codegen's loop for it is cut, which the
# end-of-kernel probe sees
HIDDEN = vkir.from_script('''
@T.prim_func
def hidden(a: T.Buffer((2,), "float32"), out: T.Buffer((2,), "float32"),
           n: T.Buffer((1,), "int32")):
    k = 0
    while k < n[0]:
        k += 1
    out[0] = a[0] // a[1]
    out[1] = T.cast(k, "float32")
''')


@pytest.mark.device
def test_a_cut_in_a_loop_codegen_makes_is_reported(device):
    k = vkir.build(HIDDEN, device=device)
    a = np.array([3e30, 7e-7], np.float32)
    out = np.zeros(2, np.float32)
    k(a, out, np.array([1000], np.int32))
    np.testing.assert_array_equal(out, [a[0] // a[1], 1000])
    n = np.array([65_534 * 16], np.int32)
    if limited(device):
        with pytest.raises(LoopLimitError, match="a loop vkir makes for a float //") as e:
            k(a, out, n)
        assert e.value.loop is None
    else:
        k(a, out, n)
        np.testing.assert_array_equal(out, [a[0] // a[1], 65_534 * 16])
