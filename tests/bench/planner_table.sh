#!/usr/bin/env bash
# Issue 24, point 5: the planner's scale table (docs/planner.md, "Scale table"), before and
# after, measured in one run: each row runs in a process of its own, the two binaries one
# after the other, so both see the same machine state. Wall time and peak memory are
# /usr/bin/time's (Elapsed, Maximum resident set size) of the whole process (topology and
# model set-up, the search, the final evaluate()); replan rows also give the bench's own
# medians (incremental PlanningSession vs from scratch after an edit).
#
#   tests/bench/planner_table.sh BEFORE/bench_planner AFTER/bench_planner > table.md
#
# Build both in Release (cmake -DCMAKE_BUILD_TYPE=Release -DNEST_BUILD_GUI=OFF). A binary
# that lacks a row (the replan and top rows need PlanningSession) prints "—" there.
# NEST_TABLE_THREADS=N adds a column: AFTER again with NEST_BENCH_THREADS=N (the outer points
# dealt to N searches, SearchOptions::threads), reported apart from the one-core figures.
set -u
before=${1:?usage: planner_table.sh BEFORE_BENCH AFTER_BENCH}
after=${2:?usage: planner_table.sh BEFORE_BENCH AFTER_BENCH}
timeout_s=${NEST_TABLE_TIMEOUT:-600}

rows=(
  "pods 64" "pods 1024" "pods 16384" "pods 131072" "pods 1048576"
  "layers 24" "layers 96" "layers 384" "layers 768" "layers 1536" "ops 384 4"
  "replan superpod-h100-256 gpt3-175b 5" "replan superpod-h100-256 llama3-70b 5"
  "replan paper-fattree-256 gpt3-175b 5" "replan paper-fattree-256 llama3-70b 5"
  "replan superpod-h100-1024 gpt3-175b 5" "replan paper-spineleaf-1024 llama3-70b 5"
  "replan paper-spineleaf-1024 gpt3-175b 5"
  "top paper-spineleaf-1024 1" "top paper-spineleaf-1024 10"
)

# One row with one binary: "wall s / peak MB[ / incremental ms / scratch ms]".
measure() {
  local bin=$1 row=$2 out err wall peak extra=""
  out=$(mktemp) err=$(mktemp)
  # shellcheck disable=SC2086
  if ! timeout "$timeout_s" /usr/bin/time -v "$bin" $row >"$out" 2>"$err"; then
    if grep -q "Command terminated by signal 9\|Command exited with non-zero status 124" "$err" ||
       [ "$(grep -c . "$out")" = 0 ]; then
      echo "— (did not finish in ${timeout_s} s or no such row)"
      rm -f "$out" "$err"
      return
    fi
  fi
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$err" |
         awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  peak=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$err")
  if [[ $row == replan* ]]; then
    extra=$(sed -n 's/.*incremental *\([0-9.]*\) ms.*scratch *\([0-9.]*\) ms.*\(identical\|DIFFERENT\).*/ · \1 ms inc. \/ \2 ms scratch, \3/p' "$out")
  fi
  printf '%.2f s / %s MB%s' "$wall" "$peak" "$extra"
  rm -f "$out" "$err"
}

threads=${NEST_TABLE_THREADS:-}
if [ -n "$threads" ]; then
  echo "| row | before: process wall / peak | after: process wall / peak | after, $threads searches |"
  echo "| --- | ---: | ---: | ---: |"
else
  echo "| row | before: process wall / peak | after: process wall / peak |"
  echo "| --- | ---: | ---: |"
fi
for row in "${rows[@]}"; do
  b=$(measure "$before" "$row")
  a=$(measure "$after" "$row")
  if [ -n "$threads" ]; then
    t=$(NEST_BENCH_THREADS=$threads measure "$after" "$row")
    echo "| \`$row\` | $b | $a | $t |"
  else
    echo "| \`$row\` | $b | $a |"
  fi
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(date -u '+%Y-%m-%d %H:%M UTC')."
