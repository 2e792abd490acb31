#!/usr/bin/env bash
# Prints the SHA-256 of everything tools/build-pkg.sh builds pkg/ from: the files it reads (the crate,
# the package's templates, the models it copies), the toolchains' versions and RUSTFLAGS. build-pkg.sh
# keeps it beside its output, so that `--if-changed` can tell whether pkg/ is current.
set -euo pipefail
cd "$(dirname "$0")/.."
{
  # Regular files only: wisp-agent's 98 MB base is a link beside its manifest, and not part of pkg/.
  find src pkg-templates .cargo models/wisp-mini models/wisp-agent -type f -print0 | sort -z | xargs -0 sha256sum
  sha256sum Cargo.toml Cargo.lock tools/build-pkg.sh tools/nightly-toolchain LICENSE-MIT LICENSE-APACHE
  rustc --version
  cargo "+$(cat tools/nightly-toolchain)" --version
  wasm-bindgen --version
  echo "RUSTFLAGS=${RUSTFLAGS:-}"
} | sha256sum | cut -d' ' -f1
