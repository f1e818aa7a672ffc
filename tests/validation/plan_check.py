#!/usr/bin/env python3
"""Check that NEST's own plan is at least as fast, under the model, as every published layout.

For each row of runs.json (issue 10, item 4): write the row's cluster and model as validate.py
does, evaluate the published layout with `nest-cli evaluate` (validate.py's command, the same
cost flags: --framework, --extra-args, --class-args), then run `nest-cli plan` on the same
cluster and model, at the published global batch and sequence length, with candidate lists that
contain the published layout:

  --microbatch 1,2,MBS  --cp 1,2,CP (the divisors of the sequence)  --vpp 1,2,VPP
  --recompute none,selective,full

and the default tensor (1,2,4,8) and expert (1,2,4,8) widths, ZeRO 0-3, both replica layouts
and no stage limit. The plan space contains the published layout (tests/core/
test_planner_search_space.cpp: interleaved candidates are buildUniformPlan's plans; 1F1B plans
are DP cuts), so NEST's iteration time must be <= the published one's. A row fails when NEST
is slower (or finds nothing, or its value does not match the evaluator); a published layout
the model calls infeasible is reported and not compared.

Prints a table; exit status 0, 1 when a row fails, 2 on usage errors. Standard library only;
the whole data set takes well under a minute on two cores (each plan < 2 s).
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
import validate  # noqa: E402  (the row conversion, the CLI probe and the evaluate command)

# Relative slack for "NEST <= published": both values come from the same evaluator; the
# published plan, when NEST picks it, gives the same double.
REL_TOL = 1e-9


def candidate_lists(row):
    """The plan command's candidate lists for a row: each contains the published value."""
    lay = row["layout"]
    seq = lay["seq"]
    mbs = sorted({1, 2, lay["mbs"]})
    cps = sorted({c for c in (1, 2, lay.get("cp", 1)) if seq % c == 0})
    vpps = sorted({1, 2, lay.get("vpp", 1)})
    return {"--microbatch": mbs, "--cp": cps, "--vpp": vpps, "--recompute": ["none", "selective", "full"]}


def plan_command(cli, row, cluster_file, model_file):
    lay = row["layout"]
    cmd = [cli.path, "plan", "--cluster", cluster_file, "--model", model_file,
           "--batch", str(lay["gbs"]), "--seq", str(lay["seq"]), "--json"]
    lists = candidate_lists(row)
    if not cli.has_selective:
        lists["--recompute"] = ["none", "full"]
    for flag, values in lists.items():
        cmd += [flag, ",".join(str(v) for v in values)]
    if cli.has_framework:
        cmd += ["--framework", row["framework"]]
    cmd += ["--stack", cli.stack or validate.row_stack(row)]
    if row["layout"].get("optimizer_dtype"):  # the published config's, as validate.py's evaluate
        cmd += ["--optimizer-dtype", row["layout"]["optimizer_dtype"]]
    if row["layout"].get("grad_accum_dtype"):  # likewise the gradient accumulation dtype
        cmd += ["--grad-accum-dtype", row["layout"]["grad_accum_dtype"]]
    # The published precision (and ETP) as one-value lists, the flags validate.py's evaluate passes.
    cmd += validate.layout_extra_args(row["layout"])
    return cmd + cli.extra + cli.class_args.get(validate.generation(row["device"]), [])


def plan_text(plan):
    """Short layout text of a plan JSON: schedule, depth, widths, dp, micro-batch, options."""
    stages = plan["stages"]
    v = plan.get("virtual_stages", 1)
    pp = len(stages) // v if v > 1 else len(stages)
    tps = sorted({s["tp"] for s in stages})
    cps = sorted({s["cp"] for s in stages})
    rcs = sorted({s["recompute"] for s in stages})
    zeros = sorted({s["zero"] for s in stages})

    def span(values):
        return f"{values[0]}" if len(values) == 1 else f"{values[0]}-{values[-1]}"

    parts = [f"tp{span(tps)}", f"pp{pp}"]
    if v > 1:
        parts.append(f"v{v}")
    if cps != [1]:
        parts.append(f"cp{span(cps)}")
    parts += [f"dp{plan['dp']}", f"mbs{plan['micro_batch']}", f"z{span(zeros)}",
              "rc-" + "/".join({"none": "", "selective": "sel", "full": "full"}[r] or "none" for r in rcs)]
    return " ".join(parts)


