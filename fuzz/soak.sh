#!/usr/bin/env bash
# Long fuzzing rounds measured in CPU time, not wall time (issue 25 item 6: "at least one
# hour per target in total, stated truthfully with executions").
#
# Each named target (default: every target) runs until its fuzzer process has used
# CPU_SECONDS of CPU (user + system, read from /proc), one target after another on each
# of JOBS lanes (default 2). With NICE (default 19) the fuzzers take only CPU nothing else
# wants, so a round can run beside other work and still count honestly: the wall time
# may be far longer than the CPU time, and the ledger records both.
#
# After each target:
#   - its grown corpus (fuzz/corpus/<t>/, git-ignored hex names) is merged into the
#     minimised corpus fuzz/min/<t>/ (libFuzzer -merge=1: only inputs that add coverage),
#     which is kept in the repository and replayed by crates/ftlab/tests/fuzz_corpus.rs;
#   - one line is appended to fuzz/ledger.tsv: date, target, CPU seconds, wall seconds,
#     executions, minimised corpus size, crashes.
# `fuzz/soak.sh --totals` sums the ledger per target.
#
#   CPU_SECONDS=1800 fuzz/soak.sh set nbd       # half an hour of CPU each, two lanes
#   fuzz/soak.sh nbd:2300 set:2050              # a budget per target (CPU seconds)
#   DEADLINE=$(date -d '+2 hours' +%s) fuzz/soak.sh   # an hour each, but stop in 2 hours
#   fuzz/soak.sh --totals
#
# A crash leaves its input under fuzz/artifacts/<target>/ and a ledger line with
# crashes 1; minimise it (cargo fuzz tmin), name it for what it found and keep it under
# fuzz/corpus/<target>/, where the replay test reads it.
set -euo pipefail
cd "$(dirname "$0")"
ledger=ledger.tsv

if [ "${1:-}" = "--totals" ]; then
  awk -F'\t' 'NR > 1 { cpu[$2] += $3; wall[$2] += $4; ex[$2] += $5; cr[$2] += $7; n[$2]++ }
    END { printf "%-14s %8s %8s %14s %7s %7s\n", "target", "CPU min", "wall min", "executions", "rounds", "crashes";
          for (t in cpu) printf "%-14s %8.1f %8.1f %14d %7d %7d\n", t, cpu[t] / 60, wall[t] / 60, ex[t], n[t], cr[t] }' "$ledger" | sort
  exit 0
fi

budget=${CPU_SECONDS:-3600}
# DEADLINE (seconds since the epoch): stop every fuzzer then, budget or not, and
# still record the CPU it used (a round that must end with a session counts what it did).
deadline=${DEADLINE:-9999999999}
jobs=${JOBS:-2}
nice_level=${NICE:-19}
# A target named as NAME:SECONDS carries its own budget; the build only needs the names.
specs=("$@")
names=()
for s in "${specs[@]}"; do
  case $s in
    *:*)
      if ! [[ ${s#*:} =~ ^[0-9]+$ ]]; then
        echo "soak.sh: '$s': the budget after ':' must be whole CPU seconds" >&2
        exit 2
      fi ;;
  esac
  names+=("${s%%:*}")
done
source ./common.sh "${names[@]}"
if [ ${#specs[@]} -eq 0 ]; then specs=("${targets[@]}"); fi
bin_dir=target/$(rustc -vV | sed -n 's/^host: //p')/release
[ -f "$ledger" ] || printf 'date\ttarget\tcpu_s\twall_s\texecutions\tmin_corpus\tcrashes\n' >"$ledger"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

cpu_of() { # user + system seconds of a live process, from /proc/PID/stat fields 14 and 15
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) / hz) }' "/proc/$1/stat" 2>/dev/null || echo -1
}

soak_one() {
  local t=${1%%:*} budget=$budget
  case $1 in *:*) budget=${1#*:} ;; esac
  local log="$logs/$t.log" start cpu=0 c rc=0 pid
  if [ "$(date +%s)" -ge "$deadline" ]; then return 0; fi
  mkdir -p "corpus/$t" "min/$t" "artifacts/$t"
  start=$(date +%s)
  nice -n "$nice_level" "$bin_dir/$t" "corpus/$t" -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="artifacts/$t/" >"$log" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 5
    # Keep the last reading: once the fuzzer has exited, /proc has nothing left to read.
    c=$(cpu_of "$pid")
    if [ "$c" -ge 0 ]; then cpu=$c; fi
    if [ "$cpu" -ge "$budget" ] || [ "$(date +%s)" -ge "$deadline" ]; then
      kill -INT "$pid" 2>/dev/null || true
      break
    fi
  done
  wait "$pid" || rc=$?
  local wall=$(($(date +%s) - start))
  # libFuzzer exits 72 when interrupted (the budget reached): not a crash.
  local crashes=0
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 72 ] && [ "$rc" -ne 130 ]; then crashes=1; fi
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1 || true)
  "$bin_dir/$t" -merge=1 "min/$t" "corpus/$t" -max_len=65536 >"$log.merge" 2>&1 || true
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$cpu" "$wall" "${execs:-0}" \
    "$(ls "min/$t" | wc -l)" "$crashes" >>"$ledger"
  printf '%-14s cpu %5ss  wall %6ss  %12s executions  min corpus %5s  %s\n' "$t" "$cpu" "$wall" \
    "${execs:-?}" "$(ls "min/$t" | wc -l)" \
    "$([ $crashes -eq 0 ] && echo 'no crash' || echo "CRASH (rc $rc, see fuzz/artifacts/$t and $log)")"
  if [ $crashes -ne 0 ]; then cp "$log" "artifacts/$t/last.log"; fi
}

lane() { # runs every JOBS-th target starting at $1
  local i
  for ((i = $1; i < ${#specs[@]}; i += jobs)); do soak_one "${specs[$i]}"; done
}
for ((l = 0; l < jobs; l++)); do lane "$l" & done
wait
