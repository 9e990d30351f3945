"""@vkir.autotune: timing configs on the device, the on-disk cache of winners (keyed by device,
template source and key values), VKIR_AUTOTUNE=0, and configs the device cannot run."""

import dataclasses
import json
import logging

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.autotuning import Tuned, device_key

pytestmark = pytest.mark.device


def scale_template(n, w=64):
    """y = 2 x with `w` invocations per workgroup (w = 4096 exceeds every device's limit)."""
    @T.prim_func
    def scale(x: T.Buffer((n,), "float32"), y: T.Buffer((n,), "float32")):
        for bx in T.thread_binding((n + w - 1) // w, "blockIdx.x"):
            for tx in T.thread_binding(w, "threadIdx.x"):
                if bx * w + tx < n:
                    y[bx * w + tx] = x[bx * w + tx] * 2.0
    return scale


CONFIGS = [dict(w=4096), dict(w=32), dict(w=64)]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("VKIR_AUTOTUNE", raising=False)
    return tmp_path / "autotune"


class CountingProfile:
    """Counts Kernel.profile calls (timing) while delegating to the real method."""

    def __init__(self, monkeypatch):
        self.calls = 0
        real = vkir.api.Kernel.profile

        def profile(kernel, *args, **kwargs):
            self.calls += 1
            return real(kernel, *args, **kwargs)

        monkeypatch.setattr(vkir.api.Kernel, "profile", profile)


def test_tunes_records_and_hits_the_cache(device, cache, monkeypatch, caplog):
    timing = CountingProfile(monkeypatch)
    tuned = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template)
    with caplog.at_level(logging.INFO, logger="vkir.autotune"):
        k = tuned.build(device=device, n=1000)
    assert k.config in CONFIGS[1:] and timing.calls >= 2
    # the device cannot run 4096 invocations per workgroup: skipped, with the reason logged
    assert any("skipped {'w': 4096}" in r.getMessage() and "device cannot run" in r.getMessage()
               for r in caplog.records)
    files = list(cache.glob("*.json"))
    assert len(files) == 1
    entries = json.loads(files[0].read_text())
    (entry_key, entry), = entries.items()
    assert entry_key.startswith(device_key(device.info)) and '"n": 1000' in entry_key
    assert entry["config"] == k.config
    # a second build (a new template object, as in a new process) takes the winner untimed
    before = timing.calls
    again = Tuned(scale_template, CONFIGS, ("n",)).build(device=device, n=1000)
    assert again.config == k.config and timing.calls == before
    x = np.arange(1000, dtype=np.float32)
    y = np.zeros_like(x)
    again(x, y)
    np.testing.assert_array_equal(y, 2 * x)


def test_cache_is_keyed_by_key_values_device_and_source(device, cache):
    tuned = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template)
    tuned.build(device=device, n=256)
    assert tuned.cached(device.info, n=256) is not None
    assert tuned.cached(device.info, n=512) is None          # other key values
    other = dataclasses.replace(device.info, device_id=device.info.device_id + 1)
    assert tuned.cached(other, n=256) is None                  # another device
    other = dataclasses.replace(device.info, driver_version=device.info.driver_version + 1)
    assert tuned.cached(other, n=256) is None                  # another driver

    def scale_template_v2(n, w=64):  # a changed template: a new source hash
        return scale_template(n, w)

    assert Tuned(scale_template_v2, CONFIGS, ("n",)).cached(device.info, n=256) is None


def test_helper_modules_join_the_source_hash():
    """A module named in `helpers` writes part of the kernels: its source is in the cache key,
    so editing it (matmul's ka=4 family lives in vkir.ops.linalg_k4) forgets old winners."""
    from vkir.autotuning import _source_hash
    from vkir.ops.linalg import kernel as matmul_kernel

    plain = Tuned(scale_template, CONFIGS, ("n",))
    helped = vkir.autotune(configs=CONFIGS, key=("n",), helpers=("vkir.ops.linalg_k4",))(
        scale_template)
    assert helped.source_hash != plain.source_hash
    assert matmul_kernel.source_hash == _source_hash(matmul_kernel.fn, ("vkir.ops.linalg_k4",))
    assert matmul_kernel.source_hash != _source_hash(matmul_kernel.fn)


