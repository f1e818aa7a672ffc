#!/usr/bin/env python3
"""Run nest-cli on every published training run in runs.json and compare step times.

For each row: write the row's cluster (compact form: a node level of gpus_per_node devices on
NVLink, a cluster level of nodes on the inter-node fabric) and model to a temporary folder, call
`nest-cli evaluate ... --json` with the published layout, and compare the evaluator's iteration
time with the published step time (tokens/s/GPU and TFLOP/s/GPU are converted first, see
convert_published()). error = (predicted - published) / published.

Sets: `validation` (the --check bar), `calibration` (what fit.py may read), `holdout` (today's
published runs kept aside: never fitted, reported next to the validation set but not part of
the --check bar), `validation2` (issue 50: sources never fitted, the --check-unseen bar),
`crosscheck` (today's models on another stack, NeMo AutoModel: never fitted, reported with its
own figures, no bar), `reference` (reported, not scored); `--set all` runs every row.

Standard library only. Exit status: 0, or 1 with --check when the validation set misses the
target (mean |error| <= 10 %, every row <= 25 %, no row infeasible), with --check-unseen when
validation set 2 misses issue 50's (mean |error| <= 8 %, mean signed error within +-3 %, no row
infeasible), 2 on usage errors.
"""
import argparse
import concurrent.futures
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_RUNS = os.path.join(HERE, "runs.json")
DEFAULT_CLI = os.path.normpath(os.path.join(HERE, "..", "..", "build", "app", "nest-cli"))
RESULTS_BEGIN = "<!-- results -->"
RESULTS_END = "<!-- /results -->"
SERIES_BEGIN = "<!-- series -->"
SERIES_END = "<!-- /series -->"

# The --check target (issue 10, item 5).
TARGET_MEAN = 0.10
TARGET_MAX = 0.25
# The --check-unseen target (issue 50): on validation set 2, the runs from sources never fitted,
# each with its own stack, mean |error| <= 8 %, mean signed error within +-3 %, none infeasible.
TARGET_UNSEEN_MEAN = 0.08
TARGET_UNSEEN_SIGNED = 0.03
# The --series-check target (issue 23, point 2): on every scaling series (rows sharing a
# "series" key: one model and per-replica work at several GPU counts), the predicted step-time
# growth from the smallest to the largest GPU count is within 5 percentage points of the
# published growth.
TARGET_SERIES_PP = 5.0

# The latency a collective pays per step at each level: NCCL's own tuning model
# (src/graph/tuning.cc, hwLat, Ring / Simple protocol, the protocol of large buffers; NVIDIA/nccl
# commit b6475625): 3.4 us per step over NVLink, 14.0 us per step over the network (releases
# before it had 9.6, which issue 50 used until the newer figure was read). The sources publish
# no link latency; the rows' runs all used NCCL, so its per-step figure is what their
# collectives paid.
NODE_LATENCY_US = 3.4
CLUSTER_LATENCY_US = 14.0


# ----------------------------------------------------------------------------- data set
def parse_class_args(parser, items):
    """{GPU generation: extra CLI args} from repeated --class-args GEN=ARGS items."""
    class_args = {}
    for item in items:
        gen, sep, rest = item.partition("=")
        if not sep or not gen:
            parser.error(f"--class-args expects GEN=ARGS, got '{item}'")
        class_args[gen] = rest
    return class_args


SETS = ("validation", "calibration", "holdout", "validation2", "crosscheck", "reference")


