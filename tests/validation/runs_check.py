#!/usr/bin/env python3
"""Consistency of runs.json itself, without nest-cli (CTest `validation_runs_data`).

Every row: DP x TP x PP x CP = GPUs, whole micro-batches per replica, whole nodes, a known
set, EP dividing the experts and TP x CP x DP = EP x ETP x expert-DP (Megatron-Core's parallel
folding), `fp8_recipe` only with `fp8`, the precision one of bf16 fp8 mxfp8 nvfp4.
Today's runs (validate.is_todays: a `precision` layout key in the validation or held-out set,
issue 46): the held-out workloads are exactly every 4th of the fixed listing of
docs/validation.md, and the published model TFLOP/s per token of a row is within 2 % of the
median of the rows of the same model (a row whose two published
numbers disagree, as the page's 26.02 H100 Qwen3 30B-A3B row did by 2x, would fail).
validate.layout_extra_args passes --etp, --precision, --fp8-recipe, --moe-imbalance, --pipeline-units,
--fp8-attention, --grad-reduce-overlap and --recompute-modules exactly when the keys are
there; `recompute_modules` only on a `selective` row, with the modelled names. Standard library only; exit 1 with the list of failures.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate  # noqa: E402  (same folder)

PRECISIONS = {"bf16", "fp8", "mxfp8", "nvfp4"}
FP8_RECIPES = {"delayed", "current", "blockwise"}
RECOMPUTE_MODULES = {"core_attn", "layernorm", "moe_act", "mla_up_proj"}  # the modelled ones
# The fixed listing of today's workloads (docs/validation.md, "The held-out set"): machines,
# then models, in this order; every 4th workload is held out. Chosen before any prediction.
MACHINE_ORDER = ["H100", "B200", "B300", "GB200", "GB300"]
MODEL_ORDER = ["llama3-8b", "llama3-70b", "llama3.1-405b", "deepseek-v3", "gpt-oss-120b",
               "qwen3-30b-a3b", "qwen3-235b-a22b"]
# Workloads of the listing whose only published row was left out (docs/validation.md).
LISTED_WITHOUT_ROWS = set()  # none since 26.04 publishes H100 Qwen3 30B-A3B
RATIO_TOLERANCE = 0.02


def row_failures(row):
    fails = []
    rid, lay = row["id"], row["layout"]
    if row["set"] not in validate.SETS:
        fails.append(f"{rid}: unknown set '{row['set']}'")
    tp, pp, cp, dp = lay["tp"], lay["pp"], lay.get("cp", 1), lay["dp"]
    if tp * pp * cp * dp != row["gpus"]:
        fails.append(f"{rid}: tp*pp*cp*dp = {tp * pp * cp * dp}, GPUs {row['gpus']}")
    if lay["gbs"] % (dp * lay["mbs"]):
        fails.append(f"{rid}: GBS {lay['gbs']} is not a whole number of micro-batches of {lay['mbs']} per replica ({dp})")
    if row["gpus"] % row["gpus_per_node"]:
        fails.append(f"{rid}: {row['gpus']} GPUs is not a whole number of {row['gpus_per_node']}-GPU nodes")
    prec = lay.get("precision")
    if prec is not None and prec not in PRECISIONS:
        fails.append(f"{rid}: precision '{prec}' not one of {sorted(PRECISIONS)}")
    mods = lay.get("recompute_modules")
    if mods is not None and (lay.get("recompute") != "selective" or not set(mods) <= RECOMPUTE_MODULES):
        fails.append(f"{rid}: recompute_modules {mods} needs recompute 'selective' and names from {sorted(RECOMPUTE_MODULES)}")
    if "fp8_recipe" in lay and (prec != "fp8" or lay["fp8_recipe"] not in FP8_RECIPES):
        fails.append(f"{rid}: fp8_recipe '{lay['fp8_recipe']}' needs precision fp8 and one of {sorted(FP8_RECIPES)}")
    ep, etp = lay.get("ep", 1), lay.get("etp", tp)
    experts = row["model"].get("experts", 1)
    if ep > 1:
        if experts % ep:
            fails.append(f"{rid}: EP {ep} does not divide {experts} experts")
        if (tp * cp * dp) % (ep * etp):
            fails.append(f"{rid}: EP {ep} x ETP {etp} does not divide TP x CP x DP = {tp * cp * dp}")
    return fails


def todays_failures(rows):
    fails = []
    todays = [r for r in rows if validate.is_todays(r)]
    workloads = {(validate.generation(r["device"]), r["model"]["name"]) for r in todays} | LISTED_WITHOUT_ROWS
    unknown = [w for w in workloads if w[0] not in MACHINE_ORDER or w[1] not in MODEL_ORDER]
    if unknown:
        return [f"workloads outside the fixed listing: {sorted(unknown)}"]
    listing = sorted(workloads, key=lambda w: (MACHINE_ORDER.index(w[0]), MODEL_ORDER.index(w[1])))
    held = {w for i, w in enumerate(listing) if (i + 1) % 4 == 0}
    for r in todays:
        w = (validate.generation(r["device"]), r["model"]["name"])
        want = "holdout" if w in held else "validation"
        if r["set"] != want:
            fails.append(f"{r['id']}: set '{r['set']}', the fixed listing says '{want}' (workload {w})")
    by_model = {}
    for r in todays:
        pub = r["published"]
        if "model_tflops_per_gpu" in pub and pub["metric"] == "tokens_per_s_per_gpu":
            key = (r["model"]["name"], r["model"].get("mtp_layers", 0))
            by_model.setdefault(key, []).append((pub["model_tflops_per_gpu"] / pub["value"], r["id"]))
    for key, items in by_model.items():
        med = statistics.median(x for x, _ in items)
        for x, rid in items:
            if abs(x - med) > RATIO_TOLERANCE * med:
                fails.append(f"{rid}: published TFLOP/s per token/s {x:.5f}, the median of {key} is {med:.5f}")
    return fails


def flag_failures():
    fails = []
    base = {"tp": 2}
    cases = [(base, []),
             (dict(base, etp=1), ["--etp", "1"]),
             (dict(base, precision="mxfp8"), ["--precision", "mxfp8"]),
             (dict(base, precision="fp8", fp8_recipe="current"), ["--precision", "fp8", "--fp8-recipe", "current"]),
             (dict(base, moe_imbalance=1.0), ["--moe-imbalance", "1.0"]),
             (dict(base, pipeline_units="layers+embedding+loss"), ["--pipeline-units", "layers+embedding+loss"]),
             (dict(base, fp8_attention=True), ["--fp8-attention"]),
             (dict(base, fp8_attention=False), []),
             (dict(base, grad_reduce_overlap=True), ["--grad-reduce-overlap", "on"]),
             (dict(base, grad_reduce_overlap=False), ["--grad-reduce-overlap", "off"]),
             (dict(base, recompute_modules=["layernorm", "moe_act"]), ["--recompute-modules", "layernorm,moe_act"]),
             (dict(base, recompute_modules=[]), ["--recompute-modules", ""]),
             (dict(base, moe_a2a_overlap=True), ["--moe-a2a-overlap", "on"]),
             (dict(base, moe_a2a_overlap=False), [])]
    for lay, want in cases:
        got = validate.layout_extra_args(lay)
        if got != want:
            fails.append(f"layout_extra_args({lay}) = {got}, expected {want}")
    return fails


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", default=validate.DEFAULT_RUNS)
    args = ap.parse_args(argv)
    rows = validate.load_runs(args.runs, "all")
    fails = [f for r in rows for f in row_failures(r)] + todays_failures(rows) + flag_failures()
    ids = [r["id"] for r in rows]
    fails += [f"duplicate id {i}" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if fails:
        print("FAILED:\n  " + "\n  ".join(fails))
        return 1
    todays = sum(1 for r in rows if validate.is_todays(r))
    print(f"runs.json: {len(rows)} rows consistent ({todays} of today's runs; held-out split as listed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
