#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each, one at a time (nice'd, one job), with the
# limits of issue 13: 10 s per input (hang), 2 GB (out of memory). Builds build-fuzz first
# (clang, NEST_FUZZ=ON). New corpus entries go to build-fuzz/corpus/TARGET (the seeds in
# tests/fuzz/corpus stay as they are); crashes to build-fuzz/artifacts/TARGET/.
#   tests/fuzz/run.sh 600            # 10 minutes per target
#   TARGETS="fuzz_pipeline" tests/fuzz/run.sh 60
set -euo pipefail
seconds=${1:?usage: tests/fuzz/run.sh SECONDS}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$root/build-fuzz}
targets=${TARGETS:-"fuzz_cluster fuzz_model fuzz_hf_config fuzz_profile fuzz_plan fuzz_workspace fuzz_pipeline fuzz_search fuzz_hostlist fuzz_slurm fuzz_nccl_xml fuzz_nvidia_smi fuzz_astra_sim fuzz_runs fuzz_calibration"}
if [ ! -f "$build/build.ninja" ]; then
  CXX=${CXX:-clang++} cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DNEST_FUZZ=ON -DNEST_BUILD_GUI=OFF -DNEST_BUILD_BENCH=OFF
fi
# shellcheck disable=SC2086
nice -n 10 ninja -C "$build" $targets
status=0
for t in $targets; do
  seeds=$root/tests/fuzz/corpus/${t#fuzz_}
  work=$build/corpus/$t
  artifacts=$build/artifacts/$t
  mkdir -p "$work" "$artifacts"
  echo "== $t for ${seconds}s"
  if ! nice -n 10 "$build/tests/fuzz/$t" "$work" "$seeds" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      2>"$build/$t.log"; then
    echo "!! $t found a problem: see $build/$t.log and $artifacts/"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$t.log" || true
done
exit $status