def load_runs(path=DEFAULT_RUNS, which="all"):
    """Rows of runs.json of set `which` (one of SETS, or "all")."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rows = data["runs"] if isinstance(data, dict) else data
    if which == "all":
        return list(rows)
    return [r for r in rows if r["set"] == which]


def generation(device):
    """GPU generation of a device preset name, for the per-generation summary."""
    d = device.lower()
    # gb200/gb300 before b200/b300: the Grace-Blackwell names contain the HGX ones.
    for key, gen in (("v100", "V100"), ("a100", "A100"), ("h100", "H100"), ("h800", "H800"), ("h200", "H200"),
                     ("gb200", "GB200"), ("gb300", "GB300"), ("b200", "B200"), ("b300", "B300"),
                     ("mi300", "MI300X"), ("mi355", "MI355X"), ("tpu", "TPU")):
        if key in d:
            return gen
    return device


def megatron_flops_per_step(model, layout):
    """Narayanan et al. SC'21 eq. (3): 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), including the
    recompute forward (what Megatron-LM reports as TFLOP/s with full recompute)."""
    b, s = layout["gbs"], layout["seq"]
    l, h, v = model["layers"], model["hidden"], model["vocab"]
    return 96.0 * b * s * l * h * h * (1 + s / (6.0 * h) + v / (16.0 * l * h))


FLOP_FORMULAS = {"narayanan2021-eq3": megatron_flops_per_step}


def convert_published(row):
    """The published number as a step time in seconds, and a short text of the conversion."""
    pub, lay, gpus = row["published"], row["layout"], row["gpus"]
    metric, value = pub["metric"], float(pub["value"])
    if metric == "step_time_s":
        return value, "step time"
    if metric == "tokens_per_s_per_gpu":
        return lay["gbs"] * lay["seq"] / (value * gpus), "gbs*seq/(tok/s/GPU*GPUs)"
    if metric == "tflops_per_gpu":
        if "flops_per_step" in pub:
            flops = float(pub["flops_per_step"])
        else:
            formula = pub.get("flop_formula_key")
            if formula not in FLOP_FORMULAS:
                raise ValueError(f"{row['id']}: tflops_per_gpu needs flops_per_step or a known flop_formula_key")
            flops = FLOP_FORMULAS[formula](row["model"], lay)
        return flops / (value * 1e12 * gpus), "FLOPs/step/(TFLOP/s*GPUs)"
    raise ValueError(f"{row['id']}: unknown published metric '{metric}'")


def precision_text(lay):
    """The linear layers' number format of a layout: bf16 when the row does not say (every row
    written before issue 46), fp8-<recipe> for FP8."""
    prec = lay.get("precision", "bf16")
    if prec == "fp8":
        return f"fp8-{lay.get('fp8_recipe', 'delayed')}"
    return prec


def is_todays(row):
    """A row of today's published runs (issue 46): a `precision` layout key in the validation or
    held-out set (low-precision rows of other sets, such as MLPerf's FP8 GPT-3 reference rows,
    are not part of issue 46's listing)."""
    return "precision" in row["layout"] and row["set"] in ("validation", "holdout")


def layout_text(lay):
    parts = [f"tp{lay['tp']}", f"pp{lay['pp']}"]
    if lay.get("vpp", 1) > 1:
        parts.append(f"v{lay['vpp']}")
    if lay.get("cp", 1) > 1:
        parts.append(f"cp{lay['cp']}")
    if lay.get("ep", 1) > 1:
        parts.append(f"ep{lay['ep']}")
    if "etp" in lay:
        parts.append(f"etp{lay['etp']}")
    parts.append(f"dp{lay['dp']}")
    parts.append(f"mbs{lay['mbs']}")
    parts.append(f"gbs{lay['gbs']}")
    parts.append(f"s{lay['seq']}")
    parts.append(f"z{lay['zero']}")
    parts.append({"none": "rc-", "selective": "rc-sel", "full": "rc-full"}[lay["recompute"]] +
                 ("(" + "+".join(lay["recompute_modules"]) + ")" if "recompute_modules" in lay else ""))
    if lay.get("sp"):
        parts.append("sp")
    if lay.get("optimizer_dtype", "fp32") != "fp32":
        parts.append(f"adam-{lay['optimizer_dtype']}")
    if lay.get("grad_accum_dtype"):
        parts.append(f"gacc-{lay['grad_accum_dtype']}")
    if "precision" in lay:
        parts.append(precision_text(lay))
    if lay.get("fp8_attention"):
        parts.append("fp8-attn")
    if "grad_reduce_overlap" in lay:
        parts.append("grad-ovl" if lay["grad_reduce_overlap"] else "grad-exposed")
    if "grad_bucket_mb" in lay:
        parts.append(f"bucket{lay['grad_bucket_mb']:g}M")
    if lay.get("moe_a2a_overlap"):
        parts.append("a2a-ovl")
    if lay.get("moe_dispatcher", "alltoall") != "alltoall":
        parts.append(lay["moe_dispatcher"])
    return " ".join(parts)


# ----------------------------------------------------------------------------- CLI
def usage_exit(message):
    """A usage problem (missing CLI, rejected arguments): message on stderr, exit status 2."""
    print(f"validate.py: {message}", file=sys.stderr)
    raise SystemExit(2)


class Cli:
    """nest-cli plus what it supports. Flags still being added (--framework, selective
    recompute) are probed once; when missing, rows run without them and the report says so."""

    def __init__(self, path, extra_args="", class_args=None, stack=None):
        self.path = path
        # The stack every row runs as (--stack); None: each row's own "stack_profile".
        self.stack = stack
        self.extra = shlex.split(extra_args) if extra_args else []
        # {GPU generation: [args]}: appended to the calls of that generation's rows only.
        self.class_args = {k: shlex.split(v) for k, v in (class_args or {}).items()}
        self.has_framework = True
        self.has_selective = True
        self.fallbacks = []
        self.presets = None

    def probe(self):
        if not (os.path.isfile(self.path) and os.access(self.path, os.X_OK)):
            usage_exit(f"nest-cli not found or not executable: {self.path} (use --cli PATH)")
        with tempfile.TemporaryDirectory(prefix="nest-valid-probe-") as tmp:
            cluster = os.path.join(tmp, "c.json")
            with open(cluster, "w", encoding="utf-8") as f:
                json.dump({"name": "probe", "device": "a100-80gb",
                           "levels": [{"name": "node", "fanout": 8, "bandwidth_GBps": 300}]}, f)
            base = [self.path, "evaluate", "--cluster", cluster, "--model", "llama2-7b", "--tp", "8",
                    "--microbatch", "1", "--batch", "8", "--seq", "512", "--json"]
            out = subprocess.run(base + ["--framework", "megatron-core"], capture_output=True, text=True)
            if out.returncode != 0 and "framework" in out.stderr:
                self.has_framework = False
                self.fallbacks.append("--framework not supported by this nest-cli: rows ran without it")
            out = subprocess.run(base + ["--recompute", "selective"], capture_output=True, text=True)
            if out.returncode != 0 and "recompute" in out.stderr:
                self.has_selective = False
                self.fallbacks.append("--recompute selective not supported by this nest-cli: mapped to none")
            for what, extra in [("--extra-args", self.extra)] + [
                    (f"--class-args for {k}", v) for k, v in self.class_args.items()]:
                if extra:
                    out = subprocess.run(base + extra, capture_output=True, text=True)
                    if out.returncode != 0:
                        usage_exit(f"nest-cli rejects {what} '{' '.join(extra)}': {out.stderr.strip()}")
        out = subprocess.run([self.path, "presets", "--json"], capture_output=True, text=True)
        if out.returncode == 0:
            self.presets = {d["name"]: d for d in json.loads(out.stdout).get("devices", [])}

    def device_json(self, row):
        """The preset name, or an inline device when the row overrides a field (memory of a
        non-standard part). The inline object keeps the preset's name and other numbers."""
        overrides = row.get("device_overrides")
        if not overrides:
            return row["device"]
        if not self.presets or row["device"] not in self.presets:
            raise RuntimeError(f"{row['id']}: device_overrides needs the preset '{row['device']}' "
                               "from `nest-cli presets --json`")
        base = self.presets[row["device"]]
        dev = {k: base[k] for k in ("name", "peak_tflops", "memory_GB", "memory_bandwidth_GBps")}
        if base.get("matmul_efficiency"):
            dev["matmul_efficiency"] = base["matmul_efficiency"]
        dev.update(overrides)
        return dev

    def command(self, row, cluster_file, model_file):
        lay = row["layout"]
        rec = lay["recompute"]
        if rec == "selective" and not self.has_selective:
            rec = "none"
        vpp = lay.get("vpp", 1)
        cmd = [self.path, "evaluate", "--cluster", cluster_file, "--model", model_file,
               "--tp", str(lay["tp"]), "--pp", str(lay["pp"]), "--dp", str(lay["dp"]),
               "--cp", str(lay.get("cp", 1)), "--ep", str(lay.get("ep", 1)),
               "--microbatch", str(lay["mbs"]), "--batch", str(lay["gbs"]), "--seq", str(lay["seq"]),
               "--schedule", f"interleaved:{vpp}" if vpp > 1 else "1f1b",
               "--zero", str(lay["zero"]), "--recompute", rec, "--json"]
        if lay.get("sp"):
            cmd.append("--sp")
        if lay.get("optimizer_dtype"):  # the published config's optimizer state precision
            cmd += ["--optimizer-dtype", lay["optimizer_dtype"]]
        if lay.get("grad_accum_dtype"):  # the published config's gradient accumulation dtype
            cmd += ["--grad-accum-dtype", lay["grad_accum_dtype"]]
        cmd += layout_extra_args(lay)
        if self.has_framework:
            cmd += ["--framework", row["framework"]]
        cmd += ["--stack", self.stack or row_stack(row)]
        return cmd + self.extra + self.class_args.get(generation(row["device"]), [])


def row_stack(row):
    """The stack the run's source describes (docs/validation.md, "Stacks"): "tuned" when its
    published configuration turns on the overlaps of the framework's tuned recipes (NVIDIA's
    NeMo and Megatron-Bridge recipes), else "defaults"."""
    return row.get("stack_profile", "tuned")


def layout_extra_args(lay):
    """The issue-46 layout keys as CLI flags, each only when the row has the key (and
    `pipeline_units`, the recipe's pipeline split): `etp` (expert
    tensor-parallel width; absent = tp, Megatron-Core's default), `precision`, `fp8_recipe` and
    `fp8_attention` (the recipe's FP8 dot-product attention), `recompute_modules` (Megatron-Core's
    --recompute-modules list of a `selective` row), `moe_a2a_overlap` (the recipe's expert-parallel
    overlap).
    Also what plan_check.py passes to `plan` (one value = the published one)."""
    args = []
    if "etp" in lay:
        args += ["--etp", str(lay["etp"])]
    if "precision" in lay:
        args += ["--precision", lay["precision"]]
    if "fp8_recipe" in lay:
        args += ["--fp8-recipe", lay["fp8_recipe"]]
    if "moe_imbalance" in lay:  # the source's own statement of its routing balance
        args += ["--moe-imbalance", str(lay["moe_imbalance"])]
    if "pipeline_units" in lay:  # the recipe's pipeline split (Megatron's account_for_* flags)
        args += ["--pipeline-units", lay["pipeline_units"]]
    if lay.get("fp8_attention"):  # the recipe's fp8_dot_product_attention
        args += ["--fp8-attention"]
    if "grad_reduce_overlap" in lay:  # the run's DDP overlapped its gradient all-reduce (or not)
        args += ["--grad-reduce-overlap", "on" if lay["grad_reduce_overlap"] else "off"]
    if "grad_bucket_mb" in lay:  # the run's data-parallel bucket (bucket_cap_mb), MiB
        args += ["--grad-bucket-mb", str(lay["grad_bucket_mb"])]
    if "recompute_modules" in lay:  # the recipe's recompute_modules (what `selective` reruns)
        args += ["--recompute-modules", ",".join(lay["recompute_modules"])]
    if lay.get("moe_a2a_overlap"):  # the recipe's moe_a2a_overlap (overlap_moe_expert_parallel_comm)
        args += ["--moe-a2a-overlap", "on"]
    if "moe_dispatcher" in lay:  # the run's token dispatcher (alltoall, or DeepEP / HybridEP: deepep)
        args += ["--moe-dispatcher", lay["moe_dispatcher"]]
    return args


def cluster_json(row, device):
    gpn = row["gpus_per_node"]
    nodes = row["gpus"] // gpn
    if nodes * gpn != row["gpus"]:
        raise RuntimeError(f"{row['id']}: {row['gpus']} GPUs is not a whole number of {gpn}-GPU nodes")
    return {"name": f"{row['id']}-cluster", "device": device,
            "levels": [{"name": "node", "fanout": gpn, "bandwidth_GBps": row["nvlink_GBps"],
                        "latency_us": NODE_LATENCY_US},
                       {"name": "cluster", "fanout": nodes, "bandwidth_GBps": row["internode_GBps"],
                        "latency_us": CLUSTER_LATENCY_US}]}


def row_files(cli, row, tmp_root):
    """Writes the row's cluster and model under tmp_root/ID; returns (cluster_file, model_file)
    for cli.command (also used by plan_check.py and memory_check.py)."""
    folder = os.path.join(tmp_root, row["id"])
    os.makedirs(folder, exist_ok=True)
    cluster_file = os.path.join(folder, "cluster.json")
    model_file = os.path.join(folder, "model.json")
    with open(cluster_file, "w", encoding="utf-8") as f:
        json.dump(cluster_json(row, cli.device_json(row)), f)
    with open(model_file, "w", encoding="utf-8") as f:
        json.dump(row["model"], f)
    return cluster_file, model_file


def evaluate_row(cli, row, tmp_root):
    """One row's result dict: id, published/predicted step time, error, feasibility."""
    res = {"id": row["id"], "set": row["set"], "source": row.get("source_short", row["source"][:20]),
           "gpus": row["gpus"], "device": row["device"], "generation": generation(row["device"]),
           "framework": row["framework"], "layout": layout_text(row["layout"]),
           "precision": precision_text(row["layout"]), "family": row.get("family"),
           "todays": is_todays(row),
           "from_memory": bool(row.get("from_memory")), "series": row.get("series")}
    try:
        res["published"], res["conversion"] = convert_published(row)
        cluster_file, model_file = row_files(cli, row, tmp_root)
        cmd = cli.command(row, cluster_file, model_file)
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            res["error_text"] = (out.stderr.strip() or out.stdout.strip() or f"exit {out.returncode}")
            return res
        report = json.loads(out.stdout)
        res["predicted"] = float(report["iteration_time_s"])
        res["feasible"] = bool(report["feasible"])
        res["reasons"] = report.get("reasons", [])
        res["mfu"] = report.get("mfu")
        res["peak_memory_GB"] = report.get("peak_memory_bytes", 0) / 1e9
        res["band"] = report.get("error_band")   # {"basis", "low_s", "high_s"} (band.py checks the table)
        res["error"] = (res["predicted"] - res["published"]) / res["published"]
    except (OSError, ValueError, RuntimeError, KeyError, subprocess.TimeoutExpired) as e:
        res["error_text"] = str(e)
    return res


def run_rows(cli, rows, jobs=None):
    """Results in the order of `rows`."""
    jobs = jobs or min(8, (os.cpu_count() or 2))
    with tempfile.TemporaryDirectory(prefix="nest-valid-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            return list(pool.map(lambda r: evaluate_row(cli, r, tmp), rows))


# ----------------------------------------------------------------------------- summary
def ok(res):
    return "error" in res


def p90(values):
    """The 90th percentile by nearest rank: the ceil(0.9 n)-th smallest (the group tables' column)."""
    v = sorted(values)
    return v[max(0, math.ceil(0.9 * len(v)) - 1)] if v else float("nan")


def summarize(results):
    """{group: (count, mean |err|, max |err|, infeasible/failed count, p90 |err|)} by generation,
    framework and overall."""
    groups = {}
    for r in results:
        for key in (r["generation"], r["framework"], "overall"):
            groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        errs = [abs(r["error"]) for r in rs if ok(r)]
        bad = sum(1 for r in rs if not ok(r) or not r.get("feasible", False))
        out[key] = (len(rs), sum(errs) / len(errs) if errs else float("nan"), max(errs) if errs else float("nan"), bad,
                    p90(errs))
    return out


def status_text(r):
    if not ok(r):
        return "CLI ERROR"
    if not r["feasible"]:
        return "infeasible"
    return ""


def markdown(results, cli, title):
    lines = [f"#### {title}", "",
             "| id | source | GPUs | layout | published (s) | predicted (s) | error | note |",
             "|---|---|---:|---|---:|---:|---:|---|"]
    for r in results:
        pub = f"{r['published']:.3f}" if "published" in r else "-"
        pred = f"{r['predicted']:.3f}" if "predicted" in r else "-"
        err = f"{100 * r['error']:+.1f} %" if ok(r) else "-"
        note = status_text(r)
        if r.get("from_memory"):
            note = (note + " " if note else "") + "(partly from memory)"
        lines.append(f"| {r['id']} | {r['source']} | {r['gpus']} | {r['layout']} | {pub} | {pred} | {err} | {note} |")
    lines += ["", "| group | rows | mean \\|error\\| | 90th percentile \\|error\\| | max \\|error\\| | infeasible or failed |",
              "|---|---:|---:|---:|---:|---:|"]
    summ = summarize(results)
    for key in sorted(summ, key=lambda k: (k == "overall", k)):
        n, mean, mx, bad, q90 = summ[key]
        lines.append(f"| {key} | {n} | {100 * mean:.1f} % | {100 * q90:.1f} % | {100 * mx:.1f} % | {bad} |")
    if cli.fallbacks or cli.extra or cli.class_args:
        lines.append("")
        for fb in cli.fallbacks:
            lines.append(f"Note: {fb}.")
        if cli.extra:
            lines.append(f"Extra CLI arguments: `{' '.join(cli.extra)}`.")
        for k, v in sorted(cli.class_args.items()):
            lines.append(f"Extra CLI arguments for {k} rows: `{' '.join(v)}`.")
    return "\n".join(lines) + "\n"


def todays_groups(results):
    """[(precision, family, machine, rows, results that ran)] over today's published runs
    (is_todays(), issue 46), sorted by precision, family, machine."""
    order = {"bf16": 0, "fp8-delayed": 1, "fp8-current": 2, "fp8-blockwise": 3, "mxfp8": 4, "nvfp4": 5}
    groups = {}
    for r in results:
        if r.get("todays"):
            groups.setdefault((r["precision"], r.get("family") or "-", r["generation"]), []).append(r)
    return [(k[0], k[1], k[2], rs, [r for r in rs if ok(r)])
            for k, rs in sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][1], kv[0][2]))]


