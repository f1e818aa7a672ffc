#!/usr/bin/env python3
"""Scores the NEST artifact's own baseline layouts (the `baselines` {p, t, d} of each
solver input in ../shared/nest-artifact/inputs) with our evaluator on the paper's fat-tree,
next to NEST's plan for the same cluster and model, and prints a Markdown table.

usage: artifact_baselines.py --cli build/app/nest-cli [--inputs DIR]
The layouts are uniform (t = tensor width, p = stages, d = replicas, micro-batch as in the
file name); a layout our evaluator rejects (p above the block count, memory) is reported
with the reason. Standard library only."""
import argparse, glob, json, math, os, re, subprocess, sys

MODELS = {"bert": "bert-large", "gpt3": "gpt3-175b", "llama2": "llama2-7b", "llama3": "llama3-70b",
          "mixtral": "mixtral-8x7b"}


def run(cli, args):
    p = subprocess.run([cli] + args + ["--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(p.stdout), ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--inputs", default=os.path.join(here, "../../../shared/nest-artifact/inputs"))
    a = ap.parse_args()
    rows = []
    for f in sorted(glob.glob(os.path.join(a.inputs, "ilp_*dev*.json")) + sorted(glob.glob(os.path.join(a.inputs, "seq_*dev*.json")))):
        name = os.path.basename(f)
        m = re.match(r"(ilp|seq)_([a-z0-9]+)_.*mbs_(\d+)_.*dev(\d+)\.json", name)
        if not m:
            continue
        model, mbs, dev = MODELS[m.group(2)], int(m.group(3)), int(m.group(4))
        e = re.search(r"_ep_(\d+)_", name)
        ep = int(e.group(1)) if e else 1
        j = json.load(open(f))
        batch = int(j["mbsInBatch"])
        cluster = "paper-fattree-%d" % dev
        nest, why = run(a.cli, ["plan", "--cluster", cluster, "--model", model, "--batch", str(batch)])
        if not nest:
            print("NEST failed on %s: %s" % (name, why), file=sys.stderr)
            continue
        tn = nest["report"]["iteration_time_s"]
        cells = []
        for base in ("Manual", "Phaze", "MCMC"):
            b = j.get("baselines", {}).get(base)
            if not b:
                cells.append("—")
                continue
            p, t, d = b["p"], b["t"], b["d"]
            # The largest micro-batch <= the file's that splits the batch over d replicas.
            mb = mbs
            while mb > 1 and batch % (mb * d):
                mb -= 1
            if batch % (mb * d):
                cells.append("p%d t%d d%d: batch does not split" % (p, t, d))
                continue
            args = ["evaluate", "--cluster", cluster, "--model", model, "--batch", str(batch), "--tp", str(t),
                    "--pp", str(p), "--dp", str(d), "--microbatch", str(mb)]
            if t > 1:
                args.append("--sp")  # Megatron's sequence parallelism with tensor parallelism
            if ep > 1 and d % ep == 0:
                args += ["--ep", str(ep)]
            r, why = run(a.cli, args)
            if not r:
                cells.append("p%d t%d d%d: rejected (%s)" % (p, t, d, why.split(": ", 2)[-1][:50]))
            elif not r["feasible"]:
                cells.append("p%d t%d d%d: infeasible (memory)" % (p, t, d))
            else:
                cells.append("p%d t%d d%d: %.2fx" % (p, t, d, r["iteration_time_s"] / tn))
        rows.append((model, dev, tn, cells))
    print("| model | devices | NEST iteration (s) | artifact Manual | artifact Phaze | artifact MCMC |")
    print("|---|---:|---:|---|---|---|")
    for model, dev, tn, cells in rows:
        print("| %s | %d | %.3f | %s |" % (model, dev, tn, " | ".join(cells)))


if __name__ == "__main__":
    main()
