#!/usr/bin/env bash
# Refactor guard (issue 20): runs every instance of instances.txt with --json and writes
# NAME.json (stdout, the wall-clock fields (solve_time_s, ...) removed) into OUTDIR.
#   tests/regression/run.sh BUILD_DIR OUTDIR
# Compare two runs with: diff -r OUTDIR_BEFORE OUTDIR_AFTER (must print nothing).
# The recorded outputs are not expected values of a correctness test: they pin today's
# behaviour so that a restructuring provably keeps it (bit-identical doubles).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"; out="$2"
mkdir -p "$out"
cd "$root"
grep -v '^\s*#' tests/regression/instances.txt | grep -v '^\s*$' | while read -r name args; do
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  if "$build/app/nest-cli" $args --json > "$out/$name.raw" 2> "$out/$name.err"; then rc=0; else rc=$?; fi
  /usr/bin/python3 - "$out/$name.raw" "$out/$name.json" "$rc" <<'PY'
import json, sys
raw, dst, rc = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(raw).read()
try:
    data = json.loads(text)
except ValueError:
    data = {"unparsed_stdout": text}
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if not any(w in k for w in ("wall", "solve_time", "search_time"))}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
json.dump({"exit": int(rc), "output": strip(data)}, open(dst, "w"), indent=1, sort_keys=True)
PY
  rm -f "$out/$name.raw"
  printf '%-36s rc=%s %6.2f s\n' "$name" "$rc" "$(echo "$(date +%s.%N) - $start" | bc)"
done
