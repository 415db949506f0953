#!/usr/bin/env bash
# Runs libFuzzer targets (test/fuzz/) for a set time each and prints one line per target.
#
#   hack/fuzz.sh [--seconds N | --runs N] [--work DIR] TARGET_BINARY...
#
# Each target starts from its seed corpus test/fuzz/corpus/<target>/ (read, never written) plus
# what earlier runs with the same --work folder found (DIR/<target>/corpus grows across runs).
# --runs N is the deterministic short run `make test` uses: N inputs with a fixed seed from the
# seeds alone (the work corpus is emptied first), so a test run never depends on an earlier one.
# Inputs that crash, leak or time out are kept in DIR/<target>/artifacts and make the exit
# status 1; the line then names the file. `make fuzz` runs this for FUZZ_SECONDS per target.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
seconds=60
runs=""
work="$here/build/debug/fuzz-campaign"
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    -*) echo "fuzz.sh: unknown flag $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || { echo "usage: hack/fuzz.sh [--seconds N] [--work DIR] TARGET..." >&2; exit 2; }

status=0
for bin in "${targets[@]}"; do
  name="$(basename "$bin")"
  seeds="$here/test/fuzz/corpus/$name"
  dir="$work/$name"
  if [ -n "$runs" ]; then
    rm -rf "$dir/corpus"
    budget=(-runs="$runs" -seed=1)
  else
    budget=(-max_total_time="$seconds")
  fi
  mkdir -p "$dir/corpus" "$dir/artifacts"
  log="$dir/last-run.log"
  # -timeout: one input taking longer is a finding; -rss_limit_mb bounds memory like a crash.
  set +e
  "$bin" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" "$seeds" >"$log" 2>&1
  rc=$?
  set -e
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  size=$(find "$dir/corpus" -type f | wc -l)
  if ((rc == 0)); then
    printf '%-22s %12s runs %8s/s  corpus %6s  ok\n' "$name" "${executed:-?}" "${speed:-?}" "$size"
  else
    status=1
    found=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    printf '%-22s %12s runs %8s/s  corpus %6s  FAILED (exit %d) %s\n' "$name" "${executed:-?}" \
      "${speed:-?}" "$size" "$rc" "${found:-see $log}"
    grep -E "ERROR: |SUMMARY: |runtime error" "$log" | head -5 >&2 || true
  fi
done
exit $status
