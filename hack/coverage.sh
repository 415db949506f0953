#!/usr/bin/env bash
# Line coverage of the C++ modules by the C++ unit tests (ctest label `unit`, not sdk.*), per
# module: builds a separate tree with gcc's --coverage at -O0
# (build/coverage, about the time of a cold build), runs the unit tests there, and sums gcov's
# "Lines executed" over each module's .cc files (tests excluded).
#
#   hack/coverage.sh                 # every module under src/
#   hack/coverage.sh operator local  # only these modules
#
# Needs gcc's gcov (Debian: gcc). Prints "module  covered/lines  percent".
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINCTL_COVERAGE_DIR:-$repo/build/coverage}"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS="--coverage -O0" -DCMAKE_EXE_LINKER_FLAGS="--coverage" >/dev/null
cmake --build "$build" >/dev/null
find "$build" -name '*.gcda' -delete
(cd "$build" && ctest -L unit -E '^sdk[.]' --output-on-failure >/dev/null) || {
  echo "coverage: some unit tests failed (rerun: ctest --test-dir $build -L unit)" >&2; exit 1; }
modules=("$@")
if [[ ${#modules[@]} -eq 0 ]]; then
  mapfile -t modules < <(cd "$repo/src" && find . -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort)
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Every compiled file counts, run or not (a .gcno without .gcda is 0% covered). gcov prints,
# per source: File '<path>' / Lines executed:<p>% of <n>
find "$build" -name '*.gcno' -print0 | while IFS= read -r -d '' gcno; do
  (cd "$tmp" && gcov -n -o "$(dirname "$gcno")" "$gcno" 2>/dev/null) || true
done | awk -v src="$repo/src/" '
  /^File / { f = substr($2, 2, length($2) - 2); next }
  /^Lines executed:/ && f != "" {
    split($2, a, ":"); pct = a[2] + 0; n = $4 + 0
    if (index(f, src) == 1 && f ~ /\.cc$/ && f !~ /_test\.cc$/) {
      if (!(f in lines) || n > lines[f]) { lines[f] = n; covered[f] = int(pct * n / 100 + 0.5) }
    }
    f = ""
  }
  END { for (f in lines) print f, covered[f], lines[f] }' >"$tmp/files"
printf '%-12s %14s %8s\n' module covered/lines percent
for m in "${modules[@]}"; do
  awk -v pre="$repo/src/$m/" '
    index($1, pre) == 1 { c += $2; n += $3 }
    END { if (n) printf "%-12s %14s %7.1f%%\n", m, c "/" n, 100 * c / n }' m="$m" "$tmp/files"
done