def test_autotune_off_takes_the_first_runnable_config(device, cache, monkeypatch):
    monkeypatch.setenv("VKIR_AUTOTUNE", "0")
    timing = CountingProfile(monkeypatch)
    k = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template).build(device=device, n=100)
    assert k.config == {"w": 32} and timing.calls == 0
    assert not cache.exists() or not list(cache.glob("*.json"))


def test_no_disk_cache_when_disabled(device, monkeypatch, tmp_path):
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")
    tuned = vkir.autotune(configs=CONFIGS[1:], key=("n",))(scale_template)
    assert tuned.build(device=device, n=64).config in CONFIGS[1:]
    assert tuned.cached(device.info, n=64) is None


def test_no_runnable_config_is_an_error(device, cache):
    tuned = vkir.autotune(configs=[dict(w=4096)], key=("n",))(scale_template)
    with pytest.raises(vkir.UnsupportedError, match="no config runs"):
        tuned.build(device=device, n=64)


def test_device_classes_pick_config_lists(device):
    tuned = vkir.autotune(configs={"cpu": [dict(w=8)], "nvidia": [dict(w=128)],
                                   "default": [dict(w=64)]}, key=("n",))(scale_template)
    nvidia = dataclasses.replace(device.info, kind="discrete", vendor_id=0x10DE)
    other = dataclasses.replace(device.info, kind="discrete", vendor_id=0x1234)
    assert tuned.configs_for(nvidia) == [dict(w=128)]
    assert tuned.configs_for(other) == [dict(w=64)]
    cpu = dataclasses.replace(device.info, kind="cpu")
    assert tuned.configs_for(cpu) == [dict(w=8)]


def test_matmul_template_tunes_and_the_op_uses_the_winner(device, cache, monkeypatch):
    from vkir.ops import matmul

    shape = dict(M=64, N=64, K=16, batch=None, trans_a=False, trans_b=False, bias=None,
                 activation=None)
    k = matmul.kernel.build(device=device, **shape)
    assert matmul.kernel.cached(device.info, **shape) == k.config
    a = np.ones((64, 16), np.float32)
    np.testing.assert_allclose(matmul(a, a.T.copy(), device=device), np.full((64, 64), 16.0))


def test_templates_taking_subgroup_size_get_the_devices(device, cache):
    seen = []

    def template(n, w=64, subgroup_size=None):
        seen.append(subgroup_size)
        return scale_template(n, w)

    vkir.autotune(configs=[dict(w=64)], key=("n",))(template).build(device=device, n=64)
    assert seen == [device.info.subgroup_size]


def test_op_kernels_per_device_are_bounded(device, cache, monkeypatch):
    """An op called on many shapes keeps at most KERNELS_PER_DEVICE kernels (and pipelines)."""
    from vkir import autotuning

    monkeypatch.setenv("VKIR_AUTOTUNE", "0")
    monkeypatch.setattr(autotuning, "KERNELS_PER_DEVICE", 3)
    tuned = Tuned(scale_template, [dict(w=64)], key=("n",))
    pipelines = len(device.pipelines)
    for n in range(1, 9):
        k = tuned.kernel(device, n=n)
        x, y = np.arange(n, dtype=np.float32), np.zeros(n, np.float32)
        k(x, y)
        np.testing.assert_array_equal(y, 2 * x)
    assert tuned.kernel(device, n=8) is k  # the most recent shapes stay
    del k
    assert len(tuned._kernels[device]) == 3
    assert len(device.pipelines) <= pipelines + 3


@pytest.mark.parametrize("content", [b"[1, 2]", b'{"x": 1}', b"\xff\xfe garbage", b"",
                                     b'"just a string"'])
def test_an_odd_cache_file_is_a_miss(device, cache, content):
    tuned = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template)
    k = tuned.build(device=device, n=1000, tune=False)      # creates nothing on disk
    path = tuned._cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert tuned.cached(device.info, n=1000) is None
    k = tuned.build(device=device, n=1000)                  # tunes and replaces the file
    assert tuned.cached(device.info, n=1000) == k.config


