#!/usr/bin/env python3
"""The error band every reported iteration time carries (issue 50, point 3), from the
validation residuals.

For every published run of runs.json outside the "reference" set that nest-cli evaluates and
calls feasible, the residual is r = published / predicted step time (r > 1: the run was slower
than predicted). The band of a time t is [low t, high t], low and high the split-conformal
bounds of a central 80 % band of the residuals of the row's cell:

  cell       (framework, stack profile, scale bucket); scale buckets by GPU count: <=64,
             65-512, >512; stack profile: the row's "stack_profile" ("tuned" when absent).
  rule       with n residuals sorted r_(1) <= ... <= r_(n), k = ceil(0.95 (n + 1)):
             high = r_(k), low = r_(n + 1 - k). For a new run exchangeable with the cell's rows,
             P(r > high) <= 1 - k / (n + 1) <= 5 % and likewise below low: a nominal 90 % band.
             The rows come from several sources with offsets of their own, so a new source's
             runs are not exchangeable with them; leave-one-source-out, the nominal 80 % band
             (k = ceil(0.9 (n + 1))) held 71 % and this one holds the 80 % the band must. It
             needs k <= n, i.e. n >= 19 (CROSS_SOURCE_MIN_ROWS).
  fallback   a cell with fewer than 19 rows takes the band of (framework, stack) at every scale,
             then of (stack), then of all rows; the basis says which.

After a calibration (core/studies/Calibration.cpp, modelErrorBand) the band narrows: the
calibration removes a stack's offset, not its run-to-run scatter. That scatter is measured
here too ("within source"): each row's r divided by the median r of the other rows of its
source on the same device type (source_short and device, as a calibration is per device type;
groups with at least 2 rows), the same central 80 % rule over all those
ratios. A calibration with fewer runs than MIN_ROWS, or an exactly determined one, is never
narrower than that.

Usage (standard library only):
  band.py --self-test   the quantile rule against hand-computed bounds
  band.py --write   [--cli build/app/nest-cli | --results FILE]   regenerate the C++ table
  band.py --check   [--cli ... | --results ...]   exit 1 when the committed table differs
  band.py --coverage [--cli ... | --results ...] [--markdown FILE]
        held-out coverage: leave-one-source-out cross-validation (the band built without a
        source's rows, applied to that source's rows); exit 1 when overall coverage < 80 %
        with --coverage-check.
--results FILE reads `validate.py --set all --json FILE` output instead of running nest-cli.
Exit status: 0, 1 (--check / --coverage-check failed), 2 (usage error).
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
TABLE = os.path.join(ROOT, "core", "cost", "ModelErrorBandTable.inc")
sys.path.insert(0, HERE)
import validate  # noqa: E402  (same folder)

MIN_ROWS = 9         # the smallest n with ceil(0.9 (n + 1)) <= n
# The uncalibrated table's cells leave 5 % out on each side (a nominal 90 % band): their rows
# come from several sources, each with its own offset, so a new run is not exchangeable with
# them, and leave-one-source-out shows a nominal 80 % band holding only 71 % of a held-out
# source's rows (docs/validation.md). A calibration's own runs share one stack and cluster and
# keep the 80 % rule (core/studies/Calibration.cpp).
CROSS_SOURCE_TAIL = 5
CROSS_SOURCE_MIN_ROWS = 19   # the smallest n with ceil(0.95 (n + 1)) <= n
TARGET_COVERAGE = 0.80
COVERAGE_BEGIN = "<!-- band-coverage -->"
COVERAGE_END = "<!-- /band-coverage -->"
BUCKETS = ("<=64", "65-512", ">512")


def scale_bucket(gpus):
    """The scale bucket of a GPU count (core/cost/ModelErrorBand.cpp, scaleBucket)."""
    return "<=64" if gpus <= 64 else ("65-512" if gpus <= 512 else ">512")


def conformal(residuals, tail=10):
    """(low, high) of the central split-conformal band leaving `tail` % out on each side (10: the
    central 80 % band, k = ceil(0.9 (n + 1)); 5: the central 90 %, k = ceil(0.95 (n + 1))), None
    when k > n (below MIN_ROWS rows for 10, CROSS_SOURCE_MIN_ROWS for 5)."""
    r = sorted(residuals)
    n = len(r)
    k = ((100 - tail) * (n + 1) + 99) // 100   # ceil((1 - tail/100)(n + 1)) in integers
    if k > n:
        return None
    return r[n - k], r[k - 1]   # r_(n+1-k), r_(k) with 1-based order statistics


# ----------------------------------------------------------------------------- rows
def usable_rows(results, runs):
    """[{id, source, set, framework, stack, bucket, r}] of the rows the band stands on."""
    stack_of = {row["id"]: validate.row_stack(row) for row in runs}
    rows = []
    for res in results:
        if res.get("set") == "reference" or "error" not in res or not res.get("feasible"):
            continue
        if not (res.get("predicted", 0) > 0 and res.get("published", 0) > 0):
            continue
        rows.append({"id": res["id"], "source": res["source"], "set": res["set"], "framework": res["framework"],
                     "stack": stack_of.get(res["id"], "tuned"), "gpus": res["gpus"], "device": res["device"],
                     "bucket": scale_bucket(res["gpus"]), "r": res["published"] / res["predicted"]})
    return rows


def build_table(rows):
    """{(framework, stack, bucket): (n, low, high)} for every cell, at every level of the
    fallback ("" = any), that has at least CROSS_SOURCE_MIN_ROWS rows."""
    groups = {}
    for row in rows:
        for key in ((row["framework"], row["stack"], row["bucket"]), (row["framework"], row["stack"], ""),
                    ("", row["stack"], ""), ("", "", "")):
            groups.setdefault(key, []).append(row["r"])
    table = {}
    for key, rs in groups.items():
        band = conformal(rs, CROSS_SOURCE_TAIL)
        if band:
            table[key] = (len(rs), band[0], band[1])
    return table


def lookup(table, framework, stack, bucket):
    """(key, (n, low, high)) of the first cell of the fallback that the table has."""
    for key in ((framework, stack, bucket), (framework, stack, ""), ("", stack, ""), ("", "", "")):
        if key in table:
            return key, table[key]
    return None, None


def within_source(rows):
    """(n, low, high): the band of r / median(r of the other rows of its source on its device
    type), the rows a calibration of that device type would be fitted to."""
    by_source = {}
    for row in rows:
        by_source.setdefault((row["source"], row["device"]), []).append(row["r"])
    ratios = []
    for rs in by_source.values():
        if len(rs) < 2:
            continue
        for i, r in enumerate(rs):
            ratios.append(r / statistics.median(rs[:i] + rs[i + 1:]))
    band = conformal(ratios)
    return (len(ratios),) + band if band else None


# ----------------------------------------------------------------------------- the C++ table
def table_text(table, within):
    order = {b: i for i, b in enumerate(BUCKETS)}

    def sort_key(item):
        (fw, st, bu), _ = item
        return (fw == "", fw, st == "", st, bu == "", order.get(bu, 9))
    lines = [
        "// Generated by tests/validation/band.py from the residuals published / predicted of the",
        "// non-reference rows of tests/validation/runs.json; do not edit. Regenerate with",
        "//   python3 tests/validation/band.py --write --cli build/app/nest-cli",
        "// (`band.py --check`, CTest validation_error_band, fails when it differs from the rows).",
        "// Included by core/cost/ModelErrorBand.cpp. Cells: framework, stack profile, scale bucket",
        "// (\"\" = any: the fallbacks), rows, low, high; a time t lies in [low t, high t].",
        "constexpr BandCell kBandCells[] = {",
    ]
    for (fw, st, bu), (n, lo, hi) in sorted(table.items(), key=sort_key):
        lines.append(f'    {{"{fw}", "{st}", "{bu}", {n}, {lo:.3f}, {hi:.3f}}},')
    lines.append("};")
    if within:
        n, lo, hi = within
        lines.append("// The run-to-run scatter within one source and device type: r / median(r of its other rows).")
        lines.append(f"constexpr BandCell kWithinSource = {{\"\", \"\", \"\", {n}, {lo:.3f}, {hi:.3f}}};")
    else:
        lines.append("constexpr BandCell kWithinSource = {\"\", \"\", \"\", 0, 1.000, 1.000};")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- coverage
def coverage(rows):
    """Leave-one-source-out: [(row, key, low, high, covered)] for every row."""
    out = []
    for source in sorted({r["source"] for r in rows}):
        train = [r for r in rows if r["source"] != source]
        table = build_table(train)
        for row in rows:
            if row["source"] != source:
                continue
            key, cell = lookup(table, row["framework"], row["stack"], row["bucket"])
            if cell is None:
                out.append((row, None, float("nan"), float("nan"), False))
                continue
            _, lo, hi = cell
            lo, hi = round(lo, 3), round(hi, 3)   # as the C++ table holds them
            out.append((row, key, lo, hi, lo <= row["r"] <= hi))
    return out


def coverage_groups(results):
    groups = {}
    for row, _, _, _, covered in results:
        for name, value in (("overall", "all rows"), ("set", row["set"]), ("framework", row["framework"]),
                            ("stack", row["stack"]), ("scale", row["bucket"])):
            groups.setdefault((name, value), []).append(covered)
    return groups


def coverage_markdown(results, table, within):
    groups = coverage_groups(results)
    rank = {"overall": 0, "set": 1, "framework": 2, "stack": 3, "scale": 4}
    order = {b: i for i, b in enumerate(BUCKETS)}
    lines = ["Held-out coverage (leave-one-source-out: each source's rows against the band built without "
             "them; target >= 80 %):", "",
             "| group | rows | covered | coverage |", "|---|---|---|---|"]
    for (name, value), cs in sorted(groups.items(), key=lambda kv: (rank[kv[0][0]], order.get(kv[0][1], 0),
                                                                    kv[0][1])):
        label = value if name == "overall" else f"{name} {value}"
        lines.append(f"| {label} | {len(cs)} | {sum(cs)} | {100 * sum(cs) / len(cs):.0f} % |")
    missed = [(row, lo, hi) for row, _, lo, hi, covered in results if not covered]
    if missed:
        lines += ["", "Rows outside their held-out band (r = published / predicted):", ""]
        for row, lo, hi in missed:
            lines.append(f"- {row['id']} ({row['source']}, {row['framework']} {row['stack']}, {row['gpus']} GPUs): "
                         f"r {row['r']:.3f}, band {lo:.3f}-{hi:.3f}")
    lines += ["", "The band on all rows (core/cost/ModelErrorBandTable.inc; low and high are the bounds of "
              "published / predicted):", "",
              "| framework | stack | GPUs | rows | low | high | time 10.0 s reads |", "|---|---|---|---|---|---|---|"]
    for (fw, st, bu), (n, lo, hi) in sorted(table.items(), key=lambda kv: (kv[0][0] == "", kv[0][0], kv[0][1] == "",
                                                                          kv[0][1], kv[0][2] == "",
                                                                          order.get(kv[0][2], 9))):
        lines.append(f"| {fw or 'any'} | {st or 'any'} | {bu or 'any'} | {n} | {lo:.3f} | {hi:.3f} | "
                     f"{10 * lo:.1f}-{10 * hi:.1f} s |")
    if within:
        lines += ["", f"Within one source (the floor of a calibrated band): {within[0]} ratios, "
                      f"{within[1]:.3f}-{within[2]:.3f}."]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- self-test
def self_test():
    """Messages for every way conformal() misses hand-computed bounds (empty = pass)."""
    fails = []
    # 19 residuals: k = ceil(0.9 x 20) = 18: the 18th smallest (1.30) and the 2nd (0.80).
    r19 = [1.60, 0.70, 1.02, 0.92, 1.30, 0.85, 1.00, 1.20, 0.96, 1.04,
           0.80, 1.10, 0.94, 1.06, 0.90, 1.15, 0.98, 1.08, 1.01]
    # 29 residuals 1.00 .. 1.28: k = ceil(0.9 x 30) = 27 exactly: 1.26 and the 3rd, 1.02.
    r29 = [1.0 + 0.01 * i for i in range(29)]
    cases = [(r19, (0.80, 1.30)), (r29, (1.02, 1.26)),
             ([1.1, 0.9, 1.0, 1.05, 0.95, 1.2, 0.85, 1.02, 0.98], (0.85, 1.2)),   # 9: min and max
             ([1.1, 0.9, 1.0, 1.05, 0.95, 1.2, 0.85, 1.02], None)]                # 8: k = 9 > 8

    for rs, want in cases:
        got = conformal(rs)
        if (got is None) != (want is None) or (got and any(abs(g - w) > 1e-12 for g, w in zip(got, want))):
            fails.append(f"conformal() of {len(rs)} residuals gave {got}, by hand {want}")
    # The cross-source level (5 % out on each side): k = ceil(0.95 (n + 1)).
    r39 = [1.0 + 0.01 * i for i in range(39)]
    cross = [(r19, (0.70, 1.60)),    # 19: k = ceil(0.95 x 20) = 19: the extremes
             (r29, (1.00, 1.28)),    # 29: k = ceil(28.5) = 29: the extremes
             (r39, (1.01, 1.37)),    # 39: k = ceil(0.95 x 40) = 38: the 38th (1.37) and the 2nd (1.01)
             (r19[:18], None)]       # 18: k = ceil(18.05) = 19 > 18
    for rs, want in cross:
        got = conformal(rs, CROSS_SOURCE_TAIL)
        if (got is None) != (want is None) or (got and any(abs(g - w) > 1e-12 for g, w in zip(got, want))):
            fails.append(f"conformal(tail 5) of {len(rs)} residuals gave {got}, by hand {want}")
    return fails


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=validate.DEFAULT_CLI, help="path of nest-cli (default: %(default)s)")
    ap.add_argument("--runs", default=validate.DEFAULT_RUNS, help="runs.json (default: next to this script)")
    ap.add_argument("--results", metavar="FILE", help="`validate.py --set all --json FILE` output (default: "
                                                      "run nest-cli on every row)")
    ap.add_argument("--table", default=TABLE, help="the generated C++ table (default: %(default)s)")
    ap.add_argument("--write", action="store_true", help="write the table")
    ap.add_argument("--check", action="store_true", help="exit 1 when the table differs from what the rows give")
    ap.add_argument("--coverage", action="store_true", help="print the leave-one-source-out coverage")
    ap.add_argument("--coverage-check", action="store_true", help="with --coverage: exit 1 below 80 %%")
    ap.add_argument("--markdown", metavar="FILE", help="with --coverage: write the coverage tables into FILE "
                                                      f"between {COVERAGE_BEGIN} markers")
    ap.add_argument("--self-test", action="store_true", help="check the quantile rule on hand-made residuals")
    ap.add_argument("--jobs", type=int, default=0, help="parallel CLI calls")
    args = ap.parse_args(argv)
    if not (args.write or args.check or args.coverage or args.coverage_check or args.self_test):
        ap.error("say --write, --check, --coverage or --self-test")
    if args.self_test:
        fails = self_test()
        for msg in fails:
            print(f"SELF-TEST FAILED: {msg}")
        if fails:
            return 1
        print("SELF-TEST PASSED: the quantile rule gives the hand-computed bounds")
        if not (args.write or args.check or args.coverage or args.coverage_check):
            return 0

    runs = validate.load_runs(args.runs, "all")
    if args.results:
        try:
            with open(args.results, encoding="utf-8") as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError) as e:
            print(f"band.py: {args.results}: {e}", file=sys.stderr)
            return 2
    else:
        cli = validate.Cli(os.path.abspath(args.cli))
        cli.probe()
        results = validate.run_rows(cli, [r for r in runs if r["set"] != "reference"], args.jobs or None)
    rows = usable_rows(results, runs)
    if not rows:
        print("band.py: no usable rows (did nest-cli run?)", file=sys.stderr)
        return 2
    table = build_table(rows)
    within = within_source(rows)
    text = table_text(table, within)
    status = 0
    if args.write:
        with open(args.table, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.table}: {len(table)} cells from {len(rows)} rows")
    if args.check:
        try:
            with open(args.table, encoding="utf-8") as f:
                committed = f.read()
        except OSError as e:
            committed = f"({e})"
        if committed != text:
            print(f"CHECK FAILED: {args.table} differs from what the {len(rows)} rows give; run "
                  "`python3 tests/validation/band.py --write --cli build/app/nest-cli`. Expected:")
            print(text)
            status = 1
        else:
            print(f"CHECK PASSED: {args.table} follows the {len(rows)} rows")
    if args.coverage or args.coverage_check:
        res = coverage(rows)
        md = coverage_markdown(res, table, within)
        print(md)
        if args.markdown:
            validate.write_markdown(args.markdown, md, COVERAGE_BEGIN, COVERAGE_END)
        covered = sum(1 for *_, c in res if c) / len(res)
        if args.coverage_check and covered < TARGET_COVERAGE:
            print(f"COVERAGE CHECK FAILED: {100 * covered:.1f} % < {100 * TARGET_COVERAGE:.0f} %")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
