#!/usr/bin/env python3
"""Memory of the published layouts (issue 23, point 5): every layout that trained must fit,
and the predicted memory must match the published figures it can be checked against.

For every row of runs.json, `nest-cli evaluate --json` on the published layout (the same
conversion as validate.py), then:

1. Feasible: every row (validation, held-out, calibration and reference; today's runs of issue
   46 included) is predicted to fit its GPUs. The two torchtitan reference rows (op-level
   selective checkpointing, modelled by the torchtitan profile's selective policy) also print
   their published peak (reported, not
   asserted: torchtitan logs the caching allocator's reservation, which the model does not
   predict).
2. Activations of the interleaved schedule with sequence parallelism + selective
   recomputation (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023): Table 2 gives s b h 34 / t bytes per layer and micro-batch, and
   §4.2.3 the first pipeline stage of the interleaved schedule holding
   L (1 + (p - 1) / (p v)) layer-micro-batches. The first device's predicted stash, less the
   model's 5 % allocator fragmentation, must be within 5 % of that figure.
3. Model states per parameter (Megatron-Core developer guide, "Distributed Optimizer":
   bytes per parameter 18 for float16 params with fp32 grads without the distributed
   optimizer; 4 + 16/d with float16 grads and it, where 4/d is the fp32 copy of the gradient
   shard made at the step, after the activations are freed, so not at the peak: 4 + 12/d
   here; 6 + 12/d with bf16 params and fp32 grads, the defaults stack), and for DeepSpeed's BF16_Optimizer (runtime/bf16_optimizer.py, no published
   table: 2 bf16 weights + 4 fp32 gradient buffer + 2 bf16 gradients + 12 / d) exactly; for
   DeepSpeed's ZeRO-1 with gradients accumulated in the training dtype (grad_accum_dtype
   fp16/bf16: DeepSpeedZeroOptimizer, runtime/zero/stage_1_and_2.py; GLM-130B's fp16 run,
   issue 50) 2 weights + 2 param.grad + 12 / d (its reduce buffer is made after the pipeline's
   flush, below the backward's peak on these rows).

Standard library only. Exit status 0 when every check passes, 1 otherwise, 2 on usage errors.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import validate  # noqa: E402  (the row conversion is validate.py's)

GIB = 1024.0 ** 3
FRAGMENTATION = 0.05  # FrameworkProfile::fragmentation of every profile but `serial`
ACTIVATION_BOUND = 0.05
STATES_TOLERANCE = 1e-6

# Published peak readings of rows the model cannot express (reported, not asserted):
# torchtitan benchmarks/llama3_h100_202412_torchtitan.md, torch.cuda.max_memory_reserved().
PUBLISHED_PEAK_GIB = {"torchtitan-llama3.1-8b-8": 82.4, "torchtitan-llama3.1-8b-128": 67.0}


def run_row(cli, row, tmp):
    cluster_file, model_file = validate.row_files(cli, row, tmp)
    out = subprocess.run(cli.command(row, cluster_file, model_file), capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return row, None, out.stderr.strip() or f"exit {out.returncode}"
    return row, json.loads(out.stdout), ""


def first_device(report, pp):
    """The memory of pipeline position 0 and the parameters it holds (all its chunks)."""
    dev = next(d for d in report["devices"] if d.get("stage") == 0)
    params = sum(s["params_per_device"] for s in report["stages"][0::pp])
    return dev, params


def expected_states_per_param(row):
    """Bytes per parameter of weights + gradients + optimizer state the sources give.

    The sources' figures are for dense models trained in BF16: a MoE model's expert weights are
    sharded over the expert data-parallel group (dp*cp*tp / (ep*etp)), not over dp*cp, and FP8,
    MXFP8 or NVFP4 training keeps low-precision weight copies and scales beside the BF16 ones
    (issue 46). Such rows are not compared (None)."""
    lay, fw = row["layout"], row["framework"]
    if row["model"].get("experts", 1) > 1 or lay.get("precision", "bf16") != "bf16":
        return None, ""
    d = lay["dp"] * lay.get("cp", 1)
    if fw == "megatron-lm" and lay["zero"] == 0:
        return 18.0, "Megatron-Core guide: fp16 params, fp32 grads, no distributed optimizer = 18"
    if fw == "megatron-core" and lay["zero"] == 1 and lay.get("optimizer_dtype") == "bf16":
        return 4 + 6.0 / d, f"bf16 weights and gradients 4 + bf16 master, m, v 6/d (optim.dtype bf16) = 4 + 6/{d}"
    if fw == "megatron-core" and lay["zero"] == 1 and validate.row_stack(row) == "defaults":
        # Megatron-LM's defaults (--bf16 sets accumulate_allreduce_grads_in_fp32): the guide's
        # row for bf16 params with fp32 grads.
        return 6 + 12.0 / d, f"Megatron-Core guide: bf16 params, fp32 grads, distributed optimizer = 6 + 12/{d}"
    if fw == "megatron-core" and lay["zero"] == 1:
        return 4 + 12.0 / d, f"Megatron-Core guide: 4 + 16/d less the step's fp32 gradient copy = 4 + 12/{d}"
    if fw == "deepspeed" and lay["zero"] == 1 and lay.get("grad_accum_dtype") in ("fp16", "bf16"):
        return 4 + 12.0 / d, (f"stage_1_and_2.py (ZeRO-1, {lay['grad_accum_dtype']} accumulation): "
                              f"2 weights + 2 param.grad + 12/{d}")
    if fw == "deepspeed" and lay["zero"] <= 1:
        return 8 + 12.0 / d, f"bf16_optimizer.py: 2 + 4 + 2 + 12/{d}"
    return None, ""


def korthikanti_first_stage(row):
    """Korthikanti Table 2 x §4.2.3: bytes the first device stashes (SP + selective, interleaved)."""
    m, lay = row["model"], row["layout"]
    s, b, h, t = lay["seq"], lay["mbs"], m["hidden"], lay["tp"]
    p, v, layers = lay["pp"], lay["vpp"], m["layers"]
    return s * b * h * 34.0 / t * layers * (1 + (p - 1.0) / (p * v))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=validate.DEFAULT_CLI)
    ap.add_argument("--runs", default=validate.DEFAULT_RUNS)
    ap.add_argument("--jobs", type=int, default=0)
    args = ap.parse_args()
    cli = validate.Cli(args.cli)
    cli.probe()
    rows = validate.load_runs(args.runs, "all")
    failures = []
    with tempfile.TemporaryDirectory(prefix="nest-memory-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs or min(8, os.cpu_count() or 2)) as pool:
            results = list(pool.map(lambda r: run_row(cli, r, tmp), rows))
    print(f"{'id':34} {'set':11} {'peak GB':>8} {'capacity':>8}  checks")
    for row, rep, err in results:
        rid, lay = row["id"], row["layout"]
        if rep is None:
            failures.append(f"{rid}: nest-cli failed: {err}")
            continue
        notes = []
        peak = rep["peak_memory_bytes"] / 1e9
        capacity = min(d["capacity"] for d in rep["devices"] if d.get("stage", -1) >= 0) / 1e9
        if not rep["feasible"]:
            # Every row, today's published runs (issue 46) included since each fits: a
            # published layout that trained must be predicted to fit.
            why = rep["reasons"][0] if rep["reasons"] else "infeasible"
            failures.append(f"{rid}: a published layout that trained is called infeasible: {why}")
            notes.append("INFEASIBLE")
        if rid in PUBLISHED_PEAK_GIB:
            pub = PUBLISHED_PEAK_GIB[rid]
            notes.append(f"published peak {pub} GiB, predicted {peak * 1e9 / GIB:.1f} GiB "
                         f"({(peak * 1e9 / GIB - pub) / pub:+.1%}, reported)")
        dev, params = first_device(rep, lay["pp"])
        want, why = expected_states_per_param(row)
        if want is not None and params > 0:
            got = (dev["weights"] + dev["gradients"] + dev["optimizer_state"]) / params
            ok = abs(got - want) <= STATES_TOLERANCE * want
            notes.append(f"states {got:.3f} B/param ({why}){'' if ok else ' MISMATCH'}")
            if not ok:
                failures.append(f"{rid}: model states {got:.4f} B/param, the source gives {want:.4f} ({why})")
        if lay.get("vpp", 1) > 1 and lay["recompute"] == "selective" and lay.get("sp") and row["framework"] == "megatron-lm":
            paper = korthikanti_first_stage(row)
            stash = dev["stash"] / (1 + FRAGMENTATION)
            err = (stash - paper) / paper
            notes.append(f"first-device stash {stash / 1e9:.2f} GB vs Korthikanti {paper / 1e9:.2f} GB ({err:+.1%})")
            if abs(err) > ACTIVATION_BOUND:
                failures.append(f"{rid}: first-device stash {stash / 1e9:.2f} GB, Korthikanti Table 2 x §4.2.3 "
                                f"{paper / 1e9:.2f} GB ({err:+.1%}, bound {ACTIVATION_BOUND:.0%})")
        print(f"{rid:34} {row['set']:11} {peak:8.1f} {capacity:8.1f}  " + "; ".join(notes))
    if failures:
        print("\nFAILED:\n  " + "\n  ".join(failures))
        return 1
    print("\nall published layouts that trained fit; memory figures within their bounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
