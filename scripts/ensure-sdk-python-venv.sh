#!/usr/bin/env bash
# Makes the Python SDK's virtualenv, sdk-python/.venv, with the SDK and its dev extras
# from PyPI, again whenever sdk-python/pyproject.toml changes (idempotent: quick when it
# is current). Installs Debian's python3-venv when the interpreter needs it.
# Environment: XDB_PYTHON (the interpreter to build the virtualenv with; default the
# newest python3.x >= 3.11 found).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "ensure-sdk-python-venv: $*"; }
die() {
    echo "ensure-sdk-python-venv: ERROR: $*" >&2
    exit 1
}

readonly SDK=sdk-python
readonly VENV="$SDK/.venv"

find_python() {
    local candidate
    for candidate in ${XDB_PYTHON:-} python3.13 python3.12 python3.11 python3; do
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

stamp="$(sha256sum "$SDK/pyproject.toml" | cut -d' ' -f1)"
[ "$(cat "$VENV/.xdb-stamp" 2>/dev/null)" = "$stamp" ] && exit 0
python="$(find_python)" || die "no Python 3.11 or newer found (set XDB_PYTHON)"
log "creating $VENV with $("$python" --version)"
rm -rf "$VENV"
if ! "$python" -m venv "$VENV" 2>/dev/null; then
    # Debian's python3 needs its venv package for ensurepip.
    [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 ||
        die "$python cannot create a virtualenv; install python3-venv"
    log "installing python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq python3-venv >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
    rm -rf "$VENV"
    "$python" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e "$SDK[dev]"
echo "$stamp" >"$VENV/.xdb-stamp"
