#!/usr/bin/env bash
# Unpacks a second lavapipe, Mesa's from Debian's bookworm-backports (25.0 with Vulkan 1.4), into
# DEST (default build/mesa25) beside the system's Mesa 22.3, which stays installed and in use:
# nothing is installed, and apt's own sources and package lists are left alone (apt works from a
# private folder under DEST, so no root is needed). The driver is selected by its manifest,
# VK_ICD_FILENAMES=DEST/lvp_icd.json, whose library_path names the unpacked library. The
# backports build links the system's LLVM 15, libdrm and X/Wayland client libraries, so nothing
# else is unpacked. Reuses the Debian mirror this machine's apt sources name.
set -euo pipefail
dest="$(realpath -m "${1:-build/mesa25}")"
icd="$dest/lvp_icd.json"
library="$dest/root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
[ -f "$icd" ] && [ -f "$library" ] && exit 0

# the mirror of the main Debian archive in /etc/apt/sources.list* (one-line or deb822 format)
mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
            2>/dev/null | grep -v '^\s*#' | grep -oE '(https?|file)://[^ ]+/debian/?( |$)' \
            | head -n 1 | tr -d ' ' || true)"
mirror="${mirror:-http://deb.debian.org/debian}"
apt_dir="$dest/apt"
mkdir -p "$apt_dir/sources" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dest/debs"
cat > "$apt_dir/sources/backports.sources" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
: > "$apt_dir/empty.list"
apt_options=(-q -o "Dir::Etc::SourceList=$apt_dir/empty.list" -o "Dir::Etc::SourceParts=$apt_dir/sources"
             -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
             -o "APT::Sandbox::User=$(id -un)" -o "Debug::NoLocking=1")
echo "fetching mesa-vulkan-drivers from $mirror bookworm-backports into $dest"
apt-get "${apt_options[@]}" update >/dev/null
(cd "$dest/debs" && rm -f ./*.deb && apt-get "${apt_options[@]}" download mesa-vulkan-drivers/bookworm-backports >/dev/null)
rm -rf "$dest/root"
dpkg-deb -x "$dest"/debs/mesa-vulkan-drivers_*.deb "$dest/root"
[ -f "$library" ] || { echo "mesa-vulkan-drivers from backports has no $library" >&2; exit 1; }
api="$(grep -oE '"api_version": *"[^"]+"' "$dest/root/usr/share/vulkan/icd.d/lvp_icd.json" | grep -oE '[0-9.]+' || echo 1.3.0)"
cat > "$icd.tmp" <<EOF
{
    "ICD": {
        "api_version": "$api",
        "library_path": "$library"
    },
    "file_format_version": "1.0.0"
}
EOF
mv "$icd.tmp" "$icd"
echo "Mesa $(dpkg-deb -f "$dest"/debs/mesa-vulkan-drivers_*.deb Version): VK_ICD_FILENAMES=$icd selects it"
