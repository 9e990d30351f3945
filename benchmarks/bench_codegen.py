"""Compile-time benchmark of the SPIR-V backend: vector add, PrimFunc -> validated SPIR-V words.

    .venv/bin/python benchmarks/bench_codegen.py [--repeat N]

Reports the first (cold: grammar JSON, SPIRV-Tools library and context loaded) compile and the
median/min of warm compiles, split into emission and in-process validation.
"""

from __future__ import annotations

import argparse
import statistics
import time

from vkir.ir import (Add, BufferLoad, BufferStore, FloorDiv, For, IfThenElse, LT, LetStmt, Mul,
                     PrimFunc, Var, decl_buffer)


def vector_add() -> PrimFunc:
    n = Var("n")
    a, b, c = (decl_buffer((n,), "float32", name) for name in "ABC")
    bx, tx, i = Var("bx"), Var("tx"), Var("i")
    body = IfThenElse(LT(i, n), BufferStore(c, Add(BufferLoad(a, (i,)), BufferLoad(b, (i,))),
                                            (i,)))
    body = LetStmt(i, Add(Mul(bx, 64), tx), body)
    body = For(bx, 0, FloorDiv(Add(n, 63), 64), "thread_binding",
               For(tx, 0, 64, "thread_binding", body, thread="threadIdx.x"),
               thread="blockIdx.x")
    return PrimFunc((a.data, b.data, c.data), body, {a.data: a, b.data: b, c.data: c},
                    {"global_symbol": "vadd"})


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)

    func = vector_add()
    t0 = time.perf_counter()
    from vkir.spirv import Target, codegen, validate
    from vkir.spirv.codegen.emitter import KernelEmitter

    codegen(func)
    cold = time.perf_counter() - t0

    target = Target()
    total, emit, check = [], [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        words = KernelEmitter(func, target).run()
        t1 = time.perf_counter()
        validate(words, target.env)
        t2 = time.perf_counter()
        codegen(func, target)
        t3 = time.perf_counter()
        emit.append(t1 - t0)
        check.append(t2 - t1)
        total.append(t3 - t2)
    ms = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
    result = {"cold_ms": cold * 1e3, "codegen_median_ms": ms(total),
              "codegen_min_ms": min(total) * 1e3, "emit_median_ms": ms(emit),
              "validate_median_ms": ms(check), "words": len(words) // 4}
    print(f"vector add, PrimFunc -> validated SPIR-V ({result['words']} words), "
          f"{args.repeat} runs")
    print(f"  cold (first compile, loads grammar + SPIRV-Tools): {result['cold_ms']:.2f} ms")
    print(f"  warm codegen + validate: median {result['codegen_median_ms']:.3f} ms, "
          f"min {result['codegen_min_ms']:.3f} ms")
    print(f"    emission {result['emit_median_ms']:.3f} ms, "
          f"validation {result['validate_median_ms']:.3f} ms")
    return result


if __name__ == "__main__":
    main()
