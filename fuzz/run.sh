#!/usr/bin/env bash
# Runs every cargo-fuzz target for SECONDS_EACH seconds each (default 60), two at a time,
# on its corpus fuzz/corpus/<target>/ (new entries land there with hex names, which git
# ignores and the replay tests read), and prints one line per target: time,
# executions, corpus size, crashes. Installs cargo-fuzz when missing. The machine has
# one stable toolchain, so the sanitizer-free build runs with RUSTC_BOOTSTRAP=1 (what
# cargo-fuzz needs from nightly is -Z flags); with a nightly toolchain set
# TOOLCHAIN=+nightly and drop nothing else.
#
#   fuzz/run.sh                 # every target, 60 s each
#   SECONDS_EACH=3600 fuzz/run.sh config set   # an hour each for two targets
#
# A crash leaves its input under fuzz/artifacts/<target>/; minimise it
# (cargo fuzz tmin), give it a name that says what it found and keep it under
# fuzz/corpus/<target>/, where crates/ftlab/tests/fuzz_corpus.rs replays it.
set -euo pipefail
cd "$(dirname "$0")"
each=${SECONDS_EACH:-60}
source ./common.sh "$@"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_one() {
  local t=$1
  local log="$logs/$t.log" rc=0
  cargo ${TOOLCHAIN:-} fuzz run --release --debug-assertions --sanitizer none "$t" -- \
    -max_total_time="$each" -max_len=65536 -print_final_stats=1 >"$log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  printf '%-14s %5ss  %12s executions  corpus %5s  %s\n' "$t" "$each" "$execs" \
    "$(ls corpus/"$t" | wc -l)" "$([ $rc -eq 0 ] && echo 'no crash' || echo "CRASH (rc $rc, see fuzz/artifacts/$t; a stack overflow leaves none: replay the corpus with cargo test)")"
}
i=0
for t in "${targets[@]}"; do
  run_one "$t" &
  i=$((i + 1))
  if [ $((i % 2)) -eq 0 ]; then wait; fi
done
wait
