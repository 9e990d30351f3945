"""vkir.fleet on a local Ray cluster: one actor on lavapipe and one on SwiftShader (a mixed
fleet, each driver selected per actor through VK_ICD_FILENAMES), plus more lavapipe actors
where a test kills one. The test process itself opens no device: everything runs in the actors.
"""

import os
import re
import signal
import threading
import time

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.fleet.tuning import tune_on_fleet
from vkir.tools.demo import vadd

import sys

ray = pytest.importorskip("ray")   # the extra vkir[fleet]; make test installs it
import fleet_kernels  # noqa: E402 - after the importorskip
from fleet_kernels import doubling  # noqa: E402

# functions of this file and of fleet_kernels travel by value (the actors cannot import them)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(fleet_kernels)


@T.prim_func
def widen(a: T.Buffer((64,), "int32"), c: T.Buffer((64,), "float64")):
    # float64: lavapipe has it, SwiftShader does not (int64 is emulated there, float64 is not)
    for tx in T.thread_binding(64, "threadIdx.x"):
        c[tx] = T.cast(a[tx], "float64") * T.float64(3)


@T.prim_func
def slow_sum(a: T.Buffer((100000,), "float32"), out: T.Buffer((1,), "float32")):
    # one invocation, a long serial loop: seconds in an interpreter without native loops
    for tx in T.thread_binding(1, "threadIdx.x"):
        out[0] = T.float32(0)
        for i in T.serial(100000):
            out[0] = out[0] + a[i] * T.float32(0.5)


@vkir.autotune(configs=[dict(w=32), dict(w=64), dict(w=16)], key=("n",))
def scaled(n, w):
    return doubling(n, w)


@pytest.fixture(scope="module")
def fleet():
    f = vkir.fleet.connect(local=("lavapipe", "swiftshader"), env={"VKIR_CACHE_DIR": "0"})
    yield f
    f.close()


def _pid_of(fleet, needle):
    for fp, pid in zip(fleet.devices(), fleet.actor_pids()):
        if needle in fp.name.lower():
            return pid
    raise AssertionError(f"no {needle} actor in {fleet.devices()}")


def _kill_soon(pid, delay):
    def kill():
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
    thread = threading.Thread(target=kill)
    thread.start()
    return thread


def test_each_actor_owns_one_device_and_is_fingerprinted(fleet):
    devices = fleet.devices()
    assert [("llvmpipe" in d.name, "SwiftShader" in d.name) for d in devices] == \
        [(True, False), (False, True)]
    lavapipe, swiftshader = devices
    assert lavapipe.subgroup_size == 8 and swiftshader.subgroup_size == 4
    assert "int64" in lavapipe.features and "int64" not in swiftshader.features
    assert lavapipe.key != swiftshader.key and fleet.fingerprints() == devices
    pids = fleet.actor_pids()
    assert len(set(pids)) == 2 and os.getpid() not in pids
    for pid in pids:
        os.kill(pid, 0)   # alive processes of this machine


def test_check_runs_on_every_device_with_its_own_parameters(fleet):
    rng = np.random.default_rng(1)
    a, b = rng.random(300, dtype=np.float32), rng.random(300, dtype=np.float32)
    results = fleet.check(vadd, a, b, np.zeros(300, np.float32))
    assert [r.device for r in results] == fleet.devices()
    for r in results:
        assert r.ok, r.error
        assert r.seconds > 0 and r.pid in fleet.actor_pids()
        np.testing.assert_allclose(r.arrays[2], a + b, rtol=1e-6)
    table = vkir.fleet.format_results(results).splitlines()
    assert [line.endswith(": 1/1 ok") for line in table] == [True, False, True, False]


def test_a_device_that_cannot_run_the_kernel_is_reported_not_asked(fleet):
    lavapipe, swiftshader = fleet.check(widen, np.arange(64, dtype=np.int32), np.zeros(64, np.float64))
    assert lavapipe.ok, lavapipe.error
    np.testing.assert_array_equal(lavapipe.arrays[1], np.arange(64) * 3)
    assert not swiftshader.ok and "UnsupportedError" in swiftshader.error and "float64" in swiftshader.error
    assert swiftshader.seconds == 0.0   # refused where the job started, before its actor


def test_map_spreads_calls_over_the_selected_devices(fleet):
    sets = [(np.full(64, i, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32))
            for i in range(4)]
    results = fleet.map(vadd, sets)
    assert [r.device for r in results] == fleet.devices() * 2
    for i, r in enumerate(results):
        assert r.ok, r.error
        np.testing.assert_array_equal(r.arrays[2], np.full(64, i + 1, np.float32))
    only = fleet.run(vadd, *sets[0], devices="swiftshader")
    assert [r.device.name for r in only] == ["SwiftShader Device (Subzero)"]
    with pytest.raises(vkir.ArgumentError, match="no device of the fleet matches"):
        fleet.run(vadd, *sets[0], devices="no-such-gpu")


