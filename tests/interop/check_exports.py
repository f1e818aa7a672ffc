#!/usr/bin/python3
"""Framework exports judged by the frameworks' own rules (issue 21, docs/interop.md).

For several plans (NEST's own on the quick-start workspace, an interleaved one, one whose
stages sit in different racks, one that only Megatron-LM's second rank order places, one
with per-stage tensor widths) and every format, this script runs `nest-cli export --out`
and then, with parsers that are not the exporter's (Python's json, PyYAML, tomllib,
`bash -n`):
  * every produced file parses;
  * its numbers equal the plan's (degrees, batch sizes, layer split, ZeRO, recompute) when
    nothing fell back, and the exported plan's otherwise;
  * each rank's coordinate, rebuilt here from the framework's own rule (Megatron-Core's
    RankGenerator, DeepSpeed's PipeModelDataParallelTopology, torchtitan's device mesh)
    and placed where the launch files put it (hostfile order, CUDA_VISIBLE_DEVICES), lands
    on the plan's device;
  * the layout read back from the files into `nest-cli evaluate` (with a rank map built
    here from the launch files) costs the time the export states, which is the plan's own
    when no fallback was needed.
Bad input (unknown format, a plan for another cluster, an unwritable --out, --strict on a
plan the framework cannot run) must give exit 2 with a message.

Needs Debian's /usr/bin/python3 (python3-yaml; tomllib is in Python 3.11).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib

import yaml

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def run(cli, args, expect=0):
    p = subprocess.run([cli] + args, capture_output=True, text=True)
    if p.returncode != expect:
        raise SystemExit(f"nest-cli {' '.join(args)}: exit {p.returncode}, expected {expect}\n{p.stdout}\n{p.stderr}")
    return p


# --- the frameworks' rank rules, written from their sources (not from core/interop) ------------

def megatron_coord(rank, tp, cp, dp, pp, tp_pp_dp):
    """Megatron-Core parallel_state RankGenerator: the first name of the order varies fastest.
    Default order tp-cp-ep-dp-pp (ep = 1 for dense layers); --use-tp-pp-dp-mapping: tp-cp-ep-pp-dp."""
    t = rank % tp
    rest = rank // tp
    c = rest % cp
    rest //= cp
    if tp_pp_dp:
        p, d = rest % pp, rest // pp
    else:
        d, p = rest % dp, rest // dp
    return p, d, c, t


def deepspeed_coord(rank, tp, dp, pp):
    """PipeModelDataParallelTopology: axes [pipe, data, model], the last axis fastest."""
    return rank // (tp * dp), (rank // tp) % dp, 0, rank % tp


def torchtitan_coord(rank, tp, cp, dp, pp):
    """ParallelDims mesh [pp, dp_replicate, dp_shard, cp, tp] in row-major order (tp fastest);
    one of dp_replicate / dp_shard is 1 in these exports."""
    return rank // (tp * cp * dp), (rank // (tp * cp)) % dp, (rank // tp) % cp, rank % tp


# --- where the launch files put each rank --------------------------------------------------------

def torchrun_placement(script):
    """Node rank k runs global ranks k*G .. k*G+G-1 (torchrun --node-rank, --nproc-per-node); local
    rank i runs on GPU i of the CUDA_VISIBLE_DEVICES the script exports for node rank k."""
    hosts = shlex.split(re.search(r"^HOSTS=\((.*)\)$", script, re.M).group(1))  # shell words
    g = int(re.search(r"^NPROC_PER_NODE=(\d+)$", script, re.M).group(1))
    cvd = {int(k): [int(x) for x in v.split(",")]
           for k, v in re.findall(r"^\s+(\d+)\) export CUDA_VISIBLE_DEVICES=([\d,]+) ;;", script, re.M)}
    check(sorted(cvd) == list(range(len(hosts))), "a CUDA_VISIBLE_DEVICES entry per host")
    placement = []
    for k, host in enumerate(hosts):
        check(len(cvd[k]) == g, f"{host}: {g} GPUs listed")
        for i in range(g):
            placement.append((host, cvd[k][i]))
    return placement


def deepspeed_placement(hostfile, script):
    """DeepSpeed's runner: hosts in hostfile order, slots in --include order; launch.py sets
    CUDA_VISIBLE_DEVICES to those slots and numbers ranks host by host, slot by slot."""
    order = [line.split()[0] for line in hostfile.splitlines() if line.strip() and not line.startswith("#")]
    for line in hostfile.splitlines():
        check(re.match(r"^(\S+)\s+slots=(\d+)$", line) is not None, f"hostfile line '{line}'")
    include = shlex.split(re.search(r"^INCLUDE=(.*)$", script, re.M).group(1))[0]  # one shell word
    slots = {}
    for spec in include.split("@"):
        host, gpus = spec.split(":")
        slots[host] = [int(x) for x in gpus.split(",")]
    placement = []
    for host in order:
        for gpu in slots[host]:
            placement.append((host, gpu))
    return placement


def bash_array(script, name):
    body = re.search(r"^" + name + r"=\(\n(.*?)^\)", script, re.M | re.S).group(1)
    return shlex.split(body)


def flags_of(words):
    out = {}
    i = 0
    while i < len(words):
        w = words[i]
        if i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[w] = words[i + 1]
            i += 2
        else:
            out[w] = True
            i += 1
    return out


def deepspeed_balanced(blocks, parts):
    """deepspeed/runtime/utils.py partition_balanced (v0.15), transcribed, on the weights of
    GPTModelPipe's layers [EmbeddingPipe, blocks x ParallelTransformerLayerPipe, LayerNorm,
    EmbeddingPipe] under 'type:transformer'; the blocks of each part."""
    w = [0] + [1] * blocks + [0, 0]
    n, m = len(w), parts
    if n <= m:
        bounds = [min(p, n) for p in range(m + 1)]
    else:
        inf = float("inf")
        dmax = [[inf] * (m + 1) for _ in range(n + 1)]
        dmin = [[inf] * (m + 1) for _ in range(n + 1)]
        cost = [[inf] * (m + 1) for _ in range(n + 1)]
        pos = [[0] * (m + 1) for _ in range(n + 1)]
        pre = [0] * (n + 1)
        for i in range(n):
            pre[i + 1] = pre[i] + w[i]
        dmax[0][0] = 0
        cost[0][0] = 0
        for i in range(1, n + 1):
            for j in range(1, min(i, m) + 1):
                for k in range(i):
                    mx = max(dmax[k][j - 1], pre[i] - pre[k])
                    mn = min(dmin[k][j - 1], pre[i] - pre[k])
                    if cost[i][j] >= mx - mn:
                        cost[i][j], dmax[i][j], dmin[i][j], pos[i][j] = mx - mn, mx, mn, k
        bounds = [n]
        for i in reversed(range(1, m + 1)):
            bounds.append(pos[bounds[-1]][i])
        bounds.reverse()
    return [sum(w[bounds[s]:bounds[s + 1]]) for s in range(m)]


# --- one export ----------------------------------------------------------------------------------

def blocks_per_stage(plan, kinds):
    return [sum(1 for l in range(s["first_layer"], s["end_layer"]) if kinds[l] in ("transformer", "moe"))
            for s in plan["stages"]]


def read_back(fmt, files, stem):
    """The layout the files say: a dict of evaluate flags and the launch placement."""
    if fmt == "megatron":
        script = files[stem + ".sh"]
        f = {}
        for arr in ("PARALLEL_ARGS", "MODEL_ARGS", "TRAINING_ARGS"):
            f.update(flags_of(bash_array(script, arr)))
        tp, pp = int(f["--tensor-model-parallel-size"]), int(f["--pipeline-model-parallel-size"])
        cp, ep = int(f["--context-parallel-size"]), int(f["--expert-model-parallel-size"])
        layers = int(f["--num-layers"])
        schedule, v = "1f1b", 1
        emb = 1 if "--account-for-embedding-in-pipeline-split" in f else 0
        loss = 1 if "--account-for-loss-in-pipeline-split" in f else 0
        units = ["layers", "layers+embedding", "layers+embedding+loss"][emb + loss]
        if emb or loss:
            # Megatron-Core's even split of the units (blocks + embedding + loss), per chunk.
            v = int(f.get("--num-virtual-stages-per-pipeline-rank", 1))
            if v > 1:
                schedule = f"interleaved:{v}"
            per = (layers + emb + loss) // (pp * v)
            split = [per] * (pp * v)
            split[0] -= emb
            split[-1] -= loss
        elif "--num-layers-per-virtual-pipeline-stage" in f:
            per = int(f["--num-layers-per-virtual-pipeline-stage"])
            v = layers // (pp * per)
            schedule = f"interleaved:{v}"
            split = [per] * (pp * v)
        elif "--pipeline-model-parallel-layout" in f:
            # Megatron-Core's PipelineParallelLayerLayout.parse_str_to_list: x*n unrolled, "|"
            # between stages, "t" a transformer layer (E embedding, L loss).
            text = f["--pipeline-model-parallel-layout"].strip("'").replace(",", "")
            text = re.sub(r"\(([^)]+)\)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
            text = re.sub(r"(.)\*(\d+)", lambda m: m.group(1) * int(m.group(2)), text)
            split = [stage.count("t") for stage in text.split("|")]
            check(text.startswith("E") and text.endswith("L"), "megatron: the layout starts with E, ends with L")
        elif "--decoder-first-pipeline-num-layers" in f:
            first, last = int(f["--decoder-first-pipeline-num-layers"]), int(f["--decoder-last-pipeline-num-layers"])
            mid = (layers - first - last) // (pp - 2) if pp > 2 else 0
            split = [first] + [mid] * (pp - 2) + [last]
        else:
            split = [layers // pp] * pp
        rec = f.get("--recompute-granularity", "none")
        placement = torchrun_placement(script)
        world = len(placement)
        # Megatron-LM's Transformer-Engine arguments (issue 46): --fp4-format, else
        # --fp8-format with --fp8-recipe (tensorwise is current scaling).
        if "--fp4-format" in f:
            precision = ("nvfp4", None)
        elif "--fp8-format" in f:
            recipe = f.get("--fp8-recipe", "delayed")
            precision = ("mxfp8", None) if recipe == "mxfp8" else \
                ("fp8", {"tensorwise": "current"}.get(recipe, recipe))
        else:
            precision = ("bf16", None)
        return dict(precision=precision, tp=tp, pp=pp, cp=cp, ep=ep, dp=world // (tp * pp * cp), schedule=schedule, units=units,
                    microbatch=int(f["--micro-batch-size"]), batch=int(f["--global-batch-size"]),
                    zero=1 if "--use-distributed-optimizer" in f else 0, recompute=rec,
                    sp="--sequence-parallel" in f, split=split,
                    order="tp-cp-ep-pp-dp" if "--use-tp-pp-dp-mapping" in f else "tp-cp-ep-dp-pp",
                    coord=lambda r, d: megatron_coord(r, d["tp"], d["cp"], d["dp"], d["pp"],
                                                      "--use-tp-pp-dp-mapping" in f),
                    placement=placement)
    if fmt == "nemo":
        y = yaml.safe_load(files[stem + ".yaml"])
        m = y["model"]
        tp, pp, cp = m["tensor_model_parallel_size"], m["pipeline_model_parallel_size"], m["context_parallel_size"]
        v = m["virtual_pipeline_model_parallel_size"] or 1
        placement = torchrun_placement(files[stem + ".sh"])
        check(y["trainer"]["num_nodes"] * y["trainer"]["devices"] == len(placement), "nemo: nodes x devices = ranks")
        g = m["activations_checkpoint_granularity"]
        # Megatron-Core's TransformerConfig fields: the embedding / the loss count as one layer.
        emb = 1 if m.get("account_for_embedding_in_pipeline_split") else 0
        loss = 1 if m.get("account_for_loss_in_pipeline_split") else 0
        split = [(m["num_layers"] + emb + loss) // (pp * v)] * (pp * v)
        split[0] -= emb
        split[-1] -= loss
        # NeMo 1.x: model.fp8 is Transformer Engine's delayed scaling.
        precision = ("fp8", "delayed") if m.get("fp8") else ("bf16", None)
        return dict(precision=precision, tp=tp, pp=pp, cp=cp, ep=m["expert_model_parallel_size"], dp=len(placement) // (tp * pp * cp),
                    schedule=f"interleaved:{v}" if v > 1 else "1f1b", microbatch=m["micro_batch_size"],
                    units=["layers", "layers+embedding", "layers+embedding+loss"][emb + loss],
                    batch=m["global_batch_size"], zero=1 if m["optim"]["name"] == "distributed_fused_adam" else 0,
                    recompute=g or "none", sp=bool(m["sequence_parallel"]),
                    split=split, order="tp-cp-ep-dp-pp",
                    coord=lambda r, d: megatron_coord(r, d["tp"], d["cp"], d["dp"], d["pp"], False),
                    placement=placement)
    if fmt == "deepspeed":
        cfg = json.loads(files[stem + ".json"])
        part = json.loads(files[stem + ".pipeline.json"])
        script = files[stem + ".sh"]
        f = flags_of(bash_array(script, "ARGS"))
        tp, pp = int(f["--tensor-model-parallel-size"]), int(f["--pipeline-model-parallel-size"])
        placement = deepspeed_placement(files[stem + ".hostfile"], script)
        dp = len(placement) // (tp * pp)
        check(cfg["train_batch_size"] == cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] * dp,
              "deepspeed: train_batch_size = micro x accumulation x dp")
        # What DeepSpeed builds for Megatron-DeepSpeed's GPTModelPipe: partition_method
        # 'type:transformer' over [embedding, blocks, norm, head], cut by partition_balanced.
        split = deepspeed_balanced(int(f["--num-layers"]), pp)
        check(part.get("blocks_per_stage") == split, f"deepspeed: pipeline.json states DeepSpeed's split {split}")
        rec = f.get("--recompute-granularity", "none")
        return dict(tp=tp, pp=pp, cp=1, ep=1, dp=dp, schedule="1f1b", microbatch=cfg["train_micro_batch_size_per_gpu"],
                    batch=cfg["train_batch_size"], zero=cfg["zero_optimization"]["stage"], recompute=rec,
                    sp="--sequence-parallel" in f, split=split, order="tp-cp-dp-pp",
                    coord=lambda r, d: deepspeed_coord(r, d["tp"], d["dp"], d["pp"]), placement=placement)
    if fmt == "torchtitan":
        t = tomllib.loads(files[stem + ".toml"])
        par = t["parallelism"]
        tp, pp, cp = par["tensor_parallel_degree"], par["pipeline_parallel_degree"], par["context_parallel_degree"]
        rep, shard = par["data_parallel_replicate_degree"], par["data_parallel_shard_degree"]
        check(rep == 1 or shard == 1, "torchtitan: replicate or shard")
        dp = rep * shard
        sched = par["pipeline_parallel_schedule"]
        if pp > 1:
            parts = par["module_fqns_per_model_part"]
            split = [sum(1 for n in p if n.startswith("layers.")) for p in parts]
        else:
            split = None
        v = len(split) // pp if split else 1
        schedule = {"1F1B": "1f1b", "GPipe": "gpipe"}.get(sched, f"interleaved:{v}")
        zero = 0 if shard == 1 else (2 if par["fsdp_reshard_after_forward"] == "never" else 3)
        tr = t["training"]
        micro = par["pipeline_parallel_microbatch_size"] if pp > 1 else tr["local_batch_size"]
        placement = torchrun_placement(files[stem + ".sh"])
        conv = t.get("model", {}).get("converters", [])
        precision = ("fp8", "current") if "float8" in conv else ("mxfp8", None) if "mx" in conv else ("bf16", None)
        return dict(precision=precision, tp=tp, pp=pp, cp=cp, ep=1, dp=dp, schedule=schedule, microbatch=micro,
                    batch=tr["global_batch_size"], zero=zero, recompute=t["activation_checkpoint"]["mode"],
                    sp=tp > 1, split=split, order="tp-cp-dp-pp",
                    coord=lambda r, d: torchtitan_coord(r, d["tp"], d["cp"], d["dp"], d["pp"]), placement=placement)
    raise ValueError(fmt)


def check_export(cli, label, fmt, plan_file, where, tmp, cluster_nodes, kinds, framework):
    plan = json.load(open(plan_file))
    ext = {"megatron": ".sh", "nemo": ".yaml", "deepspeed": ".json", "torchtitan": ".toml", "nest": ".json"}[fmt]
    stem = f"{label}_{fmt}"
    out = os.path.join(tmp, stem + ext)
    args = ["export", "--plan", plan_file, "--format", fmt, "--out", out, "--json"] + where
    bert = any("bert" in w for w in where)
    stages = len(plan["stages"]) // plan.get("virtual_stages", 1)
    if fmt == "torchtitan" or (fmt == "nemo" and bert) or (fmt == "deepspeed" and bert and stages > 1):
        # Megatron-DeepSpeed's pretrain_bert.py has no pipeline module: BERT with pp 1 only.
        # torchtitan@6404b932 has llama3 8B / 70B / 405B only, NeMo's GPT entry point no BERT:
        # these models are refused (issue 47).
        p = subprocess.run([cli] + args, capture_output=True, text=True)
        title = {"torchtitan": "torchtitan", "nemo": "NeMo", "deepspeed": "DeepSpeed"}[fmt]
        check(p.returncode == 2 and f"{title} cannot train this model" in p.stderr,
              f"{label}/{fmt}: refused, the framework has no such model: {p.stderr.strip()[-200:]}")
        return "refused"
    res = json.loads(run(cli, args).stdout)
    files = {os.path.basename(p): open(p).read() for p in res["files"]}
    tag = f"{label}/{fmt}"
    fell_back = bool(res["fallback"])
    for name, text in files.items():
        path = os.path.join(tmp, name)
        if name.endswith(".json"):
            json.loads(text)
        elif name.endswith(".yaml"):
            yaml.safe_load(text)
        elif name.endswith(".toml"):
            tomllib.loads(text)
        elif name.endswith(".sh"):
            check(subprocess.run(["bash", "-n", path]).returncode == 0, f"{tag}: bash -n {name}")
            check(os.access(path, os.X_OK), f"{tag}: {name} is executable")
        elif name.endswith(".py"):
            compile(text, name, "exec")
    if not fell_back:
        check(abs(res["iteration_time_s"] - res["original_iteration_time_s"]) <= 1e-12 * res["original_iteration_time_s"],
              f"{tag}: no fallback, same time")
    if fmt == "nest":
        out_json = json.loads(files[stem + ".json"])
        if not fell_back:
            check(out_json["dataParallelDegree"] == plan["dp"], f"{tag}: dataParallelDegree")
            check(len(out_json["stages"]) == len(plan["stages"]), f"{tag}: stage count")
            for s, st in zip(out_json["stages"], plan["stages"]):
                check(len(s["nodes"]) == st["end_layer"] - st["first_layer"], f"{tag}: layers of a stage")
                check(s["devices"] == st["devices"], f"{tag}: devices of a stage")
        check(abs(out_json["finalTimePerBatch"] - res["iteration_time_s"]) <= 1e-12 * res["iteration_time_s"],
              f"{tag}: finalTimePerBatch")
        return fell_back

    d = read_back(fmt, files, stem)
    # The numbers equal the plan's when nothing fell back.
    if not fell_back:
        st0 = plan["stages"][0]
        pp = len(plan["stages"]) // plan.get("virtual_stages", 1)
        rec = st0.get("recompute", "none")
        rec = {True: "full", False: "none"}.get(rec, rec)  # plan files of version 1: true / false
        expect = dict(tp=st0.get("tp", 1), cp=st0.get("cp", 1), dp=plan["dp"], pp=pp, microbatch=plan["micro_batch"],
                      batch=plan["global_batch"], zero=st0.get("zero", 0), recompute=rec)
        for k, v in expect.items():
            check(d[k] == v, f"{tag}: {k} {d[k]} != plan's {v}")
        if d["split"] is not None:
            check(d["split"] == blocks_per_stage(plan, kinds), f"{tag}: split {d['split']} != plan's {blocks_per_stage(plan, kinds)}")

    # Every rank, by the framework's rule, on the device the launch files give it.
    world = d["tp"] * d["cp"] * d["dp"] * d["pp"]
    check(len(d["placement"]) == world, f"{tag}: {len(d['placement'])} launched ranks, world {world}")
    rank_devices = []
    for r, (host, gpu) in enumerate(d["placement"]):
        rank_devices.append(cluster_nodes[host] + gpu)
    if not fell_back:
        for r in range(world):
            p, rep, c, t = d["coord"](r, d)
            want = plan["stages"][p]["devices"][rep][c * d["tp"] + t]
            check(rank_devices[r] == want, f"{tag}: rank {r} (stage {p}, replica {rep}, cp {c}, tp {t}) runs on "
                                           f"device {rank_devices[r]}, the plan says {want}")

    # Read back into nest-cli evaluate: the stated time.
    rank_map = os.path.join(tmp, stem + ".readback.json")
    json.dump({"format": "nest-rank-map", "ranks": [{"rank": r, "device": dev} for r, dev in enumerate(rank_devices)]},
              open(rank_map, "w"))
    args = ["evaluate", "--json", "--tp", str(d["tp"]), "--pp", str(d["pp"]), "--dp", str(d["dp"]), "--cp", str(d["cp"]),
            "--ep", str(d["ep"]), "--microbatch", str(d["microbatch"]), "--batch", str(d["batch"]),
            "--seq", str(plan["seq_length"]), "--schedule", d["schedule"], "--zero", str(d["zero"]),
            "--recompute", d["recompute"], "--order", d["order"], "--rank-map", rank_map] + where
    if d["split"] is not None:
        args += ["--stage-blocks", ",".join(map(str, d["split"]))]
    if d.get("units"):
        args += ["--pipeline-units", d["units"]]
    if d["sp"]:
        args.append("--sp")
    fmt_name, recipe = d.get("precision", ("bf16", None))
    if fmt_name != "bf16":
        args += ["--precision", fmt_name] + (["--fp8-recipe", recipe] if recipe else [])
    if framework:
        args += ["--framework", framework]
    rep = json.loads(run(cli, args).stdout)
    check(abs(rep["iteration_time_s"] - res["iteration_time_s"]) <= 1e-9 * res["iteration_time_s"],
          f"{tag}: read back {rep['iteration_time_s']} s, the export states {res['iteration_time_s']} s")
    return fell_back


def inspect(cli, where, plan):
    """Node name -> first device id, and the model's layer kinds (nest-cli inspect --json)."""
    info = json.loads(run(cli, ["inspect", "--json", "--seq", str(plan["seq_length"])] + where).stdout)
    nodes = {n["name"]: n["first_device"] for n in info["cluster"]["nodes"]}
    return nodes, info["model"]["layer_kinds"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    cli, root = a.cli, a.root
    quick = os.path.join(root, "sample_configs/workspaces/quickstart.nestws.json")
    tmp = tempfile.mkdtemp(prefix="nest-export-")

    cases = []
    # 1. NEST's own plan on the quick-start workspace (two racks of different GPUs).
    p1 = os.path.join(tmp, "quick.plan.json")
    run(cli, ["plan", "--workspace", quick, "--out", p1])
    cases.append(("quick", p1, ["--workspace", quick], None))
    # 2. An interleaved plan (NEST's, interleaving only).
    p2 = os.path.join(tmp, "inter.plan.json")
    spine = ["--cluster", "paper-spineleaf-64", "--model", "llama2-7b"]
    run(cli, ["plan", "--vpp", "2", "--microbatch", "1", "--batch", "512", "--out", p2] + spine)
    cases.append(("inter", p2, spine, None))
    # 3. Stages in different racks (the sample plan: tp 8, pp 2, dp 4 on both leaves).
    p3 = os.path.join(root, "sample_configs/plans/llama2-7b-spineleaf64-tp8-pp2-dp4.json")
    cases.append(("racks", p3, spine, None))
    # 4. Each replica's whole pipeline on one node: only Megatron's tp-cp-ep-pp-dp places it.
    stages = []
    for p in range(4):
        stages.append({"first_layer": 0, "end_layer": 0, "tp": 2,
                       "devices": [[8 * r + 2 * p, 8 * r + 2 * p + 1] for r in range(8)]})
    bounds = [0, 9, 17, 25, 34]  # embedding + 8 blocks, 8, 8, 8 + head (llama2-7b: 32 blocks)
    for p in range(4):
        stages[p]["first_layer"], stages[p]["end_layer"] = bounds[p], bounds[p + 1]
    p4 = os.path.join(tmp, "pernode.plan.json")
    json.dump({"format": "nest-plan", "global_batch": 512, "micro_batch": 1, "seq_length": 4096,
               "schedule": "1f1b", "dp": 8, "stages": stages}, open(p4, "w"))
    cases.append(("pernode", p4, spine, None))
    # 5. Per-stage tensor widths (tp 2 then 1) and ZeRO-3: every framework falls back.
    v100 = ["--cluster", "paper-v100-16", "--model", "bert-large"]
    p5 = os.path.join(tmp, "mixed.plan.json")
    json.dump({"format": "nest-plan", "global_batch": 256, "micro_batch": 2, "seq_length": 512, "schedule": "1f1b",
               "dp": 4, "stages": [
                   {"first_layer": 0, "end_layer": 13, "tp": 2, "zero": 3,
                    "devices": [[0, 1], [2, 3], [4, 5], [6, 7]]},
                   {"first_layer": 13, "end_layer": 26, "tp": 1, "zero": 3,
                    "devices": [[8], [9], [10], [11]]}]}, open(p5, "w"))
    cases.append(("mixed", p5, v100, None))

    # 6. The sample plan counted in units (blocks + embedding + loss = 34, 17 per stage: the
    #    same cuts): NeMo and Megatron-LM run it with their account_for_* keys and flags.
    p6 = os.path.join(tmp, "units.plan.json")
    units_plan = json.load(open(p3))
    units_plan["pipeline_units"] = "layers+embedding+loss"
    json.dump(units_plan, open(p6, "w"))
    cases.append(("units", p6, spine, None))
    # 7. NEST's interleaved plan with the units counted.
    p7 = os.path.join(tmp, "unitsinter.plan.json")
    run(cli, ["plan", "--vpp", "2", "--microbatch", "1", "--batch", "512", "--pipeline-units",
              "layers+embedding+loss", "--out", p7] + spine)
    check(json.load(open(p7)).get("pipeline_units") == "layers+embedding+loss", "plan --pipeline-units is recorded")
    cases.append(("unitsinter", p7, spine, None))

    summary = []
    for label, plan_file, where, framework in cases:
        plan = json.load(open(plan_file))
        nodes, kinds = inspect(cli, where, plan)
        for fmt in ("megatron", "nemo", "deepspeed", "torchtitan", "nest"):
            fell = check_export(cli, label, fmt, plan_file, where, tmp, nodes, kinds, framework)
            summary.append(f"{label}/{fmt}: {fell if fell == 'refused' else 'fallback' if fell else 'as planned'}")
    # The per-node plan: Megatron places it with its second order; the mixed plan falls back everywhere.
    check("pernode/megatron: as planned" in summary, "pernode/megatron needs no fallback (--use-tp-pp-dp-mapping)")
    check("mixed/megatron: fallback" in summary, "mixed/megatron falls back")
    check("racks/megatron: as planned" in summary, "racks/megatron runs as planned")
    check("units/megatron: as planned" in summary, "units/megatron runs as planned")
    check("units/nemo: as planned" in summary, "units/nemo runs as planned")
    units_script = open(os.path.join(tmp, "units_megatron.sh")).read()
    check("--account-for-embedding-in-pipeline-split" in units_script and
          "--account-for-loss-in-pipeline-split" in units_script, "units/megatron: the account-for flags")
    units_yaml = yaml.safe_load(open(os.path.join(tmp, "units_nemo.yaml")))["model"]
    check(units_yaml.get("account_for_embedding_in_pipeline_split") is True and
          units_yaml.get("account_for_loss_in_pipeline_split") is True, "units/nemo: the account_for keys")
    script = open(os.path.join(tmp, "pernode_megatron.sh")).read()
    check("--use-tp-pp-dp-mapping" in script, "pernode/megatron uses --use-tp-pp-dp-mapping")

    # Bad input: exit 2 with a message.
    bad = [
        (["export", "--plan", p3, "--format", "slurm"] + spine, "expects one of"),
        (["export", "--plan", p3, "--format", "megatron"] + v100, "does not match"),
        (["export", "--plan", p3, "--format", "megatron", "--out", "/etc/hostname/x.sh"] + spine, "x.sh"),
        (["export", "--plan", p5, "--format", "megatron", "--strict"] + v100, "cannot run this plan"),
        (["export", "--format", "megatron"] + spine, "--plan FILE is required"),
    ]
    for args, text in bad:
        p = run(cli, args, expect=2)
        check(text in p.stderr, f"'{' '.join(args)}' says '{text}': {p.stderr.strip()}")

    print("\n".join(summary))
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        return 1
    print("all export checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
