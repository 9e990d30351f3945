"""vkir.fleet attacked: results that must come back whole, once and writable; the kernels an actor
times or runs must be the ones the job sent; prebuilt entries that do not fit are misses, never
wrong kernels; fleets that share a Ray instance, fail half-way or are interrupted; selectors the
fleet cannot take are clear errors. One local fleet (lavapipe + SwiftShader) serves the module;
tests that kill actors add their own.
"""

import base64
import hashlib
import os
import re
import signal
import sys
import time

import numpy as np
import pytest

import vkir
from vkir import T
from vkir.cache import compile as compile_cache
from vkir.cache.compile import compile_vulkan, entry, prebuilt
from vkir.driver.arrays import target_for
from vkir.fleet.fingerprint import Fingerprint
from vkir.fleet.tuning import tune_on_fleet
from vkir.tools.demo import vadd

ray = pytest.importorskip("ray")   # the extra vkir[fleet]
import fleet_kernels  # noqa: E402 - after the importorskip
from fleet_kernels import doubling  # noqa: E402

# functions of this file and of fleet_kernels travel by value (the actors cannot import them)
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
ray.cloudpickle.register_pickle_by_value(fleet_kernels)

ENV = {"VKIR_CACHE_DIR": "0"}


@T.prim_func
def triple(a: T.Buffer((64,), "float32"), c: T.Buffer((64,), "float32")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        c[tx] = a[tx] * T.float32(3)


@vkir.autotune(configs=[dict(w=32), dict(w=64)], key=("n",))
def doubled(n, w):
    return doubling(n, w)


@vkir.autotune(configs=[dict(w=32), dict(w=64)], key=("n",))
def with_scalar(n, w):
    # a scalar parameter: the devices cannot time it (timing_arguments refuses), so every
    # candidate must end "skipped", whatever the actors timed before
    @T.prim_func
    def f(a: T.Buffer((n,), "float32"), c: T.Buffer((n,), "float32"), s: T.float32):
        for bx in T.thread_binding(n // w, "blockIdx.x"):
            for tx in T.thread_binding(w, "threadIdx.x"):
                c[bx * w + tx] = a[bx * w + tx] * s
    return f


@pytest.fixture(scope="module")
def fleets():
    """The module's fleet, kept in a dict so a test that closes it leaves the next a new one."""
    held = {"ray_was_up": ray.is_initialized()}
    yield held
    if "fleet" in held:
        held["fleet"].close()


@pytest.fixture
def fleet(fleets):
    if "fleet" not in fleets or fleets["fleet"].closed:
        fleets["fleet"] = vkir.fleet.connect(local=("lavapipe", "swiftshader"), env=ENV)
    return fleets["fleet"]


@pytest.fixture
def own_fleet(fleets, device):
    """A fleet of one actor on this process's device, selected by its index: the actor keeps
    this process's Vulkan drivers (a "lavapipe" actor runs the system's lavapipe, while this
    process may run a second one, Mesa 25's, chosen by its manifest)."""
    own = vkir.fleet.connect(local=(str(device.info.index),), env=ENV)
    yield own
    own.close()


def _nap(device, seconds):
    time.sleep(seconds)
    return seconds


def _bug_on_swiftshader_nap_elsewhere(device, seconds):
    if "SwiftShader" in device.info.name:
        raise ValueError("a bug in the job")
    time.sleep(seconds)


def _crash(device):
    os.kill(os.getpid(), signal.SIGKILL)


# -- results -----------------------------------------------------------------------------------
def test_result_arrays_are_the_callers_own_writable_arrays(fleet):
    a = np.arange(64, dtype=np.float32)
    c = np.zeros(64, np.float32)
    for results in (fleet.check(vadd, a, a, c), fleet.run(vadd, a, a, c),
                    fleet.map(vadd, [(a, a, c)] * 3)):
        for r in results:
            assert r.ok, r.error
            out = r.arrays[2]
            np.testing.assert_array_equal(out, 2 * a)
            assert out.flags.writeable and not np.shares_memory(out, c)
            out += 1   # the caller may work on it in place
    assert not c.any() and not np.shares_memory(results[0].arrays[2], results[1].arrays[2])


def test_map_keeps_the_order_of_its_argument_sets(fleet):
    sets = [(np.full(64, i, np.float32), np.full(64, 10 * i, np.float32), np.zeros(64, np.float32))
            for i in range(7)]
    results = fleet.map(vadd, iter(sets))
    assert len(results) == 7
    devices = fleet.devices()
    for i, r in enumerate(results):
        assert r.ok and r.device == devices[i % len(devices)]
        assert r.pid == fleet.actor_pids()[i % len(devices)]
        np.testing.assert_array_equal(r.arrays[2], np.full(64, 11 * i, np.float32))
    assert fleet.map(vadd, []) == []


def test_device_arrays_travel_as_numpy(fleet, device):
    a = np.arange(64, dtype=np.float32)
    held = vkir.array(a, device=device)   # this process's device memory; the actors get values
    [r] = fleet.run(triple, held, np.zeros(64, np.float32), devices="swiftshader")
    assert r.ok, r.error
    np.testing.assert_array_equal(r.arrays[0], a)
    np.testing.assert_array_equal(r.arrays[1], 3 * a)


# -- what the actors build and time ------------------------------------------------------------
def test_an_actor_times_the_candidate_the_job_sent_not_one_it_timed_before(fleet):
    first = tune_on_fleet(doubled, fleet, {"n": 256})
    assert all(c.status == "ok" for r in first for c in r.candidates)
    # same number of candidates, same rounds: only the kernels differ. An actor that served the
    # earlier kernels again would time them and call these "ok".
    second = tune_on_fleet(with_scalar, fleet, {"n": 256})
    for report in second:
        assert [c.status for c in report.candidates] == ["skipped", "skipped"], report.table()
        assert all("scalar parameter" in c.reason for c in report.candidates)
        assert report.best is None


def test_fleet_tuning_records_are_what_a_local_build_on_that_device_reads(own_fleet, device,
                                                                          tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    reports = tune_on_fleet(doubled, own_fleet, {"n": 512})
    [mine] = [r for r in reports if r.device == Fingerprint.of(device.info)]
    assert mine.best is not None
    assert doubled.cached(device.info, n=512) == mine.best.config
    kernel = doubled.build(device=device, tune=False, n=512)
    assert kernel.config == mine.best.config and doubled.last_log == []
    a = np.arange(512, dtype=np.float32)
    c = np.zeros(512, np.float32)
    kernel(a, c)
    np.testing.assert_array_equal(c, 2 * a)


def test_build_with_a_fleet_uses_its_winner_here_even_without_a_cache(own_fleet, device,
                                                                      monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", "0")   # nothing is recorded: the report must serve
    kernel = doubled.build(fleet=own_fleet, device=device, n=1024)
    [mine] = [r for r in doubled.fleet_report if r.device == Fingerprint.of(device.info)]
    assert kernel.config == mine.best.config
    assert not any(note.startswith("best") for note in doubled.last_log), doubled.last_log


def test_candidates_the_template_refuses_or_the_device_cannot_run_are_skipped(fleet):
    @vkir.autotune(configs=[dict(w=512), dict(w=48), dict(w=64)], key=("n",))
    def sized(n, w):
        if n % w:
            raise ValueError(f"{n} is not a multiple of {w}")

        @T.prim_func
        def f(a: T.Buffer((n,), "float32"), c: T.Buffer((n,), "float32")):
            for bx in T.thread_binding(n // w, "blockIdx.x"):
                for tx in T.thread_binding(w, "threadIdx.x"):
                    c[bx * w + tx] = a[bx * w + tx] + T.float32(1)
        return f

    reports = {r.device.name: r for r in tune_on_fleet(sized, fleet, {"n": 1024})}
    swift = reports["SwiftShader Device (Subzero)"]
    by_w = {c.config["w"]: c for c in swift.candidates}
    assert by_w[48].status == "skipped" and "template refuses" in by_w[48].reason
    assert by_w[512].status == "skipped" and by_w[512].reason   # over SwiftShader's 256
    assert by_w[64].status == "ok" and swift.best is by_w[64]


def test_a_prebuilt_entry_that_does_not_fit_is_a_miss_never_a_wrong_kernel(fleet, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    info = fleet.members("lavapipe")[0].info
    target = target_for(info)
    key, good = entry(triple, target)
    _, other = entry(vadd, target)
    with prebuilt({key: good}):
        assert compile_vulkan(triple, target).prebuilt
    corrupted = dict(good, words=good["words"][:-8] + "AAAAAAA=")
    older = dict(good, format=good["format"] - 1)
    # consistent checksums, but SPIR-V that does not validate (an unknown capability): a file
    # such as an exported library could hold it; it never reaches the driver
    words = bytearray(base64.b64decode(good["words"]))
    words[24:28] = (99999).to_bytes(4, "little")   # the operand of the first OpCapability
    invalid = dict(good, words=base64.b64encode(bytes(words)).decode(),
                   sha256=hashlib.sha256(bytes(words)).hexdigest())
    invalid["digest"] = compile_cache._digest(invalid)
    for bad in (other, corrupted, older, {"format": good["format"]}, "not an entry", invalid):
        with prebuilt({key: bad}):
            compiled = compile_vulkan(triple, target)
        assert not compiled.prebuilt and compiled.module.words == \
            compile_vulkan(triple, target).module.words
    # through an actor: the bad entry is a miss, the actor compiles the kernel itself
    a = np.arange(64, dtype=np.float32)
    member = fleet.members("lavapipe")[0]
    ok, error, _, arrays = ray.get(member.handle.run.remote(triple, (a, np.zeros(64, np.float32)),
                                                            {key: other}))
    assert ok, error
    np.testing.assert_array_equal(arrays[1], 3 * a)


def test_entries_from_another_vkir_version_are_misses(fleet, tmp_path, monkeypatch):
    monkeypatch.setenv("VKIR_CACHE_DIR", str(tmp_path))
    target = target_for(fleet.members("lavapipe")[0].info)
    key, made = entry(triple, target)
    monkeypatch.setattr(vkir, "__version__", vkir.__version__ + "+other")
    with prebuilt({key: made}):
        assert not compile_vulkan(triple, target).prebuilt


# -- selectors and arguments -------------------------------------------------------------------
def test_device_selectors_the_fleet_cannot_take_are_clear_errors(fleet):
    a = np.ones(64, np.float32)
    for bad in (3.5, True, object()):
        with pytest.raises(vkir.ArgumentError, match="devices="):
            fleet.run(vadd, a, a, a, devices=bad)
    with pytest.raises(vkir.ArgumentError, match="no device of the fleet matches"):
        fleet.run(vadd, a, a, a, devices=[])
    # a list may mix the forms one selector takes
    both = fleet.run(vadd, a, a, a, devices=["lavapipe", fleet.devices()[1]])
    assert [r.device for r in both] == fleet.devices() and all(r.ok for r in both)
    with pytest.raises(vkir.ArgumentError, match="PrimFunc"):
        fleet.check(vadd.script, a, a, a)


def test_a_connect_that_fails_half_way_names_the_selector_and_leaves_nothing(fleet):
    with pytest.raises(vkir.DeviceError, match="nosuchgpu") as failed:
        vkir.fleet.connect(local=("lavapipe", "nosuchgpu"), env=ENV)
    assert "no device matches" in str(failed.value)
    assert ray.is_initialized()   # the module's fleet's Ray instance was not shut down
    assert all(r.ok for r in fleet.apply(_nap, 0))


# -- interrupted runs and lifecycles -----------------------------------------------------------
def test_a_job_left_running_by_a_bug_does_not_count_against_the_next_jobs_timeout(fleet):
    with pytest.raises(ValueError, match="a bug in the job"):
        fleet.apply(_bug_on_swiftshader_nap_elsewhere, 2.0)
    # lavapipe's actor is still busy with the call the bug cut short: waited for, not timed
    [r] = fleet.apply(_nap, 0.0, devices="lavapipe", timeout=1.5)
    assert r.ok, r.error


def test_a_job_that_crashes_every_device_it_reaches_stops_after_two(fleet):
    fleet.add_local("lavapipe", "lavapipe", env=ENV)
    lavapipes = [m.pid for m in fleet.members("lavapipe")]
    assert len(lavapipes) == 3
    [r] = fleet.apply(_crash, devices=lavapipes[-1])
    assert not r.ok and "crashed" in r.error and str(lavapipes[-1]) in r.error, r.error
    crashed = [int(pid) for pid in re.findall(r"actor pid (\d+)", r.error)]
    assert len(crashed) == 2 and crashed[0] == lavapipes[-1]   # one move, then it is the suspect
    left = [m.pid for m in fleet.members("lavapipe")]
    # each crashed actor was replaced by a fresh one on its device, as after a timeout
    assert len(left) == 3 and not set(crashed) & set(left), (crashed, left)


def test_crashed_actors_are_replaced_and_a_fleet_left_empty_refuses_jobs(fleet):
    """A job that crashes every actor of a local fleet leaves fresh actors behind; where none
    can take a dead actor's place (a served actor), the empty fleet raises instead of returning
    no results (an empty list would pass `for r in results: assert r.ok`)."""
    alone = vkir.fleet.connect(local="lavapipe", env=ENV)
    try:
        [first] = alone.actor_pids()
        [r] = alone.apply(_crash)
        assert not r.ok and "crashed" in r.error, r.error
        [fresh] = alone.actor_pids()
        assert fresh != first
        a = np.arange(64, dtype=np.float32)
        [ok] = alone.check(triple, a, np.zeros(64, np.float32))
        assert ok.ok and ok.pid == fresh, ok.error
        alone.members()[0].origin = None   # as a served actor: its node's to restart
        [r] = alone.apply(_crash)
        assert not r.ok and "device lost" in r.error, r.error
        assert alone.devices() == []
        for job in (lambda: alone.check(triple, a, np.zeros(64, np.float32)),
                    lambda: alone.run(triple, a, np.zeros(64, np.float32)),
                    lambda: alone.apply(_nap, 0)):
            with pytest.raises(vkir.DeviceError, match="the fleet has no live device"):
                job()
    finally:
        alone.close()
    assert all(r.ok for r in fleet.apply(_nap, 0))   # the module's fleet is untouched


def test_a_local_fleets_ray_listens_on_loopback_only(fleets, fleet):
    """Every listening socket of this process and the Ray processes under it (GCS, raylet,
    workers, agents) is on 127.0.0.1: a local fleet is not reachable from the network."""
    import ipaddress

    import psutil

    if fleets["ray_was_up"]:
        pytest.skip("Ray was started before this module, not by connect(local=...)")
    me = psutil.Process()
    pids = {me.pid} | {p.pid for p in me.children(recursive=True)}
    listening = [c.laddr for c in psutil.net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN and c.pid in pids]
    assert len(listening) >= 4, listening   # GCS, raylet, this driver, the actors
    outside = [a for a in listening if not ipaddress.ip_address(a.ip.removeprefix("::ffff:")).is_loopback]
    assert not outside, outside


def test_a_hanging_job_takes_one_device_not_one_per_round(fleet):
    """The rounds of one tuning candidate form a group: after the first hangs, the next round
    is not sent to the device its queue moves to (it would hang that one too)."""
    from vkir.fleet.dispatch import Job, run_jobs

    fleet.add_local("lavapipe", env=ENV)
    doomed = fleet.members()[-1]
    spare = [m for m in fleet.members("lavapipe") if m is not doomed]
    rounds = [Job(doomed, "apply", (_nap, (30.0,)), 0.5, tag=r, group="candidate") for r in range(2)]
    other = Job(doomed, "apply", (_nap, (0.0,)), 30.0, tag="other")
    first, second, moved = run_jobs(rounds + [other], fleet.members())
    assert first.status == "timeout" and "no result after 0.5 s" in first.message
    assert second.status == "cancelled" and "not sent" in second.message
    assert moved.status == "done" and moved.member in spare and moved.moved_from == (doomed,)
    assert [m.pid for m in fleet.members("lavapipe")] == [m.pid for m in spare]


def test_closing_one_fleet_leaves_another_working_until_ray_goes(fleets):
    if "fleet" not in fleets or fleets["fleet"].closed:
        fleets["fleet"] = vkir.fleet.connect(local=("lavapipe", "swiftshader"), env=ENV)
    first = fleets["fleet"]
    second = vkir.fleet.connect(local="swiftshader", env=ENV)   # one selector, as text
    assert [d.name for d in second.devices()] == ["SwiftShader Device (Subzero)"]
    first.close()   # the fleet whose connect may have started Ray
    assert ray.is_initialized()
    [r] = second.apply(_nap, 0.0)
    assert r.ok, r.error
    with pytest.raises(vkir.DeviceError, match="closed"):
        first.check(vadd, np.ones(64, np.float32), np.ones(64, np.float32), np.zeros(64, np.float32))
    ray.shutdown()   # Ray taken away under the open fleet
    with pytest.raises(vkir.DeviceError, match="Ray was shut down"):
        second.devices()
    second.close()   # nothing left to kill; no new Ray instance started for it
    second.close()   # twice is harmless
    assert not ray.is_initialized()


def test_a_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(vkir.UnsupportedError, match=r"vkir\[fleet\]"):
        vkir.fleet.connect(local=("lavapipe",))
