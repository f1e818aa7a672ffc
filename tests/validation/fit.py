#!/usr/bin/env python3
"""Fit the cost model's free parameters on the CALIBRATION rows of runs.json.

For each group of calibration rows (by default one group per GPU generation, i.e. per device
class), search every free parameter the CLI exposes (default: --efficiency, the large-GEMM
efficiency eta_gemm that overrides the device class's default; docs/cost-model.md) for the value that
minimises the group's mean |error| of the predicted step time: a grid over [lo, hi], then a
golden-section search in the bracket around the best grid point; with several parameters,
coordinate descent (two passes). Prints the best values and the calibration error per row.

It never reads validation, held-out, validation2 or reference rows: load_runs(..., "calibration")
filters them out and every row is checked again before use. Standard library only.
"""
import argparse
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate  # noqa: E402  (same folder)

GOLDEN = (math.sqrt(5) - 1) / 2
INFEASIBLE_PENALTY = 1.0  # added to the objective per infeasible or failed row


def parse_param(text):
    """NAME or NAME:LO:HI (a CLI option without the leading dashes)."""
    parts = text.split(":")
    if len(parts) == 1:
        return parts[0], 0.30, 0.95
    if len(parts) == 3:
        lo, hi = float(parts[1]), float(parts[2])
        if not lo < hi:
            raise argparse.ArgumentTypeError(f"--param {text}: LO must be below HI")
        return parts[0], lo, hi
    raise argparse.ArgumentTypeError(f"--param {text}: expected NAME or NAME:LO:HI")


def cli_accepts(cli_path, option, value):
    """Whether `nest-cli evaluate` accepts --option value (probed on a tiny preset run)."""
    out = subprocess.run([cli_path, "evaluate", "--cluster", "a100-512", "--model", "llama2-7b", "--tp", "8",
                          "--microbatch", "1", "--batch", "8", "--seq", "512", "--json", f"--{option}", str(value)],
                         capture_output=True, text=True)
    return out.returncode == 0


def group_key(row, group_by):
    gen = validate.generation(row["device"])
    if group_by == "device":
        return gen
    if group_by == "framework":
        return row["framework"]
    return f"{gen}/{row['framework']}"


class Objective:
    """Mean |error| (+ a penalty per infeasible row) of one group at given parameter values."""

    def __init__(self, cli_path, base_extra, rows, params, jobs):
        self.cli_path, self.base_extra, self.rows, self.params, self.jobs = cli_path, base_extra, rows, params, jobs
        self.cache = {}
        self.calls = 0

    def results(self, values):
        key = tuple(round(v, 6) for v in values)
        if key not in self.cache:
            extra = self.base_extra + " " + " ".join(f"--{p[0]} {v:.6f}" for p, v in zip(self.params, key))
            cli = validate.Cli(self.cli_path, extra.strip())
            cli.has_framework, cli.has_selective = self.caps
            cli.presets = self.presets
            self.cache[key] = validate.run_rows(cli, self.rows, self.jobs)
            self.calls += 1
        return self.cache[key]

    def parts(self, values):
        """(mean |error| over the rows that ran, number of infeasible or failed rows)."""
        res = self.results(values)
        errs = [abs(r["error"]) for r in res if validate.ok(r)]
        bad = sum(1 for r in res if not validate.ok(r) or not r["feasible"])
        return (sum(errs) / len(errs) if errs else 1.0), bad

    def __call__(self, values):
        mean, bad = self.parts(values)
        return mean + INFEASIBLE_PENALTY * bad / max(1, len(self.rows))