def todays_markdown(results, title):
    """The grouped table of today's runs (issue 46, point 4): by precision, family and machine,
    mean |error|, mean signed error, max |error| and n over the rows that ran."""
    lines = [f"#### {title}", "",
             "| precision | family | machine | n | ran | mean \\|error\\| | mean signed error | max \\|error\\| | infeasible or failed |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]

    def cells(rs, ran):
        bad = sum(1 for r in rs if not ok(r) or not r.get("feasible", False))
        if not ran:
            return f"{len(rs)} | 0 | - | - | - | {bad} |"
        errs = [r["error"] for r in ran]
        mean_abs = sum(abs(e) for e in errs) / len(errs)
        mean = sum(errs) / len(errs)
        return (f"{len(rs)} | {len(ran)} | {100 * mean_abs:.1f} % | {100 * mean:+.1f} % | "
                f"{100 * max(abs(e) for e in errs):.1f} % | {bad} |")

    for prec, fam, mach, rs, ran in todays_groups(results):
        lines.append(f"| {prec} | {fam} | {mach} | " + cells(rs, ran))
    every = [r for r in results if r.get("todays")]
    lines.append("| **all** | | | " + cells(every, [r for r in every if ok(r)]))
    return "\n".join(lines) + "\n"


def print_table(results, cli, title):
    print(title)
    hdr = f"{'id':34} {'source':18} {'GPUs':>5}  {'layout':50} {'published':>10} {'predicted':>10} {'error':>8}"
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        pub = f"{r['published']:.3f}" if "published" in r else "-"
        pred = f"{r['predicted']:.3f}" if "predicted" in r else "-"
        err = f"{100 * r['error']:+.1f}%" if ok(r) else "-"
        print(f"{r['id']:34} {r['source'][:18]:18} {r['gpus']:5d}  {r['layout'][:50]:50} {pub:>10} {pred:>10} "
              f"{err:>8} {status_text(r)}")
        if not ok(r):
            print(f"    {r.get('error_text', '')[:300]}")
        elif not r["feasible"]:
            print(f"    infeasible: {'; '.join(r['reasons'])[:300]}")
    print()
    summ = summarize(results)
    print(f"{'group':14} {'rows':>5} {'mean|err|':>10} {'max|err|':>10} {'infeasible/failed':>18}")
    for key in sorted(summ, key=lambda k: (k == "overall", k)):
        n, mean, mx, bad, _ = summ[key]
        print(f"{key:14} {n:5d} {100 * mean:9.1f}% {100 * mx:9.1f}% {bad:18d}")
    for fb in cli.fallbacks:
        print(f"note: {fb}")
    print()


def write_markdown(path, text, begin=RESULTS_BEGIN, end=RESULTS_END):
    """Replace the text between the `begin`/`end` markers of `path`, or write the table alone
    (a file without the markers is written only for the results table)."""
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        # The markers count only on a line of their own (prose may quote them).
        b = next((i for i, line in enumerate(lines) if line.strip() == begin), -1)
        e = next((i for i, line in enumerate(lines) if i > b >= 0 and line.strip() == end), -1)
        if b >= 0 and e > b:
            doc = "\n".join(lines[:b + 1]) + "\n" + text + "\n".join(lines[e:])
            with open(path, "w", encoding="utf-8") as f:
                f.write(doc)
            return
        if begin != RESULTS_BEGIN:
            return
    with open(path, "w", encoding="utf-8") as f:
        f.write(begin + "\n" + text + end + "\n")


# ----------------------------------------------------------------------------- scaling series
def series_results(results):
    """[{series, ids, gpus, published growth, predicted growth, difference (pp)}] for every
    scaling series, in first-appearance order. Growth = step time at the largest GPU count
    over the step time at the smallest, minus 1. Rows of every set count (a reference row
    still has a published and a predicted time); a series with a failed row has no growth."""
    by = {}
    for r in results:
        if r.get("series"):
            by.setdefault(r["series"], []).append(r)
    out = []
    for name, rs in by.items():
        rs = sorted(rs, key=lambda r: r["gpus"])
        first, last = rs[0], rs[-1]
        item = {"series": name, "ids": [r["id"] for r in rs], "gpus": [r["gpus"] for r in rs],
                "source": first["source"], "sets": sorted({r["set"] for r in rs})}
        if len(rs) >= 2 and all(ok(r) for r in (first, last)):
            item["published_growth"] = last["published"] / first["published"] - 1
            item["predicted_growth"] = last["predicted"] / first["predicted"] - 1
            item["difference_pp"] = 100 * (item["predicted_growth"] - item["published_growth"])
        out.append(item)
    return out


def series_markdown(series):
    lines = ["| series | source | GPUs | published growth | predicted growth | difference |",
             "|---|---|---|---:|---:|---:|"]
    for s in series:
        gpus = " / ".join(str(g) for g in s["gpus"])
        if "difference_pp" in s:
            lines.append(f"| {s['series']} | {s['source']} | {gpus} | {100 * s['published_growth']:+.1f} % | "
                         f"{100 * s['predicted_growth']:+.1f} % | {s['difference_pp']:+.1f} pp |")
        else:
            lines.append(f"| {s['series']} | {s['source']} | {gpus} | - | - | CLI error |")
    return "\n".join(lines) + "\n"


def series_check(series):
    fails = []
    if not series:
        return ["no scaling series in the data set"]
    for s in series:
        if "difference_pp" not in s:
            fails.append(f"{s['series']}: a row failed, no growth")
        elif abs(s["difference_pp"]) > TARGET_SERIES_PP:
            fails.append(f"{s['series']}: predicted growth {100 * s['predicted_growth']:+.1f} % vs published "
                         f"{100 * s['published_growth']:+.1f} % ({s['difference_pp']:+.1f} pp, limit {TARGET_SERIES_PP:.0f})")
    return fails


def run_failure(r):
    """Why a row fails every bar regardless of its error (the CLI failed, or the published layout
    is called infeasible); None when it ran and fits."""
    if not ok(r):
        return f"{r['id']}: the CLI failed: {r.get('error_text', '')[:200]}"
    if not r["feasible"]:
        return f"{r['id']}: published layout called infeasible: {'; '.join(r['reasons'])[:200]}"
    return None


def check(results, todays=False):
    """Messages for every way the validation results miss the target (empty = pass). The rows
    before issue 46 by default; todays=True: today's published runs (is_todays(),
    issue 46), whose bar issue 46 sets and does not meet yet (docs/validation.md): reported by
    --check, asserted by --check-todays. The error band's table is band.py --check's."""
    fails = []
    val = [r for r in results if r["set"] == "validation" and bool(r.get("todays")) == todays]
    if not val:
        return ["no validation rows were evaluated"]
    for r in val:
        failure = run_failure(r)
        if failure:
            fails.append(failure)
        elif abs(r["error"]) > TARGET_MAX:
            fails.append(f"{r['id']}: |error| {100 * abs(r['error']):.1f} % > {100 * TARGET_MAX:.0f} %")
    errs = [abs(r["error"]) for r in val if ok(r)]
    mean = sum(errs) / len(errs) if errs else float("inf")
    if mean > TARGET_MEAN:
        fails.append(f"mean |error| {100 * mean:.1f} % > {100 * TARGET_MEAN:.0f} % over {len(errs)} validation rows"
                     + (" of today's runs" if todays else ""))
    return fails


def check_unseen(results):
    """Messages for every way validation set 2 misses issue 50's targets (empty = pass)."""
    rows = [r for r in results if r["set"] == "validation2"]
    if not rows:
        return ["no validation2 rows were evaluated"]
    failures = [run_failure(r) for r in rows]
    fails = [f for f in failures if f]
    errs = [r["error"] for r, f in zip(rows, failures) if not f]
    if errs:
        mean = sum(abs(e) for e in errs) / len(errs)
        signed = sum(errs) / len(errs)
        if mean > TARGET_UNSEEN_MEAN:
            fails.append(f"mean |error| {100 * mean:.1f} % > {100 * TARGET_UNSEEN_MEAN:.0f} % over {len(errs)} validation2 rows")
        if abs(signed) > TARGET_UNSEEN_SIGNED:
            fails.append(f"mean signed error {100 * signed:+.1f} % outside +-{100 * TARGET_UNSEEN_SIGNED:.0f} % "
                         f"over {len(errs)} validation2 rows")
    return fails


def holdout_summary(held):
    """Lines summarising the held-out rows as check() would judge them, without failing."""
    ran = [r for r in held if ok(r)]
    errs = [abs(r["error"]) for r in ran]
    lines = [f"{len(held)} rows, {len(ran)} ran" +
             (f": mean |error| {100 * sum(errs) / len(errs):.1f} %, max {100 * max(errs):.1f} %, "
              f"{sum(1 for e in errs if e > TARGET_MAX)} over {100 * TARGET_MAX:.0f} %" if errs else "")]
    for r in held:
        if not ok(r):
            lines.append(f"{r['id']}: the CLI failed: {r.get('error_text', '')[:160]}")
        elif not r["feasible"]:
            lines.append(f"{r['id']}: published layout called infeasible")
    return lines


def report(what, fails, passed):
    """Print a check's verdict: its failures under "<what> FAILED:", or "<what> PASSED: <passed>".
    True when it failed."""
    if fails:
        print(f"{what} FAILED:")
        for msg in fails:
            print(f"  {msg}")
        return True
    print(f"{what} PASSED: {passed}")
    return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=DEFAULT_CLI, help="path of nest-cli (default: %(default)s)")
    ap.add_argument("--runs", default=DEFAULT_RUNS, help="the data set (default: runs.json next to this script)")
    ap.add_argument("--set", default="validation", choices=list(SETS) + ["all"],
                    help="which rows to run (default: validation; validation2: the second, never-fitted set of "
                         "issue 50; all: every set)")
    ap.add_argument("--markdown", metavar="FILE",
                    help="write the table to FILE (between <!-- results --> markers when FILE has them)")
    ap.add_argument("--json", metavar="FILE", help="write the per-row results as JSON")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the validation set meets the target (mean |error| <= 10 %%, "
                         "every row <= 25 %%, none infeasible); always evaluates the validation rows and "
                         "reports the held-out rows separately (not part of the bar)")
    ap.add_argument("--series-check", action="store_true",
                    help="run the scaling-series rows (any set) and exit 1 unless every series' predicted "
                         "step-time growth is within 5 percentage points of the published growth")
    ap.add_argument("--extra-args", default="", help="arguments appended to every nest-cli call")
    ap.add_argument("--class-args", action="append", default=[], metavar="GEN=ARGS",
                    help="arguments appended to the calls of one GPU generation's rows, e.g. "
                         "'A100=--efficiency 0.62' (repeatable; what fit.py prints)")
    ap.add_argument("--check-todays", action="store_true",
                    help="apply the bar to today's published runs (the validation rows with a precision, "
                         "issue 46) instead of the rows before them; exit 1 if off target")
    ap.add_argument("--check-unseen", action="store_true",
                    help="exit 1 unless validation set 2 (issue 50: sources never fitted, each row with its own "
                         "stack) has mean |error| <= 8 %%, mean signed error within +-3 %% and no published "
                         "layout called infeasible")
    ap.add_argument("--jobs", type=int, default=0, help="parallel CLI calls (default: min(8, CPUs))")
    ap.add_argument("--stack", choices=["defaults", "tuned"],
                    help="run every row as this stack (default: each row's own stack_profile; "
                         "--stack defaults measures the default a user gets)")
    args = ap.parse_args(argv)

    cli = Cli(os.path.abspath(args.cli), args.extra_args, parse_class_args(ap, args.class_args), args.stack)
    cli.probe()
    rows = load_runs(args.runs, args.set)
    if args.check and args.set == "calibration":
        rows = load_runs(args.runs, "all")
    if args.check_todays:
        args.check = True
    def also_run(wanted):  # the rows a check needs beside --set's, each once
        have = {r["id"] for r in rows}
        rows.extend(r for r in load_runs(args.runs, "all") if wanted(r) and r["id"] not in have)

    if args.check:  # the bar needs the validation rows; the held-out rows are reported beside it
        also_run(lambda r: r["set"] in ("validation", "holdout"))
    if args.series_check:
        also_run(lambda r: r.get("series"))
    if args.check_unseen:
        also_run(lambda r: r["set"] == "validation2")
    results = run_rows(cli, rows, args.jobs or None)
    series = series_results(results)

    titles = {"validation": "Validation set", "calibration": "Calibration set", "holdout": "Held-out set",
              "validation2": "Validation set 2 (issue 50: sources outside the first sets, never fitted)",
              "crosscheck": "Cross-check: today's models on another stack (NeMo AutoModel, H100 BF16; never fitted)",
              "reference": "Reference rows", "all": "All rows"}
    title = titles["all" if (args.check and args.set == "calibration") else args.set]
    print_table(results, cli, title)
    for which in ("validation", "holdout"):
        part = [r for r in results if r["set"] == which and r.get("todays")]
        if part:
            print(todays_markdown(part, f"Today's published runs ({which} set) by precision, family and machine"))
    if args.markdown:
        text = ""
        for which in ("validation", "holdout", "calibration", "validation2", "crosscheck"):
            part = [r for r in results if r["set"] == which]
            if part:
                text += markdown(part, cli, titles[which]) + "\n"
        for which in ("validation", "holdout"):
            part = [r for r in results if r["set"] == which and r.get("todays")]
            if part:
                text += todays_markdown(part, f"Today's published runs by precision, family and machine: {which} set") + "\n"
        write_markdown(args.markdown, text)
        if series:
            write_markdown(args.markdown, series_markdown(series), SERIES_BEGIN, SERIES_END)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"fallbacks": cli.fallbacks, "extra_args": cli.extra, "results": results, "series": series},
                      f, indent=1)
    if series:
        print("Scaling series (growth = largest / smallest GPU count - 1)")
        for s in series:
            if "difference_pp" in s:
                print(f"  {s['series']:32} {'/'.join(str(g) for g in s['gpus']):28} published {100 * s['published_growth']:+6.1f} %"
                      f"  predicted {100 * s['predicted_growth']:+6.1f} %  difference {s['difference_pp']:+5.1f} pp")
            else:
                print(f"  {s['series']:32} failed")
        print()
    if args.series_check and report("SERIES CHECK", series_check(series),
                                     f"{len(series)} scaling series within {TARGET_SERIES_PP:.0f} pp"):
        return 1
    if args.check_unseen and report("UNSEEN-SOURCES CHECK", check_unseen(results),
                                     f"{sum(1 for r in results if r['set'] == 'validation2')} validation2 rows "
                                     "within issue 50's targets"):
        return 1
    if args.check or args.check_todays:
        held = [r for r in results if r["set"] == "holdout"]
        if held:
            print("Held-out set (reported, not part of the bar):")
            for line in holdout_summary(held):
                print(f"  {line}")
        today = [r for r in results if r["set"] == "validation" and r.get("todays")]
        if today and not args.check_todays:
            print("Today's published runs, validation set (issue 46's bar, not met yet; --check-todays asserts it):")
            for line in holdout_summary(today):
                print(f"  {line}")
        if report("CHECK", check(results, todays=args.check_todays), "validation set within target"):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
