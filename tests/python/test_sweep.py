"""nest_planner.sweep (issue 51): one plan per grid point, locally on threads and on a Dask
LocalCluster of 2 workers; each point's result equals nest-cli plan --json for that point; a
rerun resumes from the JSON-lines results file (a point already there is not planned again, a
line cut short by a crash is planned again); bad grids raise InputError."""
import json
import os
import subprocess

import pytest

import nest_planner as nest

CLI = os.environ["NEST_CLI"]
TIMING = ("wall", "solve_time", "search_time")
GRID = {"model": ["llama2-7b", "gpt3-35b"], "batch": [32, 64], "framework": ["megatron-core", "deepspeed"]}


def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not any(w in k for w in TIMING)}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def without_device_rows(result):
    """plan --json less report.devices: what a sweep keeps by default."""
    result = json.loads(json.dumps(result))
    result["report"].pop("devices")
    return result


def cli_plan(point, cluster):
    args = [CLI, "plan", "--cluster", cluster, "--json"]
    for k, v in point.items():
        args += ["--" + k, str(v)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def check_against_cli(result, cluster):
    assert len(result.records) == 8  # 2 x 2 x 2, in grid order
    points = [r["point"] for r in result.records]
    assert points[0] == {"model": "llama2-7b", "batch": 32, "framework": "megatron-core"}
    assert points[-1] == {"model": "gpt3-35b", "batch": 64, "framework": "deepspeed"}
    for r in result.records:
        assert r["ok"], r.get("error")
        expected = cli_plan(r["point"], cluster)
        assert len(expected["report"]["devices"]) > 0
        assert strip(r["result"]) == strip(without_device_rows(expected))


def test_local_sweep_resumes(tmp_path):
    path = tmp_path / "results.jsonl"
    seen = []
    first = nest.sweep(GRID, cluster="paper-spineleaf-64", results=path, max_workers=2,
                       progress=lambda done, total: seen.append((done, total)))
    assert (first.ran, first.skipped) == (8, 0)
    assert sorted(seen) == [(i, 8) for i in range(1, 9)]
    check_against_cli(first, "paper-spineleaf-64")
    lines = path.read_text().splitlines()
    assert len(lines) == 8
    # Resume: nothing to do.
    again = nest.sweep(GRID, cluster="paper-spineleaf-64", results=path)
    assert (again.ran, again.skipped) == (0, 8)
    assert [r["id"] for r in again.records] == [r["id"] for r in first.records]
    # A crash cut the last line short and lost two others: those three run again.
    kept = lines[:5] + [lines[5][: len(lines[5]) // 2]]
    path.write_text("\n".join(kept))
    resumed = nest.sweep(GRID, cluster="paper-spineleaf-64", results=path)
    assert (resumed.ran, resumed.skipped) == (3, 5)
    check_against_cli(resumed, "paper-spineleaf-64")
    rows = resumed.rows()
    assert rows[0]["samples_per_s"] == resumed.records[0]["result"]["report"]["throughput_samples_per_s"]
    assert "<table" in resumed._repr_html_()


def test_dask_local_cluster_of_two_workers(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        path = tmp_path / "dask.jsonl"
        result = nest.sweep(GRID, cluster="paper-spineleaf-64", results=path, client=client)
        assert (result.ran, result.skipped) == (8, 0)
        check_against_cli(result, "paper-spineleaf-64")
        # The points ran on the two worker processes, not here.
        assert len(path.read_text().splitlines()) == 8
        assert nest.sweep(GRID, cluster="paper-spineleaf-64", results=path, client=client).ran == 0


def test_failed_points_are_kept_with_their_reason(tmp_path):
    r = nest.sweep({"model": ["llama2-7b"], "batch": [64, -1]}, cluster="paper-v100-8", results=tmp_path / "r.jsonl")
    ok, bad = r.records
    assert ok["ok"] and not bad["ok"]
    assert "--batch" in bad["error"]


@pytest.mark.parametrize("grid", [{"batch": []}, [1, 2], "batch", {"batch": [float("nan")]}])
def test_bad_grids(grid):
    with pytest.raises(nest.InputError):
        nest.sweep(grid, cluster="paper-v100-8")


def test_parquet_needs_pyarrow(tmp_path):
    try:
        import pyarrow  # noqa: F401
        pytest.skip("pyarrow is installed: Parquet is written")
    except ImportError:
        with pytest.raises(nest.InputError) as e:
            nest.sweep({"batch": [64]}, cluster="paper-v100-8", model="llama2-7b", results=tmp_path / "r.parquet")
        assert "pyarrow" in str(e.value)


def test_device_rows_are_kept_when_asked(tmp_path):
    point = {"model": "llama2-7b", "batch": 64}
    full = nest.sweep([point], cluster="paper-v100-8", device_rows=True).records[0]["result"]
    assert strip(full) == strip(cli_plan(point, "paper-v100-8"))
    compact = nest.sweep([point], cluster="paper-v100-8").records[0]["result"]
    assert strip(compact) == strip(without_device_rows(full))
