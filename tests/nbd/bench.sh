#!/usr/bin/env bash
# Requests/s through NBD: `ftlab serve` (release build) under fio's nbd engine (libnbd)
# at queue depth 1 and 32, 4 KiB random writes then random reads of the written pages.
# From the repository root: bash tests/nbd/bench.sh [SECONDS per case, default 20].
# Extra device flags go in FTLAB_SERVE_FLAGS (default: 1 GiB, mlc-k9gag08u0m, page FTL).
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${1:-20}
FLAGS=${FTLAB_SERVE_FLAGS:---capacity 1GiB --nand mlc-k9gag08u0m --ftl page}
command -v fio >/dev/null || { echo "fio is needed (apt-get install fio)" >&2; exit 1; }
fio --enghelp=nbd >/dev/null 2>&1 || { echo "this fio has no nbd engine" >&2; exit 1; }
cargo build --release --locked --bin ftlab -q
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
# shellcheck disable=SC2086
target/release/ftlab serve --socket "$DIR/s.sock" $FLAGS --stats-every 0 \
  --json "$DIR/report.json" --record "$DIR/requests.trace" >"$DIR/summary.txt" 2>"$DIR/serve.log" &
PID=$!
for _ in $(seq 100); do [ -S "$DIR/s.sock" ] && break; sleep 0.1; done
URI="nbd+unix:///ftlab?socket=$DIR/s.sock"
printf '%-10s %5s %12s %12s\n' workload QD 'requests/s' 'p99 us'
for rw in randwrite randread; do
  for qd in 1 32; do
    fio --name="$rw" --ioengine=nbd --uri="$URI" --rw="$rw" --bs=4k --iodepth="$qd" \
      --size=256M --time_based --runtime="$SECS" --output-format=json >"$DIR/fio.json"
    python3 - "$DIR/fio.json" "$rw" "$qd" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
job = json.loads(text[text.index("{"):])["jobs"][0]  # after fio's "connected" line
side = job["write"] if sys.argv[2].endswith("write") else job["read"]
p99 = side["clat_ns"]["percentile"].get("99.000000", 0) / 1000
print(f"{sys.argv[2]:<10} {sys.argv[3]:>5} {side['iops']:>12.0f} {p99:>12.1f}")
PY
  done
done
kill -INT "$PID"
wait "$PID" || true
grep -E "^served" "$DIR/serve.log"