def test_an_entry_whose_config_is_not_a_dict_is_a_miss(device, cache):
    tuned = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template)
    tuned.build(device=device, n=1000)
    path = tuned._cache_path()
    data = json.loads(path.read_text())
    for entry in data.values():
        entry["config"] = [1, 2]
    path.write_text(json.dumps(data))
    assert tuned.cached(device.info, n=1000) is None
    assert tuned.build(device=device, n=1000).config in CONFIGS[1:]


def test_an_unwritable_cache_folder_costs_only_the_cache(device, cache):
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text("a file where the folder should be")   # unwritable even for root
    tuned = vkir.autotune(configs=CONFIGS, key=("n",))(scale_template)
    k = tuned.build(device=device, n=1000)
    assert k.config in CONFIGS[1:]
    assert tuned.cached(device.info, n=1000) is None


def test_a_cached_config_that_no_longer_type_checks_is_tuned_again(device, cache):
    def template(n, w=64, scale="2.0"):
        return vkir.from_script(f'''
@T.prim_func
def f(x: T.Buffer(({n},), "float32"), y: T.Buffer(({n},), "float32")):
    for bx in T.thread_binding({(n + w - 1) // w}, "blockIdx.x"):
        for tx in T.thread_binding({w}, "threadIdx.x"):
            if bx * {w} + tx < {n}:
                y[bx * {w} + tx] = x[bx * {w} + tx] * {scale}
''')

    tuned = vkir.autotune(configs=[dict(w=32), dict(w=64)], key=("n",))(template)
    tuned.build(device=device, n=256)
    # recorded by an older template: an int32 operand for a float (records are sealed, so it
    # is written as vkir writes one, not edited in the file)
    tuned._record(device.info, {"n": 256}, {"w": 64, "scale": "T.int32(2)"}, 0.001)
    k = tuned.build(device=device, n=256)
    assert k.config in ({"w": 32}, {"w": 64})
    assert any("no longer builds" in line for line in tuned.last_log)


def test_family_queue_times_each_family_first_then_the_fastest_family():
    from vkir.autotuning import FamilyQueue

    configs = [dict(w=8), dict(w=16), dict(w=32), dict(w=8, v=4), dict(w=16, v=4),
               dict(form="window", w=8), dict(form="window", w=16)]
    queue, seen = FamilyQueue(configs), []
    times = {8: 3.0, 16: 4.0, 32: 5.0}   # plain tiles; the v=4 family is 1.0, "window" 2.0
    for c in queue:
        seen.append(c)
        queue.timed(c, 1.0 if "v" in c else 2.0 if "form" in c else times[c["w"]])
    assert seen == [dict(w=8), dict(w=8, v=4), dict(form="window", w=8), dict(w=16, v=4),
                    dict(form="window", w=16), dict(w=16), dict(w=32)]
    # a family none of whose configs has been timed yet (refused so far) stays in front
    queue, seen = FamilyQueue(configs), []
    for c in queue:
        seen.append(c)
        if "v" not in c:
            queue.timed(c, 1.0)
    assert seen[:3] == [dict(w=8), dict(w=8, v=4), dict(w=16, v=4)]


def scale_template_v(n, w=64, v=1):
    """scale_template with a second family of configs (those that set v)."""
    return scale_template(n, w)


def test_a_spent_budget_still_times_every_family(device, cache, caplog):
    tuned = Tuned(scale_template_v, [dict(w=32), dict(w=64), dict(w=16), dict(w=64, v=2)],
                  ("n",), budget_s=0.0)
    with caplog.at_level(logging.INFO, logger="vkir.autotune"):
        tuned.build(device=device, n=1000)
    timed = [m for m in tuned.last_log if m.endswith(" ms") and not m.startswith("finalists")]
    assert any("'v': 2" in m for m in timed) and len(timed) == 2
    assert sum("budget" in m for m in tuned.last_log) == 2


def test_finalists_are_timed_again_in_alternation(device, cache):
    tuned = Tuned(scale_template, [dict(w=32), dict(w=64), dict(w=16), dict(w=8)], ("n",))
    k = tuned.build(device=device, n=1000)
    final = [m for m in tuned.last_log if m.startswith("finalists timed in alternation")]
    assert len(final) == 1 and final[0].count("ms") == 3   # the 3 fastest of the 4
    assert f"best {k.config}" in tuned.last_log[-1]
