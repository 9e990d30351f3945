"""Parsing is linear in the source size: spans look their line up in lines split once (splitting
the whole text per span made a 539 KiB script run out of memory)."""

import time

import pytest

import vkir
from vkir.script.diagnostics import Source


def script(statements):
    body = "\n".join(f"        b[i] = b[i] + a[i] * T.float32({k}.0)" for k in range(statements))
    return f'''
@T.prim_func
def f(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
    for i in T.thread_binding(64, "threadIdx.x"):
{body}
'''


def parse_seconds(statements):
    """The best of three parses (garbage collection off: its pauses are not the parser's)."""
    import gc

    text = script(statements)
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            start = time.perf_counter()
            vkir.from_script(text)
            best = min(best, time.perf_counter() - start)
    finally:
        gc.enable()
    return best


def test_lines_are_split_once():
    src = Source("a\nb\nc")
    assert src.lines == ("a", "b", "c") and src.lines is src.lines
    assert src.line(2) == "b" and src.line(9) == ""


@pytest.mark.timing
def test_sixteen_times_the_source_takes_about_sixteen_times_as_long():
    small, large = parse_seconds(200), parse_seconds(3200)
    assert large < 64 * small, (small, large)   # linear: ~16x; quadratic was ~256x
