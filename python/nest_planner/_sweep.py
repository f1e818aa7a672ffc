"""nest_planner.sweep: one planning job per point of a grid, locally or on a Dask cluster.

A grid is a dict of plan() keywords to lists of values (every combination is a point), or a
list of points (dicts). Each point runs ``plan(**common, **point)``; the points run on a
``concurrent.futures`` pool here (threads: the planner releases the GIL) or, given a
``dask.distributed.Client``, as one task per point on its workers. Finished points go to a
results file, one JSON line per point as it finishes (``{"id", "point", "ok", "result" |
"error"}``); a rerun with the same file skips the points already in it, so an interrupted
sweep resumes. With a ``.parquet`` file name and pyarrow importable the results are also kept
as Parquet (written at the end; JSON lines stay the resumable record).
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import html
import itertools
import json
import os
import threading
import time

from ._cli import InputError, NestError

# The columns of a results file's summary, from the plan's JSON (docs/python.md).
SUMMARY = (("iteration_time_s", ("report", "iteration_time_s")),
           ("samples_per_s", ("report", "throughput_samples_per_s")),
           ("tokens_per_s", ("report", "tokens_per_s")),
           ("mfu", ("report", "mfu")),
           ("peak_memory_bytes", ("report", "peak_memory_bytes")),
           ("devices", ("report", "devices_used")))


def _points(grid) -> list[dict]:
    if isinstance(grid, dict):
        keys = list(grid)
        values = []
        for k in keys:
            v = grid[k]
            if isinstance(v, (list, tuple, range)):
                if not v:
                    raise InputError(f"grid: '{k}' has no values", keyword=k)
                values.append(list(v))
            else:
                values.append([v])
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]
    if isinstance(grid, (list, tuple)):
        for i, p in enumerate(grid):
            if not isinstance(p, dict):
                raise InputError(f"grid[{i}]: expected a dict of plan() keywords, got {type(p).__name__}")
        return [dict(p) for p in grid]
    raise InputError(f"grid: expected a dict of keyword -> values or a list of points, got {type(grid).__name__}")


def point_id(point: dict) -> str:
    """A point's identity in a results file: a hash of its keywords as canonical JSON."""
    try:
        text = json.dumps(point, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"grid point {point!r}: its values must be JSON values ({e})") from None
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _without_device_rows(result: dict) -> dict:
    """plan --json less report.devices (and each top plan's): the per-device memory rows, about
    90 % of a record on 1,024 devices; evaluate(result["plan"]) gives them back."""
    result["report"].pop("devices", None)
    for t in result.get("top") or []:
        t["report"].pop("devices", None)
    return result


def run_point(point: dict, common: dict | None = None, device_rows: bool = False) -> dict:
    """Plans one point; the record a results file keeps (runs on a worker: plain data in, out)."""
    from . import plan  # on a Dask worker the package is imported here
    start = time.perf_counter()
    record = {"id": point_id(point), "point": point}
    try:
        r = plan(**{**(common or {}), **point})
        record.update(ok=True, result=r.to_dict() if device_rows else _without_device_rows(r.to_dict()))
    except (InputError, NestError) as e:
        record.update(ok=False, error=str(e))
    record["elapsed_s"] = time.perf_counter() - start
    return record


def summary(record: dict) -> dict:
    """A flat row: the point's keywords and the plan's headline numbers (None when it failed)."""
    row = {k: (v if isinstance(v, (int, float, str, bool)) or v is None else json.dumps(v))
           for k, v in record["point"].items()}
    row["ok"] = record.get("ok", False)
    for name, (a, b) in SUMMARY:
        row[name] = (record.get("result") or {}).get(a, {}).get(b) if record.get("ok") else None
    row["error"] = record.get("error")
    return row


def read_results(path) -> list[dict]:
    """The records of a JSON-lines results file (a line cut short by a crash is left out)."""
    records = []
    if not os.path.exists(path):
        return records
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(r, dict) and "id" in r and "point" in r:
                records.append(r)
    return records


