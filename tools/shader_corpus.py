"""Compare `vkir validate` and `vkir.load_spirv` with glslangValidator + spirv-val over a corpus of
public compute shaders.

    python tools/shader_corpus.py OUT_DIR REPO=GIT_DIR[@REV] ...

Each REPO=GIT_DIR names a git repository (a bare mirror works: files are read with `git show`);
its `.comp` files, and its `.glsl` files that declare a compute local size, are copied to
OUT_DIR/REPO/<path>. Then, for every file:
- the reference: glslangValidator -V (as a compute shader) and spirv-val, both for vulkan1.1;
- `vkir validate --format json` over the whole corpus (and its wall time);
- for each file both accept, `vkir.load_spirv` of the module on the default device, in a child
  process per repository, so that a driver crash would show as one.
Prints per repository: files, agreement of the two validators, the load outcomes (loaded,
refused with UnsupportedError, crashed), and the timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOADER = r"""
import json, sys
import vkir
out = {}
for path in sys.argv[1:]:
    try:
        k = vkir.load_spirv(path)
        out[path] = "loaded"
    except vkir.UnsupportedError as exc:
        out[path] = "refused: " + str(exc).split(":", 2)[-1].strip()[:90]
    except vkir.VkirError as exc:
        out[path] = f"error: {type(exc).__name__}"
print(json.dumps(out))
"""


def export(name: str, git_dir: str, rev: str, out: Path) -> list[Path]:
    """Copy the repository's compute shaders at `rev` to out/name; their paths."""
    files = subprocess.run(["git", "-C", git_dir, "ls-tree", "-r", "--name-only", rev],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    kept = []
    for f in files:
        if not f.endswith((".comp", ".glsl")):
            continue
        data = subprocess.run(["git", "-C", git_dir, "show", f"{rev}:{f}"], capture_output=True,
                              check=True).stdout
        if f.endswith(".glsl") and b"local_size_x" not in data:
            continue   # an include or another stage
        target = out / name / f
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        kept.append(target)
    return kept


def tool(name: str) -> list:
    """The command (and environment) that runs SPIRV-Tools' or glslang's binary directly."""
    from vkir.runtime.glsl import direct_binary

    exe, env = direct_binary()
    return str(Path(exe).parent / name), env


def reference(path: Path, tmp: Path) -> bool:
    """Whether glslangValidator compiles `path` and spirv-val accepts the module."""
    glslang, env = tool("glslangValidator")
    val, _ = tool("spirv-val")
    spv = tmp / (path.name + ".spv")
    args = [glslang, "-V", "--target-env", "vulkan1.1", "-o", str(spv), str(path)]
    if path.suffix == ".glsl":
        args[2:2] = ["-S", "comp"]
    if subprocess.run(args, capture_output=True, env=env, timeout=120).returncode:
        return False
    return subprocess.run([val, "--target-env", "vulkan1.1", str(spv)], capture_output=True,
                          env=env, timeout=120).returncode == 0


def main(argv=None) -> int:
    argv = argv or sys.argv[1:]
    out = Path(argv[0])
    repos = {}
    for spec in argv[1:]:
        name, _, where = spec.partition("=")
        git_dir, _, rev = where.partition("@")
        repos[name] = export(name, git_dir, rev or "HEAD", out)
    everything = [f for files in repos.values() for f in files]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        ref = {f: reference(f, Path(tmp)) for f in everything}
        ref_seconds = time.perf_counter() - start
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "vkir", "validate", str(out), "--format",
                              "json", "-j", "2"], capture_output=True, text=True, timeout=3600)
        vkir_seconds = time.perf_counter() - start
        ours = {Path(r["file"]): r["valid"] for r in json.loads(run.stdout)["files"]}
        print(f"{len(everything)} shaders; reference (glslangValidator + spirv-val per file): "
              f"{ref_seconds:.1f} s; vkir validate -j 2: {vkir_seconds:.1f} s")
        print("repository  files  agree  valid(ref)  loaded  refused  errors  crashed")
        for name, files in repos.items():
            agree = sum(ours.get(f) == ref[f] for f in files)
            valid = [f for f in files if ref[f]]
            modules, sources = [], {}
            for f in valid:
                spv = Path(tmp) / f"{name}-{len(modules)}.spv"
                sources[str(spv)] = f
                glslang, env = tool("glslangValidator")
                args = [glslang, "-V", "--target-env", "vulkan1.1", "-o", str(spv), str(f)]
                if f.suffix == ".glsl":
                    args[2:2] = ["-S", "comp"]
                subprocess.run(args, capture_output=True, env=env, check=True)
                modules.append(str(spv))
            loads = subprocess.run([sys.executable, "-c", LOADER, *modules], capture_output=True,
                                   text=True, timeout=1800)
            crashed = loads.returncode != 0
            outcome = json.loads(loads.stdout) if not crashed else {}
            loaded = sum(v == "loaded" for v in outcome.values())
            refused = sum(v.startswith("refused") for v in outcome.values())
            errors = sum(v.startswith("error") for v in outcome.values())
            print(f"{name:<11} {len(files):>5}  {agree:>5}  {len(valid):>10}  {loaded:>6}  "
                  f"{refused:>7}  {errors:>6}  {'YES' if crashed else 'no':>7}")
            for module, what in sorted(outcome.items()):
                if what != "loaded":
                    print(f"    {sources[module].relative_to(out)}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
