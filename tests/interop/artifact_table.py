#!/usr/bin/env python3
"""The NEST artifact's inputs (../shared/nest-artifact/inputs, 27 files) planned by nest-cli on
their own clusters under --match-artifact, next to the artifact's recorded layouts (each file's
`baselines`: Manual, Phaze, MCMC as {p, t, d}) priced by the same evaluator. Prints the
Markdown table of docs/interop.md ("The NEST artifact's inputs") and, as a test, fails when:
  - an input does not import or plan (exit status of nest-cli),
  - our time per batch exceeds the best recorded layout's that our evaluator can price,
  - a width the file lists cannot be evaluated, or a width it does not list is not refused
    (exit 2 naming the width),
  - a malformed input is not refused with exit 2 and a message naming the file and JSON path.

usage: artifact_table.py --cli build/app/nest-cli [--inputs DIR] [--subset] [--table-only]
--subset: one input per model (quick); without it all 27 (the CTest artifact_inputs, ~20 s).
Exit 77 (skipped) when the inputs folder has no JSON. Standard library only.

How a recorded layout is priced: t = tensor width, p = stages (transformer blocks split as
evenly as possible, the first stages one longer; the embedding with the first), d = replicas,
the file's micro-batch, full recomputation or none (whichever is faster and fits, as the
artifact recomputes all stages but the last); d need not divide the batch in the artifact,
whose formula charges each replica ceil(mbsInBatch / d) micro-batches: we price that same
padded batch (d x ceil(mbsInBatch / d) micro-batches)."""
import argparse, glob, json, math, os, re, subprocess, sys, tempfile, time

# Inputs whose names lack _sl_: their data equals the Llama-2 7B inputs named
# ..._sl_4096_dev64.json (same parameterSize, activationSize and 33554432-byte edges), so 4096.
SEQ_BY_DATA = {"ilp_llama2_64.json": 4096, "seq_llama2_64.json": 4096}
SUBSET = ["ilp_bert_megatronbert_mbs_1_sl_512_tmp_8_ep_1_cp_1_dev64.json",
          "ilp_gpt3_megatrongpt3_mbs_1_sl_2048_tmp_8_ep_1_cp_1_dev64.json",
          "ilp_llama2_64.json",
          "ilp_llama3_llama3_mbs_1_sl_4096_dev64.json",
          "seq_mixtral_mixtral_mbs_4_sl_4096_tmp_1_ep_4_cp_1_dev128.json"]