class SweepResult:
    """Every point's record (this run's and the resumed ones), in grid order."""

    def __init__(self, records: list[dict], path: str | None, ran: int, skipped: int, wall_s: float):
        self.records = records
        self.path = path
        self.ran = ran
        self.skipped = skipped
        self.wall_s = wall_s

    def rows(self) -> list[dict]:
        return [summary(r) for r in self.records]

    def best(self, by: str = "iteration_time_s"):
        ok = [r for r in self.rows() if r["ok"] and r.get(by) is not None]
        return min(ok, key=lambda r: r[by]) if ok else None

    def to_dict(self):
        return {"records": self.records}

    def __len__(self):
        return len(self.records)

    def __repr__(self):
        return f"SweepResult({len(self.records)} points, {self.ran} run, {self.skipped} resumed, {self.wall_s:.1f} s)"

    def _repr_html_(self):
        rows = self.rows()[:50]
        if not rows:
            return "<div>empty sweep</div>"
        cols = list(rows[0])
        out = ["<div><b>Sweep</b> " + html.escape(repr(self)) + "<table><tr>"]
        out += [f"<th>{html.escape(c)}</th>" for c in cols]
        out.append("</tr>")
        for r in rows:
            out.append("<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in cols) + "</tr>")
        return "".join(out) + "</table></div>"


def _write_parquet(path: str, records: list[dict]) -> None:
    import pyarrow  # noqa: F401  (only when importable; Debian 12 has no python3-pyarrow)
    import pyarrow.parquet as pq
    rows = [summary(r) | {"id": r["id"], "point": json.dumps(r["point"], sort_keys=True),
                          "result": json.dumps(r.get("result"))} for r in records]
    pq.write_table(pyarrow.Table.from_pylist(rows), path)


def sweep(grid, *, results=None, client=None, max_workers: int | None = None, progress=None,
          device_rows: bool = False, **common) -> SweepResult:
    """Plans every point of `grid` (see the module's doc); `common` are plan() keywords for all.

    results: a JSON-lines file (".jsonl") the finished points are appended to and read back from
    on a rerun, or a ".parquet" name (needs pyarrow; the lines go to NAME.jsonl beside it).
    client: a dask.distributed.Client: the points run as its tasks. Otherwise max_workers threads.
    progress(done, total) is called as points finish.
    device_rows: keep each report's per-device memory rows ("devices"); left out by default
    (a record is then about a tenth of the size; evaluate() on the stored plan gives them).
    """
    start = time.perf_counter()
    points = _points(grid)
    for key in ("progress", "out"):
        if key in common:
            raise InputError(f"unknown keyword '{key}' for sweep(): each point's plan is in the results", keyword=key)
    ids = [point_id(p) for p in points]
    parquet = None
    lines = None
    if results is not None:
        results = os.fspath(results)
        if results.endswith(".parquet"):
            try:
                import pyarrow.parquet  # noqa: F401
            except ImportError:
                raise InputError(f"{results}: Parquet needs pyarrow, which is not installed; "
                                 "name a .jsonl file instead", keyword="results") from None
            parquet, lines = results, results[:-len(".parquet")] + ".jsonl"
        else:
            lines = results
    done = {r["id"]: r for r in read_results(lines)} if lines else {}
    todo = [(i, p) for i, (p, pid) in enumerate(zip(points, ids)) if pid not in done]
    # A point listed twice in the grid runs once.
    seen, unique = set(), []
    for i, p in todo:
        if ids[i] not in seen:
            seen.add(ids[i])
            unique.append(p)
    total, finished = len(points), len(points) - len(todo)
    lock = threading.Lock()
    out = open(lines, "a", encoding="utf-8") if lines else None

    def record(r: dict):
        nonlocal finished
        with lock:
            done[r["id"]] = r
            finished += 1
            if out:
                out.write(json.dumps(r, sort_keys=True) + "\n")
                out.flush()
        if progress:
            progress(finished, total)

    try:
        if client is not None:
            from dask.distributed import as_completed
            futures = [client.submit(run_point, p, common, device_rows, pure=False) for p in unique]
            try:
                for f in as_completed(futures):
                    record(f.result())
            except BaseException:
                client.cancel(futures)
                raise
        elif unique:
            workers = max_workers or min(len(unique), os.cpu_count() or 1)
            with concurrent.futures.ThreadPoolExecutor(workers) as pool:
                futures = [pool.submit(run_point, p, common, device_rows) for p in unique]
                try:
                    for f in concurrent.futures.as_completed(futures):
                        record(f.result())
                except BaseException:
                    for f in futures:
                        f.cancel()
                    raise
    finally:
        if out:
            out.close()
    records = [done[pid] for pid in dict.fromkeys(ids)]
    if parquet:
        _write_parquet(parquet, records)
    return SweepResult(records, lines, len(unique), total - len(todo), time.perf_counter() - start)
