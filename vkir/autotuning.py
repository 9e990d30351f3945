"""Autotuning of kernel templates: `@vkir.autotune(configs=[...], key=("M", "N", "K"))`.

A kernel template is a Python function that returns a PrimFunc for given shapes and schedule
parameters (`template(M=..., N=..., K=..., **config)`); a template with a `subgroup_size`
parameter also gets the device's subgroup size. `autotune` wraps it in a `Tuned` template
whose `build(device=None, **shape)` times every valid config on the device with timestamp queries,
keeps the fastest and records the winner in an on-disk cache, so the next process (or the next
call) builds the winner directly. The cache lives in `$VKIR_CACHE_DIR/autotune` (default: the
platform's user cache directory for "vkir") and is keyed by the device (vendor id, device id,
driver version and name), a hash of the template's source, and the values of `key`. Each record
is sealed (vkir.store.mac, a per-user key kept apart from the cache): one edited, planted or
corrupted is a miss, and the shape is tuned again.

`VKIR_AUTOTUNE=0` takes the first config the device can run, without timing. Tuning stops
timing new configs once it has taken `budget_s` (45 s by default; the list's best configs
come first, so what is left is the unlikely ones). Configs a template
refuses for the shape (a `VkirError` from the template: a tile that does not divide, say) or that
the device cannot run (`UnsupportedError` from the build: too many invocations or too much shared
memory) are skipped, with the reason logged on the "vkir.autotune" logger.

`configs` is a list of dicts, or a mapping from a device class to such a list: "cpu" (lavapipe
and other CPU devices), a vendor ("nvidia", "amd", "intel", "arm", "qualcomm", "apple") or
"default". The first config of the device's list is its default: what an untuned call uses.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import json
import logging
import statistics
import sys
import threading
import time
import weakref
from collections import OrderedDict
from pathlib import Path

from . import config, store
from .cache.root import cache_root
from .errors import ArgumentError, UnsupportedError, VkirError

__all__ = ["autotune", "Tuned", "cache_dir", "tuning_enabled", "device_class", "device_key"]

# kernels `Tuned.kernel` keeps per device (least recently used shapes go first): a program that
# calls an op on many shapes must not hold a pipeline per shape forever
KERNELS_PER_DEVICE = 64

log = logging.getLogger("vkir.autotune")

VENDORS = {0x10DE: "nvidia", 0x1002: "amd", 0x1022: "amd", 0x8086: "intel", 0x13B5: "arm",
           0x5143: "qualcomm", 0x106B: "apple"}


def cache_dir() -> Path | None:
    """Directory of the autotuning cache: $VKIR_CACHE_DIR/autotune, else the platform's user
    cache directory for vkir; None (no disk cache) when VKIR_CACHE_DIR is "" or "0"."""
    root = cache_root()
    return None if root is None else root / "autotune"


def tuning_enabled() -> bool:
    """False when $VKIR_AUTOTUNE is "0" (take the first config without timing)."""
    return config.autotune() != "never"


def device_class(info) -> str:
    """"cpu" for CPU devices (lavapipe), else the vendor name from the PCI vendor id, else
    "default"."""
    if info.kind == "cpu":
        return "cpu"
    return VENDORS.get(getattr(info, "vendor_id", 0), "default")


def device_key(info) -> str:
    """The cache key of a device: vendor id, device id, driver version and the driver string
    (CPU drivers such as lavapipe report a constant driverVersion)."""
    return (f"{getattr(info, 'vendor_id', 0):#06x}:{getattr(info, 'device_id', 0):#06x}:"
            f"{getattr(info, 'driver_version', 0):#x}:{info.name} / {info.driver}")


def _source_hash(fn, helpers=()) -> str:
    """Hash of the template's source, of its module's source (the helpers it calls) and of the
    modules named in `helpers` (other modules that write part of its kernels: a change there
    changes the kernels a config builds, so their timings recorded before no longer hold)."""
    h = hashlib.sha256()
    try:
        h.update(inspect.getsource(fn).encode())
        module = inspect.getmodule(fn)
        if module is not None:
            h.update(inspect.getsource(module).encode())
    except (OSError, TypeError):
        h.update(getattr(fn, "__qualname__", repr(fn)).encode())
    for name in helpers:
        h.update(inspect.getsource(importlib.import_module(name)).encode())
    return h.hexdigest()[:16]


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def _read_table(path: Path) -> dict:
    """The tuning table stored at `path`: {} when it is missing, unreadable, in an unsafe
    folder (vkir.store.read), not JSON or not a JSON object (every such file is a miss, and the
    next result replaces it). Its entries are not verified yet: see `_verified`."""
    raw = store.read(path)
    if raw is None:
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError:   # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return {}
    return data if isinstance(data, dict) else {}


def _sealed(path: Path, key: str, config: dict, seconds: float) -> dict:
    """A table entry for `key` in the table at `path`, sealed (vkir.store.mac) under its place,
    so that an entry edited, planted or moved to another key or table does not verify."""
    entry = {"config": _jsonable(config), "seconds": seconds}
    entry["mac"] = store.mac(f"autotune/{path.name}/{key}", _canonical(entry))
    return entry


def _verified(path: Path, key: str, entry) -> bool:
    """Whether `entry` is a table entry this user's vkir sealed for `key` in the table at `path`."""
    if not isinstance(entry, dict) or set(entry) != {"config", "seconds", "mac"}:
        return False
    body = {"config": entry["config"], "seconds": entry["seconds"]}
    return store.verify(f"autotune/{path.name}/{key}", _canonical(body), entry["mac"])