def check_row(cli, row, tmp_root):
    res = {"id": row["id"], "set": row["set"], "gpus": row["gpus"],
           "published_layout": validate.layout_text(row["layout"]),
           "lists": {k: v for k, v in candidate_lists(row).items()}}
    try:
        cluster_file, model_file = validate.row_files(cli, row, tmp_root)
        ev = subprocess.run(cli.command(row, cluster_file, model_file), capture_output=True, text=True, timeout=300)
        if ev.returncode != 0:
            res["status"] = "CLI ERROR"
            res["detail"] = "evaluate: " + (ev.stderr.strip() or f"exit {ev.returncode}")
            return res
        published = json.loads(ev.stdout)
        res["published"] = float(published["iteration_time_s"])
        res["published_feasible"] = bool(published["feasible"])
        pl = subprocess.run(plan_command(cli, row, cluster_file, model_file), capture_output=True, text=True,
                            timeout=300)
        if pl.returncode != 0:
            res["status"] = "NO PLAN" if pl.returncode == 2 else "CLI ERROR"
            res["detail"] = "plan: " + (pl.stderr.strip() or f"exit {pl.returncode}")
            return res
        planned = json.loads(pl.stdout)
        res["nest"] = float(planned["report"]["iteration_time_s"])
        res["nest_layout"] = plan_text(planned["plan"])
        res["solve_s"] = float(planned["solve_time_s"])
        res["verified"] = bool(planned["verified"])
        if not res["published_feasible"]:
            res["status"] = "published infeasible"
            res["detail"] = "; ".join(published.get("reasons", []))
        elif not res["verified"]:
            res["status"] = "MISMATCH"
        elif res["nest"] <= res["published"] * (1 + REL_TOL):
            res["status"] = "ok"
        else:
            res["status"] = "NEST SLOWER"
    except (OSError, ValueError, RuntimeError, KeyError, subprocess.TimeoutExpired) as e:
        res["status"] = "CLI ERROR"
        res["detail"] = str(e)
    return res


def failed(res):
    return res["status"] not in ("ok", "published infeasible")


def print_table(results):
    hdr = (f"{'id':34} {'GPUs':>5}  {'published layout':46} {'published':>9} {'NEST':>9} {'speed-up':>8}  "
           f"{'NEST layout':44} {'solve':>6}  status")
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        pub = f"{r['published']:.3f}" if "published" in r else "-"
        nest = f"{r['nest']:.3f}" if "nest" in r else "-"
        speed = f"{r['published'] / r['nest']:.3f}x" if "nest" in r and "published" in r and r["nest"] > 0 else "-"
        solve = f"{r['solve_s']:.2f}" if "solve_s" in r else "-"
        print(f"{r['id']:34} {r['gpus']:5d}  {r['published_layout'][:46]:46} {pub:>9} {nest:>9} {speed:>8}  "
              f"{r.get('nest_layout', '')[:44]:44} {solve:>6}  {r['status']}")
        if r.get("detail"):
            print(f"    {r['detail'][:300]}")
    ok = [r for r in results if r["status"] == "ok"]
    speedups = [r["published"] / r["nest"] for r in ok]
    print()
    print(f"{len(ok)} of {len(results)} rows: NEST's plan at least as fast as the published layout"
          + (f" (speed-up under the model {min(speedups):.3f}x to {max(speedups):.3f}x)" if speedups else ""))
    for status in ("published infeasible", "NEST SLOWER", "NO PLAN", "MISMATCH", "CLI ERROR"):
        n = sum(1 for r in results if r["status"] == status)
        if n:
            print(f"{n} rows: {status}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=validate.DEFAULT_CLI, help="path of nest-cli (default: %(default)s)")
    ap.add_argument("--runs", default=validate.DEFAULT_RUNS, help="the data set (default: runs.json here)")
    ap.add_argument("--set", default="all", choices=list(validate.SETS) + ["all"],
                    help="which rows (default: all)")
    ap.add_argument("--rows", default="", help="comma-separated row ids (default: every row of the set)")
    ap.add_argument("--extra-args", default="", help="arguments appended to every nest-cli call")
    ap.add_argument("--class-args", action="append", default=[], metavar="GEN=ARGS",
                    help="arguments appended to one GPU generation's calls (as validate.py)")
    ap.add_argument("--json", metavar="FILE", help="write the per-row results as JSON")
    ap.add_argument("--jobs", type=int, default=0, help="parallel rows (default: min(4, CPUs))")
    args = ap.parse_args(argv)

    cli = validate.Cli(os.path.abspath(args.cli), args.extra_args, validate.parse_class_args(ap, args.class_args))
    cli.probe()
    rows = validate.load_runs(args.runs, args.set)
    if args.rows:
        wanted = args.rows.split(",")
        unknown = [w for w in wanted if w not in {r["id"] for r in rows}]
        if unknown:
            validate.usage_exit(f"unknown row id(s): {', '.join(unknown)}")
        rows = [r for r in rows if r["id"] in wanted]
    jobs = args.jobs or min(4, os.cpu_count() or 2)
    with tempfile.TemporaryDirectory(prefix="nest-plancheck-") as tmp:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(lambda r: check_row(cli, r, tmp), rows))

    print(f"NEST's plan vs the published layout, under the model ({len(rows)} rows)")
    for fb in cli.fallbacks:
        print(f"note: {fb}")
    print()
    print_table(results)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"fallbacks": cli.fallbacks, "results": results}, f, indent=1)
    bad = [r for r in results if failed(r)]
    if bad:
        print("CHECK FAILED: " + ", ".join(f"{r['id']} ({r['status']})" for r in bad))
        return 1
    print("CHECK PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