def run(cli, args):
    p = subprocess.run([cli] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def mbs_of(name, j):
    m = re.search(r"(^|_)mbs_(\d+)(_|\.)", name)
    return int(m.group(2)) if m else int(round(4096 / j["mbsInBatch"]))


def price_recorded(cli, f, seq_args, j, base):
    """The artifact's recorded layout {p, t, d} priced by our evaluator: (seconds, text)."""
    p, t, d = base["p"], base["t"], base["d"]
    group = j.get("ep_degree", 1) * j.get("cp_degree", 1)
    if p * t * d * group > j["maxDevices"]:
        return None, "p%d t%d d%d: needs %d devices, the file has %d" % (p, t, d, p * t * d * group, j["maxDevices"])
    mbs = mbs_of(os.path.basename(f), j)
    per_replica = math.ceil(j["mbsInBatch"] / d)
    batch = mbs * d * per_replica
    best = None
    modes = ["none", "full"] if j.get("activationRecomputation") else ["none"]
    why = ""
    for rec in modes:
        rc, out, err = run(cli, ["evaluate", "--model", f, "--match-artifact", "--tp", str(t), "--pp", str(p),
                                 "--dp", str(d), "--microbatch", str(mbs), "--batch", str(batch),
                                 "--recompute", rec, "--json"] + seq_args)
        if rc != 0:
            why = (err.strip().splitlines() or ["?"])[-1].strip()
            continue
        r = json.loads(out)
        if not r["feasible"]:
            why = "does not fit in memory"
            continue
        if best is None or r["iteration_time_s"] < best:
            best = r["iteration_time_s"]
    label = "p%d t%d d%d" % (p, t, d)
    if best is None:
        return None, "%s: %s" % (label, why[:60])
    return best, "%s: %.2f s" % (label, best)


def our_plan(cli, f, seq_args):
    t0 = time.time()
    rc, out, err = run(cli, ["plan", "--model", f, "--match-artifact", "--json"] + seq_args)
    wall = time.time() - t0
    if rc != 0:
        return None, "exit %d: %s" % (rc, (err.strip().splitlines() or ["?"])[-1]), wall
    return json.loads(out), "", wall


def check_widths(cli, f, seq_args, j, failures):
    """Every width the file lists evaluates; the width after the largest is refused."""
    name = os.path.basename(f)
    mbs = mbs_of(name, j)
    widths = sorted(int(k) for k in j["nodes"])
    for t in widths + [widths[-1] * 2]:
        rc, out, err = run(cli, ["evaluate", "--model", f, "--match-artifact", "--tp", str(t), "--pp", "1",
                                 "--microbatch", str(mbs), "--json"] + seq_args)
        listed = t in widths
        if listed and rc != 0:
            failures.append("%s: width %d listed but not evaluated: %s" % (name, t, err.strip()))
        if not listed and (rc != 2 or "tensor width %d is not measured" % t not in err):
            failures.append("%s: width %d not listed but not refused (exit %d): %s" % (name, t, rc, err.strip()))


def check_bad_inputs(cli, sample, failures):
    j = json.load(open(sample))
    cases = [("negative size", lambda x: x["nodes"]["1"][3].__setitem__("parameterSize", -1),
              "at nodes.1[3].parameterSize"),
             ("missing bws", lambda x: x.pop("bws"), "at bws"),
             ("mismatched nodes", lambda x: x["nodes"].__setitem__("2", x["nodes"]["1"][:-1]), "at nodes.2"),
             ("bad optimizer", lambda x: x.__setitem__("optimizerAlgorithm", "Lion"), "at optimizerAlgorithm")]
    with tempfile.TemporaryDirectory() as d:
        for label, edit, path in cases:
            x = json.loads(json.dumps(j))
            edit(x)
            f = os.path.join(d, "bad_mbs_1_sl_4096_dev64.json")
            json.dump(x, open(f, "w"))
            rc, out, err = run(cli, ["plan", "--model", f, "--match-artifact"])
            if rc != 2 or (f + ": " + path) not in err:
                failures.append("bad input '%s': exit %d, message %r" % (label, rc, err.strip()))
        # No _sl_ in the name, no seq_length: the message says how to give it.
        f = os.path.join(d, "noseq_64.json")
        json.dump(j, open(f, "w"))
        rc, out, err = run(cli, ["plan", "--model", f, "--match-artifact"])
        if rc != 2 or "--seq" not in err or f not in err:
            failures.append("no sequence length: exit %d, message %r" % (rc, err.strip()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--inputs", default=os.path.join(here, "../../../shared/nest-artifact/inputs"))
    ap.add_argument("--subset", action="store_true")
    ap.add_argument("--table-only", action="store_true", help="print the table, skip the checks' exit status")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.inputs, "*.json")))
    if not files:
        print("no inputs in %s" % a.inputs, file=sys.stderr)
        return 77  # CTest's skip (SKIP_RETURN_CODE): the inputs are not on this machine
    if a.subset:
        files = [f for f in files if os.path.basename(f) in SUBSET]
    failures, rows, ratios, solves = [], [], [], []
    for f in files:
        name = os.path.basename(f)
        j = json.load(open(f))
        seq_args = ["--seq", str(SEQ_BY_DATA[name])] if name in SEQ_BY_DATA else []
        plan, why, wall = our_plan(a.cli, f, seq_args)
        if plan is None:
            failures.append("%s: no plan (%s)" % (name, why))
            rows.append("| %s | — | — | — | %s |" % (name, why))
            continue
        pl, rep = plan["plan"], plan["report"]
        ours = rep["iteration_time_s"]
        tps = sorted({s["tp"] for s in pl["stages"]})
        shape = "%d / %s / %d" % (len(pl["stages"]), ",".join(map(str, tps)), pl["dp"])
        solve = plan["solve_time_s"]
        solves.append((solve, name))
        cells, best = [], None
        for b in ("Manual", "Phaze", "MCMC"):
            rec = j.get("baselines", {}).get(b)
            if not rec:
                cells.append("—")
                continue
            t, text = price_recorded(a.cli, f, seq_args, j, rec)
            cells.append(text)
            if t is not None and (best is None or t < best):
                best = t
        if best is None:
            ratio = "—"
        else:
            ratios.append((ours / best, name))
            ratio = "%.3f" % (ours / best)
            if ours > best * (1 + 1e-9):
                failures.append("%s: ours %.6g s > the best recorded layout's %.6g s" % (name, ours, best))
        group = j.get("ep_degree", 1) * j.get("cp_degree", 1)
        if group > 1:
            shape += " (x%d devices)" % group
        rows.append("| %s | %s | %.2f | %.2f | %s | %s |" % (name.replace(".json", ""), shape, ours, solve,
                                                             " | ".join(cells), ratio))
        check_widths(a.cli, f, seq_args, j, failures)
    check_bad_inputs(a.cli, os.path.join(a.inputs, "ilp_llama2_llama2_mbs_1_sl_4096_dev64.json"), failures)
    print("| input | ours: stages / t / d | ours (s/batch) | solve (s) | artifact Manual | artifact Phaze "
          "| artifact MCMC | ours / best recorded |")
    print("|---|---|---:|---:|---|---|---|---:|")
    for r in rows:
        print(r)
    if ratios:
        worst = max(ratios)
        better = sum(1 for r, _ in ratios if r <= 1 + 1e-9)
        print("\n%d of %d inputs: ours <= the best recorded layout; worst ratio %.4f (%s); best %.4f (%s)" %
              (better, len(ratios), worst[0], worst[1], min(ratios)[0], min(ratios)[1]))
    if solves:
        print("solve time: %.2f s to %.2f s (%s)" % (min(solves)[0], max(solves)[0], max(solves)[1]))
    for msg in failures:
        print("FAIL: " + msg, file=sys.stderr)
    return 0 if a.table_only or not failures else 1


if __name__ == "__main__":
    sys.exit(main())
