#!/usr/bin/env bash
# Fails with a clear message when cargo is missing; the project builds with the stable
# toolchain (see rust-version in Cargo.toml). Installs protoc (Debian's
# protobuf-compiler) when missing: the `pulsar` client crate's build script generates
# the Pulsar protocol's types with it.
set -euo pipefail
if ! command -v cargo >/dev/null 2>&1; then
    echo "ensure-rust: cargo not found; install Rust (https://rustup.rs) and re-run" >&2
    exit 1
fi
if ! command -v protoc >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "ensure-rust: protoc not found; install protobuf-compiler (Debian) or set PROTOC" >&2
        exit 1
    fi
    echo "ensure-rust: installing protobuf-compiler (protoc) for the pulsar crate's build"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq protobuf-compiler >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq protobuf-compiler >/dev/null; }
fi
