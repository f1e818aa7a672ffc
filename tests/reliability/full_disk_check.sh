#!/bin/bash
# Every write of the CLI and the window on a full file system (issue 25, point 7): a 64 kB
# tmpfs holds a good previous file per case, is filled to the last byte, and each command
# writes over its file. Each case must fail (CLI: exit 2; window: exit 1) with a message that
# names the file and the reason, and leave the previous file byte for byte.
#
#   sudo tests/reliability/full_disk_check.sh [BUILD_DIR]     (default: build)
#
# Needs root (mount). The window cases need nest-planner (a GUI build) and run offscreen.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
cli=${NEST_CLI:-$build/app/nest-cli}   # NEST_CLI: a nest-cli from another build (build-core)
gui=$build/app/nest-planner
mnt=$(mktemp -d /tmp/fullfs.XXXXXX)
work=$(mktemp -d /tmp/fullfs-work.XXXXXX)
export QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp
cd "$root" || exit 1

if ! mount -t tmpfs -o size=64k tmpfs "$mnt"; then
    echo "cannot mount a tmpfs at $mnt (not root?)" >&2
    exit 77
fi
trap 'umount -l "$mnt"; rm -rf "$mnt" "$work"' EXIT

ws=sample_configs/workspaces/quickstart.nestws.json
cluster=sample_configs/clusters/paper-v100-8.json
plan=sample_configs/plans/llama2-7b-spineleaf64-tp8-pp2-dp4.json
spine=sample_configs/clusters/paper-spineleaf-64.json

# name | file on the tmpfs | expected exit | command (with @ for the file)
cases=(
  "cli plan --out|plan.json|2|$cli plan --cluster $cluster --model bert-large --microbatch 1 --max-stages 2 --out @"
  "cli simulate --out|timeline.json|2|$cli simulate --cluster $spine --model llama2-7b --plan $plan --out @"
  "cli export megatron|launch.sh|2|$cli export --plan $plan --cluster $spine --model llama2-7b --format megatron --out @"
  "cli export deepspeed|ds.json|2|$cli export --plan $plan --cluster $spine --model llama2-7b --format deepspeed --out @"
  "cli export-cluster|net.yaml|2|$cli export-cluster --cluster $cluster --format astra-sim --out @"
)
if [ -x "$gui" ]; then
  for ext in json png svg pdf; do
    cases+=("window --export .$ext (summary)|view.$ext|1|$gui $ws --tab summary --export @")
  done
  # (Compare exports need two pinned plans selected: without them the window says "nothing
  # to compare" and writes nothing, which is not what this checks.)
  for tab in placement memory breakdown timeline; do
    cases+=("window --export $tab.svg|$tab.svg|1|$gui $ws --tab $tab --export @")
  done
else
  echo "note: $gui not built: window cases skipped"
fi

fails=0
for c in "${cases[@]}"; do
  IFS='|' read -r name file want cmd <<<"$c"
  rm -rf "${mnt:?}"/* "$mnt"/.[!.]* 2>/dev/null
  target=$mnt/$file
  # The previous good file: what the same command writes on an empty disk (or a stand-in).
  ${cmd//@/$target} >/dev/null 2>&1
  [ -s "$target" ] || printf 'previous good content\n' >"$target"
  cp "$target" "$work/before"
  # Fill the rest of the disk.
  dd if=/dev/zero of="$mnt/filler" bs=4k >/dev/null 2>&1
  dd if=/dev/zero of="$mnt/filler2" bs=1 >/dev/null 2>&1
  ${cmd//@/$target} >"$work/out" 2>"$work/err"
  rc=$?
  msg=$(grep -m1 -E "$file" "$work/err" | cut -c1-220)
  if [ $rc -eq "$want" ] && cmp -s "$target" "$work/before" && grep -q "No space left on device" "$work/err" &&
     grep -q "$file" "$work/err"; then
    verdict=ok
  else
    verdict=FAIL
    fails=$((fails + 1))
  fi
  printf '%-4s %-34s exit %d (want %d), previous %s bytes %s; %s\n' "$verdict" "$name" "$rc" "$want" \
    "$(stat -c %s "$work/before")" "$(cmp -s "$target" "$work/before" && echo kept || echo CHANGED)" "$msg"
done
# stdout on a full disk: exit 2 with the reason, not 0 with a truncated file.
"$cli" presets >/dev/full 2>"$work/err"
rc=$?
if [ $rc -eq 2 ] && grep -q "No space left on device" "$work/err"; then verdict=ok; else verdict=FAIL; fails=$((fails + 1)); fi
printf '%-4s %-34s exit %d (want 2); %s\n' "$verdict" "cli presets > /dev/full" "$rc" "$(head -c 200 "$work/err")"
echo "$fails failed of $(( ${#cases[@]} + 1 ))"
[ $fails -eq 0 ]
