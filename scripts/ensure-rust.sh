#!/usr/bin/env bash
# Fails with a clear message when cargo is missing; the project builds with the stable
# toolchain (see rust-version in Cargo.toml).
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
    echo "ensure-rust: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
    exit 1
fi
