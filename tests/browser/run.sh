#!/usr/bin/env bash
# The HTML report in a real browser (issue 21), from the repository root: installs
# Chromium and its driver from Debian packages when missing (apt-get, as root), selenium
# and pytest into a virtual environment, builds the release CLI and runs
# tests/browser/test_html_report.py. Screenshots land in target/browser/;
# FTLAB_UPDATE_SCREENSHOT=1 also rewrites docs/img/report.png (the README's).
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON=${PYTHON:-python3}
VENV=${FTLAB_BROWSER_VENV:-target/browser-venv}

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "chromium and chromium-driver are needed and apt-get is not available" >&2
    exit 1
  fi
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium chromium-driver
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -c "import selenium, pytest" 2>/dev/null \
  || "$VENV/bin/python" -m pip install --quiet selenium pytest

if [ -z "${FTLAB_CLI:-}" ]; then
  cargo build --release --locked --bin ftlab
  export FTLAB_CLI="$PWD/target/release/ftlab"
fi

set +e
"$VENV/bin/python" -m pytest tests/browser -q -p no:cacheprovider
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no browser tests: failing" >&2
  exit 1
fi
exit "$rc"
