#!/usr/bin/env bash
# CI of the Python package, from the repository root on a fresh machine with a Rust
# toolchain and python3 (>= 3.9, with venv): creates a virtual environment, installs
# the test dependencies with pip, pip-installs ./crates/ftlab-py (with the test-only
# `example` FTL, for the DataLossError and InternalError tests), runs pytest (the sweep
# tests start a real dask.distributed LocalCluster of two worker processes) and
# executes the example notebooks. Exits non-zero on any failure, including "no tests
# collected" (pytest exit code 5).
#
#   crates/ftlab-py/ci.sh            # PYTHON=python3.9 to pick the interpreter
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
VENV=${FTLAB_PY_VENV:-target/ftlab-py-venv}
step() { printf '\n== %s\n' "$*"; }

step "fresh virtual environment ($VENV, $("$PYTHON" --version 2>&1))"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install --quiet --upgrade pip
"$PY" -m pip install --quiet pytest numpy pandas pyarrow polars matplotlib nbclient nbformat ipykernel "dask[distributed]"

step "the release CLI (the Python reports are compared with its JSON)"
cargo build --release --locked --bin ftlab
export FTLAB_CLI="$PWD/target/release/ftlab"

step "pip install ./crates/ftlab-py (with the example-scheme feature)"
MATURIN_PEP517_ARGS="--locked --features example-scheme" "$PY" -m pip install ./crates/ftlab-py
export FTLAB_REQUIRE_EXAMPLE=1 # the fault-injection tests must run, not skip
export FTLAB_REQUIRE_DASK=1    # and so must the Dask cluster tests

step "pytest crates/ftlab-py/tests"
set +e
(cd crates/ftlab-py && "../../$PY" -m pytest tests -q -p no:cacheprovider)
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
if [ "$rc" -ne 0 ]; then
  echo "pytest failed (exit code $rc)" >&2
  exit "$rc"
fi

shopt -s nullglob
notebooks=(examples/notebooks/*.ipynb)
if [ "${#notebooks[@]}" -gt 0 ]; then
  step "notebooks: ${notebooks[*]}"
  "$PY" - "${notebooks[@]}" <<'PYEOF'
import os
import sys

import nbformat
from nbclient import NotebookClient

for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    # Run in the notebook's folder, as Jupyter does.
    folder = os.path.dirname(os.path.abspath(path))
    NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        sys.exit("%s: %d cells raised" % (path, len(errors)))
    print("%s: ran clean" % path)
PYEOF
fi
echo "ftlab-py CI passed"
