"""Every kernel generated anywhere in the test suite validates for both Vulkan
environments. tests/checker_plugin.py wraps `vkir.spirv.codegen` for the session; these tests show
that the wrapper is the function every caller gets, and that it really generates and validates
the kernel for Vulkan 1.1 (SPIR-V 1.3) and Vulkan 1.3 (SPIR-V 1.6) with the caller's features."""

import sys

import pytest

import vkir
import vkir.spirv
from vkir import T
from vkir.spirv import FEATURES, Target


@T.prim_func
def halfadd(a: T.Buffer((64,), "float16"), b: T.Buffer((64,), "float16")):
    for tx in T.thread_binding(64, "threadIdx.x"):
        b[tx] = a[tx] + a[tx]


def _record_validations(monkeypatch):
    """(SPIR-V version, env) of every module the codegen package validates from now on."""
    package = sys.modules["vkir.spirv.codegen"]
    seen = []
    original = package.validate

    def validate(words, env="vulkan1.1"):
        seen.append(((words[6], words[5]), env))  # version word 0x00MMmm00, little-endian
        return original(words, env)

    monkeypatch.setattr(package, "validate", validate)
    return seen


def test_every_caller_gets_the_validating_codegen():
    from vkir.spirv import codegen  # what test modules and vkir.api import

    assert getattr(codegen, "__wrapped_by_checker_plugin__", False)
    assert vkir.spirv.codegen is codegen is sys.modules["vkir.spirv.codegen"].codegen


@pytest.mark.parametrize("target", [Target(), Target.vulkan13(), Target.lavapipe(),
                                    Target(spirv_version=(1, 5), env="vulkan1.2")],
                         ids=["vulkan1.1", "vulkan1.3", "lavapipe", "vulkan1.2"])
def test_each_module_is_also_validated_for_vulkan_1_1_and_1_3(monkeypatch, target):
    seen = _record_validations(monkeypatch)
    func = vkir.lower(vkir.from_script(halfadd.script()))  # a fresh object: nothing memoized
    features = target.features | {"float16", "storage_buffer_16bit"}
    target = Target(spirv_version=target.spirv_version, env=target.env, features=features)
    module = vkir.spirv.codegen(func, target)
    assert module.required_features >= {"float16", "storage_buffer_16bit"}
    assert ((1, 3), "vulkan1.1") in seen and ((1, 6), "vulkan1.3") in seen
    assert seen[0] == (target.spirv_version, target.env)  # the caller's own module first
    n = len(seen)
    vkir.spirv.codegen(func, target)  # an equal target: memoized, validated again only for itself
    assert len(seen) == n + 1


@T.prim_func
def twice(a: T.Buffer(("n",), "float32"), b: T.Buffer(("n",), "float32")):
    for bx in T.thread_binding((n + 63) // 64, "blockIdx.x"):
        for tx in T.thread_binding(64, "threadIdx.x"):
            if bx * 64 + tx < n:
                b[bx * 64 + tx] = a[bx * 64 + tx] * T.float32(2)


def test_build_validates_for_both_environments(device, monkeypatch):
    """The facade's kernels go through the same wrapper (vkir.api calls vkir.spirv.codegen)."""
    seen = _record_validations(monkeypatch)
    vkir.build(twice, device=device)
    assert {((1, 3), "vulkan1.1"), ((1, 6), "vulkan1.3")} <= set(seen)


def test_unsupported_feature_is_reported_for_the_caller_target():
    with pytest.raises(vkir.UnsupportedError, match="float16"):
        vkir.spirv.codegen(vkir.lower(halfadd), Target())
    assert "float16" in FEATURES


def test_a_module_invalid_only_for_vulkan_1_3_fails_the_caller(monkeypatch):
    """A validator that rejects only vulkan1.3 makes a Vulkan 1.1 codegen call fail."""
    package = sys.modules["vkir.spirv.codegen"]
    original = package.validate

    def validate(words, env="vulkan1.1"):
        if env == "vulkan1.3":
            raise vkir.SpirvValidationError("rejected for vulkan1.3")
        return original(words, env)

    monkeypatch.setattr(package, "validate", validate)
    with pytest.raises(vkir.SpirvValidationError, match="vulkan1.3"):
        vkir.spirv.codegen(vkir.lower(vkir.from_script(twice.script())), Target())
