#!/usr/bin/env bash
# Runs the whole XDB test suite: formatting, lints, unit tests and the integration suite
# against real PostgreSQL and MariaDB servers (installed and started if missing), and
# the Pulsar-mode scenarios against a real broker fed by Debezium.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-rust.sh
scripts/ensure-postgres.sh
scripts/ensure-mariadb.sh
# Pulsar CDC mode: Debezium-ready databases, the broker and the Debezium relay.
scripts/ensure-pulsar.sh

echo "test: deployment artefacts (Helm chart, Dockerfiles, compose files)"
scripts/check-helm.sh
echo "test: cargo fmt --check"
cargo fmt --all -- --check
echo "test: cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "test: cargo test"
cargo test --workspace
