# vkir: `make demo` and `make test` each do their own set-up on a fresh Debian machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# two stamps: vkir with its own dependencies (all `make demo` needs), then the extras the suite
# needs (`make test`: torch, TVM, IREE, wgpu, Ray...), installed into the same .venv
CORE_STAMP := $(VENV)/.installed-core
TEST_STAMP := $(VENV)/.installed-test
TEST_EXTRAS := test,peers,tvm,wgpu,fleet,bench
# the Vulkan loader and lavapipe run vkir; the suite adds the validation layer and chromium
CORE_PACKAGES := python3 python3-venv libvulkan1 mesa-vulkan-drivers
SYSTEM_PACKAGES := $(CORE_PACKAGES) vulkan-validationlayers chromium-common chromium
# two independent Vulkan drivers: Mesa's lavapipe (found by the loader) and SwiftShader, which
# Debian's chromium-common ships outside the loader's folders; chromium (headless) screenshots
# the golden-image triage page in its test
SWIFTSHADER_ICD := /usr/lib/chromium/vk_swiftshader_icd.json
# a second lavapipe, Mesa 25 from Debian's bookworm-backports, unpacked here beside the system's
# 22.3 (which stays installed) and selected by VK_ICD_FILENAMES=$(MESA25)/lvp_icd.json
MESA25 := build/mesa25

.PHONY: setup setup-core core-deps system-deps mesa25 demo test test-full bench fuzz clean

# what `make demo` needs: vkir alone
setup-core: core-deps $(CORE_STAMP)

# what the suite (and bench, fuzz) needs: the extras, the test drivers and the second lavapipe
setup: system-deps $(TEST_STAMP) mesa25

core-deps:
	@./.ci/system-deps.sh $(CORE_PACKAGES)

system-deps:
	@./.ci/system-deps.sh $(SYSTEM_PACKAGES)

# outside CI a machine that cannot reach the backports goes on without it (make test then
# reports the Mesa 25 session skipped); under CI (VKIR_CI=1) that fails
mesa25:
	@./.ci/mesa-backports.sh $(MESA25) || { [ "$${VKIR_CI:-0}" != 1 ] && \
		echo "no Mesa 25 lavapipe (see above): make test skips its session"; }

$(CORE_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(TEST_STAMP): $(CORE_STAMP)
	$(PY) -m pip install -q -e '.[$(TEST_EXTRAS)]'
	touch $@

demo: setup-core
	$(VENV)/bin/vkir demo

# the whole suite on lavapipe, the device tests again on SwiftShader and the quirk-sensitive,
# image and golden device tests on Mesa 25's lavapipe (host-only tests compute the same on any
# driver; tests/conftest.py keeps the `device` marker and the device fixtures in agreement), as
# four concurrent pytest sessions (tools/run_suite.py: the lavapipe pass in two shards by folder;
# `python tools/run_suite.py --serial` runs them one after another). Tests marked `timing`
# assert wall-clock bounds and run only on request (-m timing). Tests marked `full` (the long
# end-to-end cases beyond one representative of each heavy kind) run only in `make test-full`,
# which keeps make test (what CI runs) under 10 minutes on 2 cores.
test: setup
	$(PY) tools/run_suite.py

# the same sessions with every test, the `full` ones included
test-full: setup
	$(PY) tools/run_suite.py --full

bench: setup
	$(VENV)/bin/vkir bench

# the fuzzing campaign (vkir/tools/fuzz): FUZZ_COUNT programs of campaign FUZZ_SEED on lavapipe,
# then on SwiftShader; a program taking more than FUZZ_TIMEOUT seconds is killed and reported as a
# timeout. Mismatches that a known driver bug explains (vkir/tools/fuzz/known.py) are counted by
# class, not findings: the target fails only on new findings (sources in fuzz-findings/DRIVER)
FUZZ_COUNT ?= 500
FUZZ_SEED ?= 0
FUZZ_TIMEOUT ?= 60
FUZZ_ARGS = --count $(FUZZ_COUNT) --seed $(FUZZ_SEED) --timeout $(FUZZ_TIMEOUT)
fuzz: setup
	status=0; \
	VKIR_DEVICE=lavapipe VKIR_VALIDATION=1 $(PY) -m vkir.tools.fuzz $(FUZZ_ARGS) \
		--out fuzz-findings/lavapipe || status=1; \
	VKIR_DEVICE=swiftshader VK_ICD_FILENAMES=$(SWIFTSHADER_ICD) VKIR_VALIDATION=1 \
		$(PY) -m vkir.tools.fuzz $(FUZZ_ARGS) --out fuzz-findings/swiftshader || status=1; \
	exit $$status

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
