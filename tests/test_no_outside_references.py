"""Nothing in the repository refers to a design document that is not in it: the documentation
users get is README.md and docs/."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_reference_to_a_design_document_outside_the_repository():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    words = ("DESIGN" + ".md", "DESIGN" + " section")  # spelled apart: this file is not a hit
    hits = []
    for name in files:
        path = ROOT / name
        if path.suffix in {".py", ".md", ".toml", ".txt", ".cfg", ".comp", ""} and path.is_file():
            text = path.read_text(errors="replace")
            if any(w in text for w in words):
                hits.append(name)
    assert not hits, hits
