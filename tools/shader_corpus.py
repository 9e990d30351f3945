"""Compare `vkir validate` and `vkir.load_spirv` with glslangValidator + spirv-val over a corpus of
public compute shaders.

    python tools/shader_corpus.py OUT_DIR REPO=GIT_DIR[@REV] ...

Each REPO=GIT_DIR names a git repository (a bare mirror works: files are read with `git show`);
its `.comp` files, and its `.glsl` files that declare a compute local size, are copied to
OUT_DIR/REPO/<path>. Then, for every file:
- the reference: glslangValidator -V (as a compute shader) and spirv-val, both for vulkan1.1;
- `vkir validate --format json` over the whole corpus (and its wall time);
- for each file the reference accepts, `vkir.load_spirv` of the module on the default device
  (VKIR_DEVICE) and a smoke dispatch: one workgroup on zeroed buffers (4096 runtime-array
  elements), zeroed push constants (a buffer_reference gets a zeroed 64 KiB array); shaders with
  images load but are not dispatched. Child processes run them; a driver crash marks its module
  "crashed" and the next child goes on after it.
Prints per repository: files, agreement of the two validators, the outcomes (loaded, ran the
smoke dispatch, refused with UnsupportedError, other vkir errors, crashed), and the timings.
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
import numpy as np
import vkir
from vkir.ir import DataType

ELEMENTS = 4096   # runtime-array elements of each smoke buffer


def zero(t):
    # a zero value of reflected type t, as push= takes it (pointers: a zeroed buffer)
    if t.kind in ("bool", "int", "float"):
        return 0
    if t.kind == "pointer":
        return np.zeros(1 << 16, np.uint8)
    if t.kind == "struct":
        return {m.name: zero(m.type) for m in t.members}
    return [zero(t.element) for _ in range(t.count)]


def buffer(b):
    leaf = (b.element if b.element is not None else b.type).scalar
    dtype = np.dtype(np.uint32) if leaf is None or leaf.kind == "bool" else \
        DataType.parse(leaf.dtype).numpy_dtype()
    need = b.fixed_size + (ELEMENTS * b.array_stride if b.element is not None else 0)
    return np.zeros(max(-(-need // dtype.itemsize), 1), dtype)


def smoke(k):
    # one workgroup on zeroed buffers and push constants; images are not dispatched
    if any(i.kind != "sampler" for i in k.info.images):
        return "loaded (images: no smoke dispatch)"
    args = [[buffer(b) for _ in range(b.count)] if b.count > 1 else buffer(b)
            for b in k.bindings]
    k(*args, grid=(1, 1, 1), push={m.name: zero(m.type) for m in k.push_constants})
    return "ran"


out = open(sys.argv[1], "a")
for path in sys.argv[2:]:
    print(json.dumps([path, "started"]), file=out, flush=True)
    try:
        what = smoke(vkir.load_spirv(path))
    except vkir.UnsupportedError as exc:
        what = "refused: " + str(exc).split(":", 2)[-1].strip()[:90]
    except vkir.VkirError as exc:
        what = f"error: {type(exc).__name__}: {str(exc)[:90]}"
    print(json.dumps([path, what]), file=out, flush=True)
"""


def load_and_smoke(modules: list, log: Path) -> dict:
    """{module: outcome} of vkir.load_spirv and a one-workgroup smoke dispatch of each module,
    in child processes: a child that dies (a driver crash) or hangs (5 minutes) marks its
    current module "crashed" and a new child goes on with the modules after it."""
    outcome, todo = {}, list(modules)
    while todo:
        try:
            subprocess.run([sys.executable, "-c", LOADER, str(log), *todo], capture_output=True,
                           timeout=300)
        except subprocess.TimeoutExpired:
            pass   # its current module is marked as a crash: the rest go on
        for line in log.read_text().splitlines():
            path, what = json.loads(line)
            outcome[path] = what
        for m in todo:
            if outcome.get(m) == "started":
                outcome[m] = "crashed"
        todo = [m for m in todo if m not in outcome]
    return outcome


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
        print("repository  files  agree  valid(ref)  loaded  ran  refused  errors  crashed")
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
            outcome = load_and_smoke(modules, Path(tmp) / f"{name}.log")
            ran = sum(v == "ran" for v in outcome.values())
            loaded = sum(v == "ran" or v.startswith("loaded") for v in outcome.values())
            refused = sum(v.startswith("refused") for v in outcome.values())
            errors = sum(v.startswith("error") for v in outcome.values())
            crashed = sum(v == "crashed" for v in outcome.values())
            print(f"{name:<11} {len(files):>5}  {agree:>5}  {len(valid):>10}  {loaded:>6}  "
                  f"{ran:>4}  {refused:>7}  {errors:>6}  {crashed:>7}")
            for module, what in sorted(outcome.items()):
                if what != "ran":
                    print(f"    {sources[module].relative_to(out)}: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
