#!/usr/bin/env bash
# The NBD clients `ftlab serve`'s tests (crates/ftlab-cli/tests/serve.rs) talk to:
# qemu-io and qemu-img (qemu-utils), nbdcopy and nbdinfo (libnbd-bin). Installs them
# from Debian packages when missing (apt-get, as root or through sudo).
set -euo pipefail

missing=()
command -v qemu-io >/dev/null 2>&1 && command -v qemu-img >/dev/null 2>&1 || missing+=(qemu-utils)
command -v nbdcopy >/dev/null 2>&1 && command -v nbdinfo >/dev/null 2>&1 || missing+=(libnbd-bin)
if [ ${#missing[@]} -eq 0 ]; then
  echo "NBD clients present: $(command -v qemu-io qemu-img nbdcopy nbdinfo | tr '\n' ' ')"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "${missing[*]} needed for ftlab serve's tests and apt-get is not available" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
