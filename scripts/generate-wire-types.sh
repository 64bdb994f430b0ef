#!/usr/bin/env bash
# Generates the SDKs' and the web console's wire types from xdb-protocol/openapi.json:
#   sdk-python/src/xdb/_wire.py                pydantic models (datamodel-code-generator)
#   sdk-typescript/src/generated/types.gen.ts  types, and zod.gen.ts: zod schemas
#   console/src/generated/types.gen.ts         the same types          (@hey-api/openapi-ts)
# They are generated from the wire schemas (scripts/wire-types/wire_schemas.py: the
# document as a reader of the service sees it) and committed; the hand-written modules
# (protocol.py, protocol.ts, types.ts) re-export them under the names users type.
#
# Usage: scripts/generate-wire-types.sh [--check] [python] [typescript] [console]
#   (all three when none is named). --check generates into a temporary folder and fails,
#   naming the stale files, when the committed ones differ; the SDKs' and the console's
#   test scripts run it.
# The generators are the versions the SDKs pin: sdk-python's `dev` extra (its .venv,
# made by scripts/ensure-sdk-python-venv.sh) and sdk-typescript's devDependencies (its
# node_modules, installed with `npm ci` when missing or older than its lock file).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "generate-wire-types: $*"; }
die() {
    echo "generate-wire-types: ERROR: $*" >&2
    exit 1
}

check=0
targets=()
for arg in "$@"; do
    case "$arg" in
        --check) check=1 ;;
        python | typescript | console) targets+=("$arg") ;;
        *) die "unknown argument '$arg' (expected --check, python, typescript, console)" ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(python typescript console)
wants() { [[ " ${targets[*]} " == *" $1 "* ]]; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 scripts/wire-types/wire_schemas.py <xdb-protocol/openapi.json >"$work/wire-schemas.json"

# Where each generated file goes: into the repository, or beside it to compare.
out() {
    if [ "$check" = 1 ]; then echo "$work/out/$1"; else echo "$1"; fi
}

readonly PY_WIRE=sdk-python/src/xdb/_wire.py
readonly TS_WIRE=sdk-typescript/src/generated
readonly CONSOLE_WIRE=console/src/generated

generate_python() {
    scripts/ensure-sdk-python-venv.sh
    local raw="$work/_wire.raw.py" dest
    dest="$(out "$PY_WIRE")"
    mkdir -p "$(dirname "$dest")"
    # Field names snake_case, with the camelCase wire names from WireModel's alias
    # generator; defaults from the document; enums as StrEnum with the wire values as
    # member names.
    sdk-python/.venv/bin/datamodel-codegen \
        --input "$work/wire-schemas.json" --input-file-type openapi \
        --output "$raw" --output-model-type pydantic_v2.BaseModel \
        --target-python-version 3.11 --target-pydantic-version 2.11 \
        --base-class xdb._wire_base.WireModel --snake-case-field --no-alias \
        --strict-nullable --deserialize-default-values enum \
        --use-specialized-enum --capitalise-enum-members --enum-field-as-literal one \
        --use-schema-description --use-field-description --use-single-line-docstring \
        --disable-timestamp --no-formatters \
        --custom-file-header-path scripts/wire-types/python-header.txt
    # Formatted and import-sorted as the package's own files are (its ruff settings).
    (cd sdk-python &&
        .venv/bin/ruff check --fix-only --exit-zero --quiet --stdin-filename src/xdb/_wire.py |
        .venv/bin/ruff format --quiet --stdin-filename src/xdb/_wire.py) <"$raw" >"$dest"
}

generate_typescript() {
    if [ ! -f sdk-typescript/node_modules/.package-lock.json ] ||
        [ sdk-typescript/package-lock.json -nt sdk-typescript/node_modules/.package-lock.json ]; then
        log "npm ci in sdk-typescript (its dependencies are missing or older than its lock file)"
        (cd sdk-typescript && npm ci --no-audit --no-fund --loglevel=error)
    fi
    local dest="$work/typescript"
    XDB_WIRE_SCHEMAS="$work/wire-schemas.json" XDB_WIRE_OUTPUT="$dest" \
        sdk-typescript/node_modules/.bin/openapi-ts --silent --no-log-file \
        --file scripts/wire-types/openapi-ts.config.mjs
    if wants typescript; then
        mkdir -p "$(out "$TS_WIRE")"
        cp "$dest/types.gen.ts" "$dest/zod.gen.ts" "$(out "$TS_WIRE")/"
    fi
    if wants console; then
        mkdir -p "$(out "$CONSOLE_WIRE")"
        cp "$dest/types.gen.ts" "$(out "$CONSOLE_WIRE")/"
    fi
}

wants python && generate_python
if wants typescript || wants console; then generate_typescript; fi

if [ "$check" = 0 ]; then
    log "generated ${targets[*]} from xdb-protocol/openapi.json"
    exit 0
fi
stale=()
while IFS= read -r -d '' generated; do
    committed="${generated#"$work/out/"}"
    cmp -s "$generated" "$committed" || stale+=("$committed")
done < <(find "$work/out" -type f -print0 | sort -z)
# A generated folder holds only generated files: one more there is stale too.
for folder in "$TS_WIRE" "$CONSOLE_WIRE"; do
    [ -d "$work/out/$folder" ] || continue
    for committed in "$folder"/*; do
        [ -e "$work/out/$committed" ] || stale+=("$committed (not generated)")
    done
done
if [ ${#stale[@]} -gt 0 ]; then
    printf 'generate-wire-types: ERROR: stale: %s\n' "${stale[@]}" >&2
    die "the wire types differ from xdb-protocol/openapi.json: run scripts/generate-wire-types.sh and commit them"
fi
log "up to date: ${targets[*]}"
