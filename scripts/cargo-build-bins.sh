#!/usr/bin/env bash
# Builds the debug binaries of the named packages, quietly:
#
#   scripts/cargo-build-bins.sh xdb-server xdb-samples
#
# Under scripts/test.sh (XDB_BUILD_AS_TESTS=1) it builds every binary of the workspace as
# `cargo test --workspace` resolves features, so they share every compiled crate with the
# tests' build. A `-p` build resolves features for the named packages alone (no
# dev-dependencies, no other members), so cargo compiles a second variant of tokio and of
# every crate above it: minutes a script in a CI run. Run alone, it builds just the named
# packages, the quickest way from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $# -eq 0 ]]; then
    echo "cargo-build-bins: name the packages whose binaries to build" >&2
    exit 2
fi
if [[ "${XDB_BUILD_AS_TESTS:-}" == 1 ]]; then
    exec cargo build --quiet --workspace --tests --bins
fi
exec cargo build --quiet "${@/#/-p=}" --bins
