#!/usr/bin/env bash
# Installs the Python the tests use as a client in another language, pinned, into a virtual
# environment under .cache/python (ignored by git): gRPC's C-core (grpcio), and protoc with
# Python's protobuf (grpcio-tools) to read the API's JSON with Chancery's own .proto files.
# The tests look for .cache/python/bin/python when CHANCERY_TEST_PYTHON is not set. Run again
# to repair; it does nothing if the pinned versions are there.
set -euo pipefail
cd "$(dirname "$0")/.."

GRPCIO=1.85.1
DIR=.cache/python
PYTHON="$DIR/bin/python"

if [ -x "$PYTHON" ] && "$PYTHON" -c "import grpc, grpc_tools; assert grpc.__version__ == '$GRPCIO'" 2>/dev/null; then
  "$PYTHON" -c "import grpc, google.protobuf; print('grpcio', grpc.__version__, 'protobuf', google.protobuf.__version__)"
  exit 0
fi

python3 -m venv "$DIR"
"$DIR/bin/pip" install --quiet --disable-pip-version-check "grpcio==$GRPCIO" "grpcio-tools==$GRPCIO"
"$PYTHON" -c "import grpc, google.protobuf; print('grpcio', grpc.__version__, 'protobuf', google.protobuf.__version__)"