def minimise_1d(f, lo, hi, grid, tol):
    """Grid over [lo, hi], then golden-section search in the bracket of the best grid point."""
    xs = [lo + (hi - lo) * i / (grid - 1) for i in range(grid)]
    fs = [f(x) for x in xs]
    i = min(range(grid), key=lambda k: fs[k])
    a, b = xs[max(0, i - 1)], xs[min(grid - 1, i + 1)]
    c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
    fc, fd = f(c), f(d)
    while b - a > tol:
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - GOLDEN * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + GOLDEN * (b - a)
            fd = f(d)
    best = min([(fs[i], xs[i]), (fc, c), (fd, d)])
    return best[1], best[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=validate.DEFAULT_CLI, help="path of nest-cli (default: %(default)s)")
    ap.add_argument("--runs", default=validate.DEFAULT_RUNS, help="the data set (default: runs.json)")
    ap.add_argument("--param", action="append", type=parse_param, metavar="NAME[:LO:HI]",
                    help="a free parameter, as the nest-cli option without dashes (repeatable; default "
                         "efficiency:0.40:0.95)")
    ap.add_argument("--group-by", default="device", choices=["device", "framework", "device+framework"],
                    help="fit one value per GPU generation (default), per framework profile, or per both")
    ap.add_argument("--grid", type=int, default=14, help="grid points per parameter (default: %(default)s)")
    ap.add_argument("--tol", type=float, default=0.002, help="golden-section tolerance (default: %(default)s)")
    ap.add_argument("--extra-args", default="", help="arguments appended to every nest-cli call")
    ap.add_argument("--jobs", type=int, default=0, help="parallel CLI calls (default: min(8, CPUs))")
    args = ap.parse_args(argv)

    cli_path = os.path.abspath(args.cli)
    probe = validate.Cli(cli_path, args.extra_args)
    probe.probe()
    params = args.param
    if not params:
        params = [("efficiency", 0.40, 0.95)]
    for name, _, _ in params:
        if not cli_accepts(cli_path, name, 0.7):
            print(f"fit.py: nest-cli rejects --{name}", file=sys.stderr)
            return 2

    rows = validate.load_runs(args.runs, "calibration")
    leaked = [r["id"] for r in rows if r["set"] != "calibration"]
    if leaked:  # never fit on validation, held-out, validation2 or reference rows
        raise SystemExit(f"fit.py: non-calibration (validation, holdout, validation2 or reference) rows reached the fit: {leaked}")
    groups = {}
    for r in rows:
        groups.setdefault(group_key(r, args.group_by), []).append(r)

    print(f"Fitting {', '.join(f'--{p[0]} in [{p[1]}, {p[2]}]' for p in params)} on {len(rows)} calibration rows, "
          f"one value per {args.group_by}")
    for fb in probe.fallbacks:
        print(f"note: {fb}")
    summary = []
    for key in sorted(groups):
        grows = groups[key]
        obj = Objective(cli_path, args.extra_args, grows, params, args.jobs or None)
        obj.caps = (probe.has_framework, probe.has_selective)
        obj.presets = probe.presets
        values = [(lo + hi) / 2 for _, lo, hi in params]
        passes = 1 if len(params) == 1 else 2
        best = obj(values)
        for _ in range(passes):
            for i, (_, lo, hi) in enumerate(params):
                def f(x, i=i):
                    v = list(values)
                    v[i] = x
                    return obj(v)
                values[i], best = minimise_1d(f, lo, hi, args.grid, args.tol)
        res = obj.results(values)
        mean, bad = obj.parts(values)
        print(f"\n[{key}] {len(grows)} rows, {obj.calls} evaluations")
        print("  best: " + ", ".join(f"--{p[0]} {v:.4f}" for p, v in zip(params, values))
              + f"   mean |error| {100 * mean:.2f} %, {bad} infeasible or failed")
        for r in res:
            err = f"{100 * r['error']:+.1f} %" if validate.ok(r) else "failed"
            flag = "" if validate.ok(r) and r["feasible"] else "  (infeasible or failed)"
            print(f"    {r['id']:34} {r['layout'][:48]:48} {err:>9}{flag}")
        summary.append((key, values, mean, bad, len(grows)))
    print("\nSummary (calibration mean |error| at the fitted values):")
    for key, values, mean, bad, n in summary:
        print(f"  {key:24} " + " ".join(f"--{p[0]} {v:.4f}" for p, v in zip(params, values))
              + f"   {100 * mean:.2f} % over {n} rows, {bad} infeasible or failed")
    if args.group_by == "device":
        print("\nTo validate with these values (validate.py --class-args, one per device class):")
        print("  python3 validate.py " + " ".join(
            "--class-args '" + key + "=" + " ".join(f"--{p[0]} {v:.4f}" for p, v in zip(params, values)) + "'"
            for key, values, _, _, _ in summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
