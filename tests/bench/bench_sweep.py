#!/usr/bin/env python3
"""The 1,000-point sweep of docs/python.md ("1,000 points on 1 and 2 workers"): 5 models x
5 clusters x 5 global batches x 2 optimizer dtypes x 4 framework profiles, planned by
nest_planner.sweep on a Dask LocalCluster of 1 and of 2 worker processes (one thread each),
and on 1 and 2 local threads. Prints the wall time of each; never asserted on (a benchmark).

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_sweep.py [--only dask|threads]
"""
import argparse
import os
import tempfile
import time

import nest_planner as nest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GRID = {
    # presets, and one model file (as a path: every worker reads it)
    "model": ["llama2-7b", os.path.join(ROOT, "sample_configs/models/llama2-13b.json"), "gpt3-35b", "llama3-70b",
              "mixtral-8x7b"],
    "cluster": ["paper-spineleaf-64", "paper-fattree-64", "paper-fattree-128", "paper-fattree-256",
                "paper-spineleaf-1024"],
    "batch": [256, 512, 1024, 2048, 4096],
    "optimizer_dtype": ["fp32", "bf16"],
    "framework": ["megatron-core", "deepspeed", "fsdp", "torchtitan"],
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", choices=["dask", "threads"])
    a = p.parse_args()
    n = 1
    for v in GRID.values():
        n *= len(v)
    print(f"{n} points; load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        if a.only != "threads":
            from dask.distributed import Client, LocalCluster
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as lc, Client(lc) as client:
                    path = os.path.join(tmp, f"dask{workers}.jsonl")
                    t = time.perf_counter()
                    r = nest.sweep(GRID, results=path, client=client)
                    wall = time.perf_counter() - t
                    ok = sum(1 for rec in r.records if rec["ok"])
                    print(f"dask, {workers} worker(s): {wall:.1f} s ({ok} planned, {n - ok} without a plan, "
                          f"{os.path.getsize(path) / 1e6:.1f} MB of results); "
                          f"rerun (all resumed): {timed(lambda: nest.sweep(GRID, results=path, client=client)):.2f} s; "
                          f"load {os.getloadavg()[0]:.1f}")
        if a.only != "dask":
            for workers in (1, 2):
                path = os.path.join(tmp, f"threads{workers}.jsonl")
                t = time.perf_counter()
                nest.sweep(GRID, results=path, max_workers=workers)
                print(f"threads, {workers}: {time.perf_counter() - t:.1f} s; load {os.getloadavg()[0]:.1f}")


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
