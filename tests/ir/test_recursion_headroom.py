"""recursion_headroom is safe with threads: the process-wide limit is raised, never lowered under
a thread that is still deep in its walk."""

import sys
import threading

from vkir.ir.structural import recursion_headroom


def test_one_thread_leaving_never_lowers_the_limit_under_another():
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()
    seen = []

    def a():
        with recursion_headroom():
            a_inside.set()
            b_inside.wait(10)
        a_left.set()

    def b():
        a_inside.wait(10)
        with recursion_headroom():
            b_inside.set()
            a_left.wait(10)
            seen.append(sys.getrecursionlimit())   # A has left; B is still walking

    try:
        threads = [threading.Thread(target=a), threading.Thread(target=b)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert seen == [20000]
        assert sys.getrecursionlimit() == 20000
    finally:
        sys.setrecursionlimit(max(previous, sys.getrecursionlimit()))


def test_what_parses_does_not_depend_on_the_recursion_limit():
    """With the limit raised for good, Python's own parser takes deeper expressions than before;
    the script parser keeps its fixed bound (deeper ones would exhaust the limit later on)."""
    import pytest

    import vkir

    text = ('def f(A: T.Buffer((4,), "float32")):\n'
            "    A[0] = " + " + ".join(["A[1]"] * 3000) + "\n")
    with recursion_headroom():
        with pytest.raises(vkir.ScriptError, match=r"^<script>:2:5: expression nested too deep"):
            vkir.from_script(text)
