"""`python -m vkir.tools.fuzz --count N --seed S`: run the campaign, print a table of outcomes per
feature, the mismatches each known driver class explained (known.py: counted, not findings) and
the findings; exit status 1 when there is any finding. Each program runs in a worker
process and may take at most --timeout seconds (interpretation, build and run): one that takes
longer is killed and recorded as a "timeout" finding, and the campaign goes on."""

from __future__ import annotations

import argparse
import math
import pathlib
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vkir.tools.fuzz", description=__doc__)
    parser.add_argument("--count", type=int, default=200, help="programs to run (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    parser.add_argument("--mutants", type=float, default=0.3,
                        help="fraction of mutated sources (default 0.3)")
    parser.add_argument("--only", type=int, default=None, help="run only this program index")
    parser.add_argument("--offline", action="store_true",
                        help="no device: build and validate SPIR-V for lavapipe only")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help="directory for the sources of the findings")
    parser.add_argument("--show", action="store_true", help="print each finding's source")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds a program may take before it is killed and recorded as a "
                             "timeout (default 60; 0: no limit, programs run in this process)")
    args = parser.parse_args(argv)
    if args.count < 0:
        parser.error("--count must be >= 0")
    if not 0 <= args.timeout < math.inf:
        parser.error("--timeout must be a number of seconds >= 0")

    from . import run

    device = None
    if not args.offline:
        import vkir

        device = vkir.device()
    report = run(args.count, args.seed, device, args.mutants, args.only,
                 log=lambda line: print(line, file=sys.stderr),
                 timeout=args.timeout or None)
    where = device.info.name if device is not None else "offline (lavapipe target)"
    print(f"seed {args.seed}: {len(report.outcomes)} programs in {report.seconds:.1f} s on "
          f"{where}\n")
    print(report.table())
    known = report.known
    print(f"\n{sum(known.values())} mismatch(es) of known driver classes")
    for name, count in sorted(known.items()):
        print(f"- {name}: {count}")
    findings = report.findings
    print(f"\n{len(findings)} finding(s)")
    for o in findings:
        print(f"- [{args.seed}:{o.index}] {o.kind}: {o.detail.splitlines()[0]}")
        if args.show:
            print(o.source)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{args.seed}-{o.index}-{o.kind}.py").write_text(
                f"# {o.kind}: {o.detail}\n" + o.source)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
