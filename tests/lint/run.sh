#!/usr/bin/env bash
# clang-tidy (Debian's clang-tidy-14) with the root's .clang-tidy over the project's own
# sources (issue 52; the checks and why each is on: docs/lint.md). A finding is an error.
#   tests/lint/run.sh BUILD_DIR            every .cpp of core/, ui/, app/ and tests/ that the
#                                          build compiles (`make lint`)
#   tests/lint/run.sh BUILD_DIR --changed  only the .cpp files changed since the last clean whole-tree run,
#                                          and the .cpp beside each changed header (.ci/run)
# "Since the last whole-tree lint": from the last commit that changed tests/lint/clean-tree
# (a whole-tree run that came out clean writes that file; committing it moves the base) to the
# working tree; NEST_LINT_BASE=REV overrides the base. Needs BUILD_DIR/compile_commands.json (and
# the build's generated headers: run it after a build). JOBS (default nproc) files at a time.
# Exit 0: no finding; 1: a finding (or clang-tidy failed); 2: bad usage.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [--changed]" >&2; exit 2; }
build="$(cd "$1" && pwd)"; mode="${2:-all}"
tidy="${CLANG_TIDY:-clang-tidy-14}"
command -v "$tidy" >/dev/null || { echo "lint: $tidy not found (apt-get install clang-tidy)" >&2; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "lint: no $build/compile_commands.json (configure first)" >&2; exit 2; }
cd "$root"
# The project's own translation units, as the build compiles them (relative paths).
/usr/bin/python3 - "$build/compile_commands.json" "$root" > "$build/lint-all.txt" <<'PY'
import json, os, sys
root = sys.argv[2]
seen = set()
for e in json.load(open(sys.argv[1])):
    f = os.path.normpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, root)
    if rel.split(os.sep)[0] in ("core", "ui", "app", "tests") and rel.endswith(".cpp") and rel not in seen:
        seen.add(rel)
        print(rel)
PY
case "$mode" in
all) cp "$build/lint-all.txt" "$build/lint-files.txt" ;;
--changed)
  if [ -n "${NEST_LINT_BASE:-}" ]; then
    base="$NEST_LINT_BASE"
  elif marked=$(git log -1 --format=%H -- tests/lint/clean-tree 2>/dev/null) && [ -n "$marked" ]; then
    base="$marked"
  else
    base="HEAD~1"
  fi
  if ! changed=$(git diff --name-only --diff-filter=d "$base" -- core ui app tests 2>/dev/null); then
    echo "lint: cannot diff against $base (a shallow clone?): linting HEAD's own changes" >&2
    changed=$(git diff --name-only --diff-filter=d HEAD~1 -- core ui app tests 2>/dev/null || true)
  fi
  # A changed header: the .cpp of the same name beside it (the cheap part of "who includes it").
  { for f in $changed; do
      case "$f" in
      *.cpp) echo "$f" ;;
      *.h) [ -f "${f%.h}.cpp" ] && echo "${f%.h}.cpp" ;;
      esac
    done; } | sort -u | grep -Fx -f "$build/lint-all.txt" > "$build/lint-files.txt" || true
  echo "lint: $(wc -l < "$build/lint-files.txt") changed .cpp files since $(git rev-parse --short "$base" 2>/dev/null || echo "$base")"
  ;;
*) echo "usage: $0 BUILD_DIR [--changed]" >&2; exit 2 ;;
esac
[ -s "$build/lint-files.txt" ] || { echo "lint: nothing to check"; exit 0; }
jobs="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
start=$SECONDS
# One clang-tidy per file, JOBS at a time; xargs exits non-zero when any of them did.
if xargs -P "$jobs" -n 1 "$tidy" -p "$build" --quiet < "$build/lint-files.txt" > "$build/lint.log" 2>&1; then
  rc=0
else
  rc=1
fi
grep -E "(warning|error): " "$build/lint.log" | sort -u || true
echo "lint: $(wc -l < "$build/lint-files.txt") files in $((SECONDS - start)) s: $([ $rc = 0 ] && echo clean || echo 'FINDINGS (see above)')"
# A clean whole-tree run records itself; committing the file makes it lint-changed's base.
if [ "$mode" = all ] && [ $rc = 0 ]; then
  { echo "# The whole tree passed \`make lint\` (tests/lint/run.sh BUILD_DIR) at the commit that last"
    echo "# changed this file; \`make lint-changed\` (CI) lints only the .cpp files changed since then."
    echo "checked: $(wc -l < "$build/lint-files.txt") .cpp files in $((SECONDS - start)) s with JOBS=$jobs"
    echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- core ui app tests 2>/dev/null || echo ' plus uncommitted changes')"
    echo "clang-tidy: $("$tidy" --version | grep -o 'version [0-9.]*' | head -1)"
  } > "$root/tests/lint/clean-tree"
  echo "lint: wrote tests/lint/clean-tree; commit it to make this tree lint-changed's base"
fi
exit $rc
