"""The README's subgroup reduction runs as written, in the interpreter and on the device."""

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.device
def test_readme_subgroup_reduction(device, tmp_path):
    text = (ROOT / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "def total(" in b]
    script = tmp_path / "readme_total.py"   # the parser reads the source from a file
    script.write_text("import numpy as np\nimport vkir\nfrom vkir import T\n" + block)
    env = runpy.run_path(str(script))
    values, result = env["values"], env["result"]
    assert result[0] == pytest.approx(2 * float(values.astype(np.float64).sum()), rel=1e-5)