def _canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def family(config: dict):
    """The family of a config: its "form" where it names one (a template with several
    algorithms), else the set of parameters it sets (e.g. matmul's register tiles with and
    without a vector width)."""
    form = config.get("form")
    return ("form", str(form)) if form is not None else tuple(sorted(config))


class FamilyQueue:
    """The configs of a tuning in the order to time them (iterate; report each timing with
    `timed`): first the first config of every family, then the rest of the families fastest
    first, each family keeping its own order. A family with no timed config yet (its configs
    refused so far) keeps its place at the front. With the budget check in `Tuned._tune`, which
    skips a config only once its family has been timed, a spent budget never leaves a family
    unseen, and what it leaves untimed is the slow families' configs and the fast family's
    least likely ones. (Taking the families in turns instead, the matmul template's plain tiles,
    4-6x slower on SwiftShader than its ka=4 tiles, spent the budget before the best ka=4 tile
    was reached.)"""

    def __init__(self, configs: list):
        self._pending: dict = {}
        for c in configs:
            self._pending.setdefault(family(c), []).append(c)
        self._rank = {f: i for i, f in enumerate(self._pending)}
        self._fastest: dict = {}   # family -> its fastest time so far

    def timed(self, config: dict, seconds: float) -> None:
        """Record that `config` took `seconds`: its family moves by its fastest time."""
        f = family(config)
        self._fastest[f] = min(seconds, self._fastest.get(f, seconds))

    def __iter__(self):
        while True:
            waiting = [f for f, cs in self._pending.items() if cs]
            if not waiting:
                return
            f = min(waiting, key=lambda f: (f in self._fastest, self._fastest.get(f, 0.0),
                                            self._rank[f]))
            yield self._pending[f].pop(0)


FINALISTS = 3   # the fastest configs of a tuning, timed again in alternation to pick the winner