def test_tuning_per_fingerprint_records_each_kinds_winner(fleet, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    reports = tune_on_fleet(scaled, fleet, {"n": 4096})
    assert [r.device for r in reports] == fleet.fingerprints()
    for report in reports:
        assert [c.config for c in report.candidates] == [dict(w=32), dict(w=64), dict(w=16)]
        for c in report.candidates:
            assert c.status == "ok" and len(c.rounds) == 2 and c.prebuilt
            assert c.seconds == pytest.approx(float(np.median(c.rounds)))
        assert report.best.seconds == min(c.seconds for c in report.candidates)
        assert scaled.cached(report.device, n=4096) == report.best.config
    again = tune_on_fleet(scaled, fleet, {"n": 4096})
    assert all(r.cached for r in again)


def test_an_actor_killed_during_a_check_moves_its_job_to_a_matching_device(fleet):
    fleet.add_local("lavapipe", env={"VKIR_NATIVE_LOOPS": "0", "VKIR_CACHE_DIR": "0"})
    victim = fleet.actor_pids()[-1]
    a = np.arange(100000, dtype=np.float32) / 100000
    killer = _kill_soon(victim, 1.0)
    results = fleet.check(slow_sum, a, np.zeros(1, np.float32), devices="lavapipe")
    killer.join()
    assert len(results) == 2
    moved = results[1]
    assert moved.ok, moved.error
    assert "moved from lost" in moved.note and str(victim) in moved.note
    assert moved.pid != victim and victim not in fleet.actor_pids()
    assert moved.arrays[1][0] == pytest.approx(a.sum() * 0.5, rel=1e-4)


def test_an_actor_killed_with_no_matching_device_left_is_reported_lost(fleet):
    victim = _pid_of(fleet, "swiftshader")
    [member] = [m for m in fleet.members() if m.pid == victim]
    member.origin = None   # as a served actor (its node's to restart): not replaced
    os.kill(victim, signal.SIGKILL)
    results = fleet.check(vadd, np.ones(64, np.float32), np.ones(64, np.float32),
                          np.zeros(64, np.float32))
    by_name = {r.device.name: r for r in results}
    lost = by_name["SwiftShader Device (Subzero)"]
    assert not lost.ok and "device lost" in lost.error and str(victim) in lost.error
    assert all(r.ok for r in results if r is not lost)
    assert all("SwiftShader" not in d.name for d in fleet.devices())
    fleet.add_local("swiftshader", env={"VKIR_CACHE_DIR": "0"})


def test_an_actor_killed_during_tuning_leaves_its_candidates_to_the_others(fleet, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    fleet.add_local("lavapipe", env={"VKIR_CACHE_DIR": "0"})
    lavapipes = [pid for fp, pid in zip(fleet.devices(), fleet.actor_pids()) if "llvmpipe" in fp.name]
    assert len(lavapipes) >= 2   # more where an earlier test's killed actor was replaced
    os.kill(lavapipes[-1], signal.SIGKILL)   # the fleet learns it from the jobs sent to it
    reports = tune_on_fleet(scaled, fleet, {"n": 8192})
    for report in reports:
        statuses = [c.status for c in report.candidates]
        assert statuses == ["ok"] * 3, [c.reason for c in report.candidates]
        assert report.best is not None
    assert lavapipes[-1] not in fleet.actor_pids()


def test_a_hung_job_is_killed_and_reported(fleet):
    fleet.add_local("lavapipe", env={"VKIR_CACHE_DIR": "0"})
    pid = fleet.actor_pids()[-1]
    before = fleet.devices()
    [result] = fleet.apply(_sleep, 60, devices=pid, timeout=1.0)
    assert not result.ok and "no result after 1 s" in result.error and result.pid == pid
    assert pid not in fleet.actor_pids()
    # the hang was the job's: a fresh actor on the same device took the killed one's place
    assert sorted(fleet.devices(), key=str) == sorted(before, key=str)


def _sleep(device, seconds):
    time.sleep(seconds)


def test_check_and_run_take_a_timeout(fleet):
    fleet.add_local("lavapipe", env={"VKIR_NATIVE_LOOPS": "0", "VKIR_CACHE_DIR": "0"})
    pid = fleet.actor_pids()[-1]
    a = np.arange(100000, dtype=np.float32)
    [result] = fleet.check(slow_sum, a, np.zeros(1, np.float32), devices=pid, timeout=0.2)
    assert not result.ok and "no result after 0.2 s" in result.error and result.pid == pid
    assert pid not in fleet.actor_pids()
    [result] = fleet.run(slow_sum, a, np.zeros(1, np.float32), devices=fleet.actor_pids()[-1],
                         timeout=60)   # its replacement
    assert result.ok, result.error


def test_the_plugins_fleet_check_names_each_device_that_fails(fleet):
    from vkir.pytest_plugin import fleet_check

    a = np.arange(64, dtype=np.float32)
    fleet_check(fleet, vadd, (a, a, np.zeros(64, np.float32)), {})
    with pytest.raises(pytest.fail.Exception) as failed:
        fleet_check(fleet, widen, (np.arange(64, dtype=np.int32), np.zeros(64, np.float64)), {})
    message = str(failed.value)
    head, culprit, *table = message.splitlines()
    assert "1 fleet device(s) disagree" in head and "SwiftShader" in culprit
    assert "UnsupportedError" in culprit
    assert any(re.search(r"llvmpipe.*: (\d)/\1 ok$", t) for t in table), table   # all of them ok
