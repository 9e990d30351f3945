"""The same input gives byte-identical scripts every time, also across processes with
different string-hash seeds (set/dict iteration order must not leak into the output)."""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = f'''
import sys
sys.path[:0] = [{str(HERE)!r}, {str(HERE / "transform")!r}]
import test_common_subexpr_elim as M
from vkir.transform import CommonSubexprElim
funcs = [M.seed_cse, M.seed_cascade, M.stencil] + [M._RandomKernel(s).func() for s in range(4)]
for f in funcs:
    for equiv in (False, True):
        print(CommonSubexprElim(identify_equiv_terms=equiv)(f).script())
'''


def _run(hash_seed):
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                         timeout=60, cwd=HERE.parent)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cse_output_is_byte_identical_across_processes():
    first, second = _run(1), _run(12345)
    assert "cse_v1" in first
    assert first == second