class Tuned:
    """A kernel template with configs and an autotuning `build`. Calling it calls the template."""

    def __init__(self, fn, configs, key, repeat: int = 3, budget_s: float = 45.0,
                 helpers=()):
        self.fn = fn
        self.configs = configs
        self.key = tuple(key)
        self.repeat = repeat
        self.budget_s = budget_s  # configs left when tuning has taken this long are skipped
        self.source_hash = _source_hash(fn, helpers)
        self.last_log: list[str] = []
        self.fleet_report = None   # what the last `build(fleet=...)` measured (vkir.fleet.tuning)
        self._kernels = weakref.WeakKeyDictionary()  # device -> OrderedDict(shape key: Kernel)
        self._kernels_lock = threading.Lock()
        try:
            self._parameters = frozenset(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            self._parameters = frozenset()
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<vkir tuned template {self.fn.__qualname__} key={self.key}>"

    # -- configs ---------------------------------------------------------------------------
    def configs_for(self, info) -> list[dict]:
        """The configs to try on a device (`info`: a DeviceInfo); the first is its default."""
        configs = self.configs
        if callable(configs):
            configs = configs(info)
        if isinstance(configs, dict):
            cls = device_class(info)
            configs = configs.get(cls) or configs.get("default") or next(iter(configs.values()))
        return [dict(c) for c in configs]

    def _cache_path(self) -> Path | None:
        root = cache_dir()
        if root is None:
            return None
        name = f"{self.fn.__module__}.{self.fn.__qualname__}".replace("<", "").replace(">", "")
        configs = self.configs if not callable(self.configs) else getattr(self.configs, "__qualname__", "")
        digest = hashlib.sha256((self.source_hash + json.dumps(_jsonable(configs), sort_keys=True,
                                                               default=str)).encode())
        return root / f"{name}-{digest.hexdigest()[:16]}.json"

    def _entry_key(self, info, shape: dict) -> str:
        missing = [k for k in self.key if k not in shape]
        if missing:
            raise ArgumentError(f"{self.fn.__qualname__}.build needs the key value(s) "
                                f"{', '.join(missing)}")
        values = {k: _jsonable(shape[k]) for k in self.key}
        return device_key(info) + " | " + json.dumps(values, sort_keys=True)

    def cached(self, info, **shape) -> dict | None:
        """The config recorded for this device and shape, or None."""
        path = self._cache_path()
        if path is None:
            return None
        key = self._entry_key(info, shape)
        entry = _read_table(path).get(key)
        if not _verified(path, key, entry):
            return None   # a missing, edited, planted or foreign entry is a miss, never an error
        config = entry["config"]
        if not isinstance(config, dict) or not all(isinstance(k, str) for k in config):
            return None
        return dict(config)

    def _record(self, info, shape: dict, config: dict, seconds: float) -> None:
        path = self._cache_path()
        if path is None:
            return
        data = {k: e for k, e in _read_table(path).items() if _verified(path, k, e)}
        key = self._entry_key(info, shape)
        data[key] = _sealed(path, key, config, seconds)
        # atomic: a concurrent reader sees the old or the new file
        if not store.write(path, json.dumps(data, indent=1, sort_keys=True).encode()):
            # a read-only, full or unsafe cache folder only costs tuning next time
            log.info("autotune: cannot save the result in %s", path.parent)

    # -- building --------------------------------------------------------------------------
    def _try_build(self, dev, shape, config, cached: bool = False):
        """(Kernel, None) or (None, reason) for one config. A `cached` config (read back from
        disk, perhaps written by an older template) that no longer builds for any reason is a
        reason too: the caller tunes again."""
        if cached:
            try:
                return self._try_build(dev, shape, config)
            except (VkirError, TypeError) as exc:
                return None, f"{type(exc).__name__}: {exc}"
        from .api import build

        func, reason = self.instantiate(dev.info, shape, config)
        if func is None:
            return None, reason
        try:
            return build(func, device=dev), None
        except UnsupportedError as exc:
            return None, f"device cannot run it: {exc}"

    def instantiate(self, info, shape: dict, config: dict) -> tuple:
        """(the PrimFunc of `config` for `shape` on the device `info` describes, None), or
        (None, reason) where the template refuses them. A template with a `subgroup_size`
        parameter gets the device's."""
        device_params = {}
        if "subgroup_size" in self._parameters and "subgroup_size" not in {**shape, **config}:
            device_params["subgroup_size"] = info.subgroup_size  # the template asks for it
        try:
            return self.fn(**shape, **config, **device_params), None
        except (VkirError, ValueError) as exc:
            return None, f"template refuses: {exc}"

    def build(self, device=None, tune: bool | None = None, fleet=None, **shape):
        """The Kernel of the best config for `shape` on `device`: the cached winner, else (when
        tuning, the default unless VKIR_AUTOTUNE=0 or `tune=False`) the fastest config timed
        now, else the first config the device can run. The kernel's `config` attribute is the
        config it was built with.

        With `fleet` (a vkir.fleet.Fleet), the configs are first tuned for every kind of device
        in the fleet, candidates spread over each kind's devices (vkir.fleet.tuning), and the
        winners recorded per device kind; `fleet_report` then holds what each candidate did.
        The kernel returned is still this process's device's."""
        from .api import resolve_device

        if fleet is not None:   # vkir.fleet.Fleet.tune (vkir.fleet.tuning)
            self.fleet_report = fleet.tune(self, shape)

        dev = resolve_device(device)
        info = dev.info
        self.last_log = []
        hit = self.cached(info, **shape)
        if hit is None and fleet is not None:   # no cache to read it from: the report serves
            hit = self._fleet_winner(info)
        if hit is not None:
            kernel, reason = self._try_build(dev, shape, hit, cached=True)
            if kernel is not None:
                kernel.config = hit
                return kernel
            self._note(f"cached config {hit} no longer builds ({reason}); tuning again")
        if tune is None:
            tune = tuning_enabled()
        configs = self.configs_for(info)
        if not tune:
            for config in configs:
                kernel, reason = self._try_build(dev, shape, config)
                if kernel is not None:
                    kernel.config = config
                    return kernel
                self._note(f"skipped {config}: {reason}")
            raise UnsupportedError(f"{self.fn.__qualname__}: no config runs for {shape} on "
                                   f"{info.name!r}:\n  " + "\n  ".join(self.last_log))
        return self._tune(dev, shape, configs)

    def _fleet_winner(self, info) -> dict | None:
        """The config the last fleet tuning chose for the kind of device `info` describes."""
        for report in self.fleet_report or ():
            if report.best is not None and device_key(report.device) == device_key(info):
                return dict(report.best.config)
        return None

    def kernel(self, device=None, **shape):
        """The Kernel for `shape` on `device`, built once per device and shape (what the ops
        call): the cached tuning result when there is one, else the device's default config,
        unless VKIR_AUTOTUNE=1 asks to tune now."""
        from .api import resolve_device

        dev = resolve_device(device)
        key = json.dumps(_jsonable(shape), sort_keys=True, default=str)
        with self._kernels_lock:
            per_device = self._kernels.setdefault(dev, OrderedDict())
            k = per_device.get(key)
            if k is not None:   # (a pipeline-cache reset: its program makes it again)
                per_device.move_to_end(key)
                return k
        tune = config.autotune() == "always"
        k = self.build(device=dev, tune=tune, **shape)
        with self._kernels_lock:
            per_device[key] = k
            while len(per_device) > KERNELS_PER_DEVICE:
                per_device.popitem(last=False)  # a dropped Kernel releases its pipeline
        return k

    def _note(self, message: str) -> None:
        self.last_log.append(message)
        log.info("%s: %s", self.fn.__qualname__, message)

    def _tune(self, dev, shape, configs):
        from tqdm import tqdm

        best = None  # (seconds, config, kernel)
        timed = []   # the fastest FINALISTS so far, fastest first
        t_start = time.perf_counter()
        order = FamilyQueue(configs)
        timed_families = set()
        bar = tqdm(total=len(configs), desc=f"autotune {self.fn.__module__}.{self.fn.__qualname__}",
                   file=sys.stderr, leave=False, unit="config")
        for config in order:
            bar.update()
            if best is not None and time.perf_counter() - t_start > self.budget_s \
                    and family(config) in timed_families:
                self._note(f"skipped {config}: the tuning budget of {self.budget_s:.0f} s is spent")
                continue
            kernel, reason = self._try_build(dev, shape, config)
            if kernel is None:
                self._note(f"skipped {config}: {reason}")
                continue
            args = timing_arguments(kernel)
            # one timed run first: a config much slower than the best so far is not repeated
            try:
                first = kernel.profile(*args, repeat=1, warmup=1).median
            except UnsupportedError as exc:  # e.g. more workgroups than the device launches
                self._note(f"skipped {config}: device cannot run it: {exc}")
                continue
            seconds = first
            if best is None or first < 3 * best[0]:
                seconds = min(first, kernel.profile(*args, repeat=self.repeat, warmup=0).median)
            self._note(f"{config}: {seconds * 1e3:.3f} ms")
            timed_families.add(family(config))
            order.timed(config, seconds)
            timed.append((seconds, config, kernel))
            timed.sort(key=lambda t: t[0])
            del timed[FINALISTS:]   # only the finalists' kernels stay alive
            best = timed[0]
            bar.set_postfix(best=f"{best[0] * 1e3:.3f} ms")
        bar.close()
        if best is None:
            raise UnsupportedError(f"{self.fn.__qualname__}: no config runs for {shape} on "
                                   f"{dev.info.name!r}:\n  " + "\n  ".join(self.last_log))
        seconds, config, kernel = self._final(timed)
        self._record(dev.info, shape, config, seconds)
        self._note(f"best {config}: {seconds * 1e3:.3f} ms (tuned in "
                   f"{time.perf_counter() - t_start:.1f} s)")
        kernel.config = config
        return kernel


    def _final(self, timed):
        """The winner among the finalists `timed` [(seconds, config, kernel)], timed again in
        alternation (each round runs each once, the order rotating) and compared by median:
        timed one after another, a change of load on a shared CPU device between two configs
        decided which won (the matmul autotuner picked a tile 1.8x slower per CPU-second)."""
        if len(timed) < 2:
            return timed[0]
        samples = [[] for _ in timed]
        args = [timing_arguments(kernel) for _, _, kernel in timed]
        for r in range(max(3, self.repeat)):
            for i in [(r + j) % len(timed) for j in range(len(timed))]:
                samples[i].append(timed[i][2].profile(*args[i], repeat=1, warmup=0).median)
        medians = [statistics.median(s) for s in samples]
        i = min(range(len(timed)), key=medians.__getitem__)
        self._note("finalists timed in alternation: " + ", ".join(
            f"{c}: {m * 1e3:.3f} ms" for (_, c, _), m in zip(timed, medians)))
        return medians[i], timed[i][1], timed[i][2]


def timing_arguments(kernel) -> list:
    """Device arrays for every parameter of a kernel with constant shapes, written with data
    (random floats, small integers): untouched zero-filled memory can be the operating system's
    one shared zero page, which reads at cache speed and would time a config unrealistically."""
    import numpy as np

    from .api import array
    from .ir import IntImm

    rng = np.random.default_rng(0)
    args = []
    for p in kernel.func.params:
        buf = kernel.func.buffer_map.get(p)
        if buf is None:
            raise ArgumentError(f"autotune: kernel {kernel.name} has scalar parameter {p.name}; "
                                "templates to tune take buffers of constant shape only")
        if not all(isinstance(s, IntImm) for s in buf.shape):
            raise ArgumentError(f"autotune: buffer {buf.name} of kernel {kernel.name} has a "
                                "symbolic shape; templates to tune use constant shapes")
        shape = [s.value for s in buf.shape]
        if shape:
            shape[-1] *= buf.dtype.lanes  # a vector-typed buffer takes its scalars' array
        npd = buf.dtype.element_of().numpy_dtype()
        if npd.kind == "f":
            values = rng.standard_normal(shape).astype(npd)
        else:
            values = rng.integers(0, 2, size=shape).astype(npd)
        args.append(array(values, device=kernel.device))
    return args


def autotune(configs, key=(), helpers=()):
    """Decorator: make a kernel template (shapes and schedule parameters -> PrimFunc) tunable.

    `configs`: a list of schedule-parameter dicts, or a mapping from device class ("cpu",
    "nvidia", "amd", "intel", ..., "default") to such lists; `key`: the names of the template
    arguments that select a cache entry (the shape); `helpers`: names of other modules that
    write part of the template's kernels (their source joins the template's in the cache key,
    so editing them invalidates the recorded winners as editing the template does)."""
    if not callable(configs) and not isinstance(configs, dict) and not list(configs):
        raise ArgumentError("autotune needs at least one config")

    def wrap(fn):
        return Tuned(fn, configs, key, helpers=tuple(helpers))

    return wrap
