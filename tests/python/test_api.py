"""nest_planner against nest-cli (issue 51): every result equals the CLI's --json output for the
same inputs, bad input raises InputError (the absurd inputs of tests/core/test_cli_absurd_inputs.cpp
and test_cli_hostile_inputs.cpp), long searches report progress and stop on KeyboardInterrupt,
concurrent calls keep their outputs apart, and written files carry the tool version.

Run by ctest (python_api) with PYTHONPATH=build/python, NEST_CLI=build/app/nest-cli and
NEST_ROOT=the source tree. The expected values are the CLI's own output, run as a separate
process: an independent path through main(), its option parsing and its stdout.
"""
import concurrent.futures
import json
import math
import os
import re
import signal
import subprocess
import threading
import time

import pytest

import nest_planner as nest

CLI = os.environ["NEST_CLI"]
ROOT = os.environ["NEST_ROOT"]
V100 = os.path.join(ROOT, "sample_configs/clusters/paper-v100-8.json")
SPINE = os.path.join(ROOT, "sample_configs/clusters/paper-spineleaf-64.json")
PLAN = os.path.join(ROOT, "sample_configs/plans/llama2-7b-spineleaf64-tp8-pp2-dp4.json")
WS = os.path.join(ROOT, "sample_configs/workspaces/quickstart.nestws.json")
RUNS = os.path.join(ROOT, "sample_configs/runs/mtnlg-530b.json")
TIMING = ("wall", "solve_time", "search_time")


def cli(*args, rc=0):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == rc, r.stderr
    return r


def cli_json(*args):
    return json.loads(cli(*args, "--json").stdout)


def strip(o):
    """Without the wall-clock fields, which differ from one run to the next."""
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not any(w in k for w in TIMING)}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


# --- version -------------------------------------------------------------------------------------
def project_version():
    text = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    return re.search(r"project\(NestPlanner VERSION ([0-9.]+)", text).group(1)


def test_version_comes_from_the_project():
    assert nest.__version__ == project_version()
    assert cli("--version").stdout.split() == ["nest-cli", project_version()]


# --- results equal the CLI's JSON ----------------------------------------------------------------
def test_plan_equals_cli():
    r = nest.plan(V100, "llama2-7b", batch=64, microbatch=[1, 2], no_zero=True, recompute=["none", "full"],
                  memory_headroom=0.1)
    expected = cli_json("plan", "--cluster", V100, "--model", "llama2-7b", "--batch", "64", "--microbatch", "1,2",
                        "--no-zero", "--recompute", "none,full", "--memory-headroom", "0.1")
    assert strip(r.to_dict()) == strip(expected)
    assert r.plan.to_dict() == expected["plan"]
    assert r.report.to_dict() == expected["report"]
    assert r.objective == expected["objective_s"]
    assert r.error_band.to_dict() == expected["error_band"]
    assert set(expected["error_band"]) == {"basis", "low_s", "high_s"}
    # to_json is the CLI's text (its byte layout: nlohmann's dump(2)).
    assert strip(json.loads(r.to_json())) == strip(expected)
    assert "<table" in r._repr_html_() and "<table" in r.plan._repr_html_()


def test_plan_on_objects_and_dicts_equals_cli():
    cluster = nest.load_cluster(V100)
    model_dict = json.load(open(os.path.join(ROOT, "sample_configs/models/llama2-7b.json")))
    r = nest.plan(cluster, nest.load_model(model_dict), batch=32)
    expected = cli_json("plan", "--cluster", V100, "--model", os.path.join(ROOT, "sample_configs/models/llama2-7b.json"),
                        "--batch", "32")
    assert strip(r.to_dict()) == strip(expected)
    assert cluster.to_dict() == cli_json("inspect", "--cluster", V100)["cluster"]


def test_hugging_face_config_and_profile_models_equal_cli():
    for rel in ("sample_configs/models/hf/deepseek-v2-lite.json", "sample_configs/profiles/llama2-7b-example.json"):
        path = os.path.join(ROOT, rel)
        assert nest.load_model(path).to_dict() == cli_json("inspect", "--model", path)["model"]
        # and as a dict (a config.json's dict is written as config.json; the name, which a
        # Hugging Face config takes from its folder, is then the private folder's)
        expected = cli_json("inspect", "--model", path)["model"]
        got = nest.load_model(json.load(open(path))).to_dict()
        assert {k: v for k, v in got.items() if k != "name"} == {k: v for k, v in expected.items() if k != "name"}


def test_top_k_equals_cli():
    r = nest.plan(V100, "llama2-7b", batch=64)
    top = r.top(3)  # searched again with --top 3
    expected = cli_json("plan", "--cluster", V100, "--model", "llama2-7b", "--batch", "64", "--top", "3")["top"]
    assert [strip(t.to_dict()) for t in top] == strip(expected)
    assert top[0].plan.to_dict() == expected[0]["plan"]
    assert [t.error_band.to_dict() for t in top] == [e["error_band"] for e in expected]
    assert len(r.top(1)) == 1 and r.top(1)[0]["objective_s"] == r.objective


def test_workspace_plan_equals_cli():
    r = nest.plan(workspace=nest.load_workspace(WS), planner="megatron")
    assert strip(r.to_dict()) == strip(cli_json("plan", "--workspace", WS, "--planner", "megatron"))


def test_evaluate_and_simulate_equal_cli():
    r = nest.evaluate(SPINE, "llama2-7b", PLAN)
    assert r.to_dict() == cli_json("evaluate", "--cluster", SPINE, "--model", "llama2-7b", "--plan", PLAN)
    assert r.to_json() == cli("evaluate", "--cluster", SPINE, "--model", "llama2-7b", "--plan", PLAN, "--json").stdout
    layout = nest.evaluate(V100, "llama2-7b", {"tp": 4, "pp": 2, "microbatch": 2}, batch=32, sp=True)
    assert layout.to_dict() == cli_json("evaluate", "--cluster", V100, "--model", "llama2-7b", "--tp", "4", "--pp", "2",
                                        "--microbatch", "2", "--batch", "32", "--sp")
    plan_obj = nest.load_plan(PLAN)
    assert nest.evaluate(SPINE, "llama2-7b", plan_obj).to_dict() == r.to_dict()
    s = nest.simulate(SPINE, "llama2-7b", plan_obj.to_dict())
    assert s.to_dict() == cli_json("simulate", "--cluster", SPINE, "--model", "llama2-7b", "--plan", PLAN)
    # The bands of the evaluated time and of the simulated makespan, as the CLI gives them.
    assert r.error_band.to_dict() == r.to_dict()["error_band"]
    assert s.error_band.to_dict() == s.to_dict()["error_band"]
    assert s.error_band.basis == r.error_band.basis


def test_compare_equals_cli():
    c = nest.compare(V100, "llama2-7b", batch=64, planners=["nest", "megatron"])
    expected = cli_json("compare", "--cluster", V100, "--model", "llama2-7b", "--batch", "64",
                        "--planners", "nest,megatron")
    assert strip(c.to_dict()) == strip(expected)
    assert [r["planner"] for r in c.results] == ["nest", "megatron"]
    assert "<table" in c._repr_html_()
    # The band of NEST's time at the top, each row's own beside it (the CLI's keys, read back).
    nest_row = expected["results"][0]
    assert c.error_band.to_dict() == expected["error_band"] == nest_row["error_band"]
    assert c.error_band.low_s == expected["error_band"]["low_s"]
    for row in expected["results"]:
        assert set(row["error_band"]) == {"basis", "low_s", "high_s"}


def test_calibrate_equals_cli():
    c = nest.calibrate(RUNS, fit="gemm_efficiency")
    assert c.to_dict() == cli_json("calibrate", "--runs", RUNS, "--fit", "gemm_efficiency")
    # A calibration object is accepted where the CLI takes --calibration FILE.
    e = nest.evaluate(V100, "llama2-7b", tp=8, calibration=c)
    band = e.to_dict()["error_band"]
    assert set(band) == {"basis", "low_s", "high_s"}
    assert e.error_band.basis == band["basis"]
    assert (e.error_band.low_s, e.error_band.high_s) == (band["low_s"], band["high_s"])
    assert band["low_s"] <= band["high_s"]
    assert ((band["low_s"] + band["high_s"]) / 2) in e.error_band
    assert (band["high_s"] * 1.01) not in e.error_band


def test_export_equals_cli(tmp_path):
    a = nest.export(PLAN, "megatron", tmp_path / "a", cluster=SPINE, model="llama2-7b")
    name = os.path.basename(a.files[0])
    b = cli_json("export", "--plan", PLAN, "--cluster", SPINE, "--model", "llama2-7b", "--format", "megatron",
                 "--out", str(tmp_path / "b" / name))
    assert {k: v for k, v in a.to_dict().items() if k != "files"} == {k: v for k, v in b.items() if k != "files"}
    assert [os.path.basename(f) for f in a.files] == [os.path.basename(f) for f in b["files"]]
    for f in a.files:
        assert open(f).read() == open(os.path.join(tmp_path / "b", os.path.basename(f))).read()


def test_import_cluster_equals_cli(tmp_path):
    slurm = os.path.join(ROOT, "sample_configs/clusters/imports/slurm-topology.conf")
    opts = ["--device", "h100-sxm-80gb", "--gpus-per-node", "8", "--bandwidth", "450,50,25,12.5"]
    c = nest.import_cluster(slurm, device="h100-sxm-80gb", gpus_per_node=8, bandwidth=[450, 50, 25, 12.5])
    expected = json.loads(cli("import-cluster", slurm, *opts).stdout)
    assert c.definition == expected
    f = tmp_path / "imported.json"
    f.write_text(json.dumps(expected))
    assert c.to_dict() == cli_json("inspect", "--cluster", str(f))["cluster"]


def test_presets_and_inspect_equal_cli():
    assert nest.presets() == cli_json("presets")
    assert nest.inspect(V100, "gpt3-35b", seq=1024) == cli_json("inspect", "--cluster", V100, "--model", "gpt3-35b",
                                                                 "--seq", "1024")


# --- bad input: InputError with the reason, never a crash ---------------------------------------
def test_unknown_keyword():
    with pytest.raises(nest.InputError) as e:
        nest.plan(V100, "llama2-7b", microbatchez=[1])
    assert e.value.keyword == "microbatchez" and "unknown keyword 'microbatchez'" in str(e.value)


@pytest.mark.parametrize("kwargs, words", [
    ({"microbatch": {"a": 1}}, "microbatch: expected"),
    ({"microbatch": [1, True]}, "bool"),
    ({"memory_headroom": float("nan")}, "finite"),
    ({"efficiency": math.inf}, "finite"),
    ({"batch": -3}, "--batch"),
    ({"microbatch": []}, "empty"),
    ({"planner": "nope"}, "--planner must be one of"),
    ({"seq": 100000000}, "at most"),
])
def test_bad_keyword_values(kwargs, words):
    with pytest.raises(nest.InputError) as e:
        nest.plan(V100, "llama2-7b", **kwargs)
    assert words in str(e.value)


def test_missing_file_and_wrong_types():
    with pytest.raises(nest.InputError) as e:
        nest.load_cluster("/nonexistent/cluster.json")
    assert "/nonexistent/cluster.json" in str(e.value)
    with pytest.raises(nest.InputError):
        nest.load_plan("/nonexistent/plan.json")
    with pytest.raises(nest.InputError):
        nest.plan(42, "llama2-7b")
    with pytest.raises(nest.InputError):
        nest.evaluate(V100, nest.load_cluster(V100), tp=2)
    with pytest.raises(nest.InputError):
        nest.plan(V100, "llama2-7b", progress="yes please")


def test_bad_dict_names_the_path():
    cluster = json.load(open(V100))
    cluster["levels"][0]["bandwidth_GBps"] = -3
    with pytest.raises(nest.InputError) as e:
        nest.load_cluster(cluster)
    assert e.value.file == "<cluster dict>"
    assert e.value.json_path == "levels[0].bandwidth_GBps"
    assert "-3" in e.value.reason
    with pytest.raises(nest.InputError) as e:
        nest.load_cluster({"levels": float("nan")})
    assert "JSON" in str(e.value)


def test_absurd_inputs_of_the_cli_tests(tmp_path):
    # tests/core/test_cli_absurd_inputs.cpp: micro_batch x dp = 2^32, 100,000 layers, deep nesting.
    plan = {"format": "nest-plan", "global_batch": 512, "micro_batch": 65536, "seq_length": 4096,
            "schedule": "1f1b", "dp": 65536,
            "stages": [{"first_layer": 0, "end_layer": 32, "devices": [[0]] * 65536}]}
    with pytest.raises(nest.InputError):
        nest.evaluate(V100, "llama2-7b", plan)
    model = json.load(open(os.path.join(ROOT, "sample_configs/models/llama2-7b.json")))
    model["layers"] = 100000
    with pytest.raises(nest.InputError):
        nest.plan(V100, model)
    deep = "[" * 300 + "]" * 300
    f = tmp_path / "deep.json"
    f.write_text(deep)
    with pytest.raises(nest.InputError) as e:
        nest.load_cluster(str(f))
    assert e.value.json_path == "[0][0][0]" or "nested" in str(e.value)
    bad = tmp_path / "broken.json"
    bad.write_text('{"name": "x",\n "levels": [\n')
    with pytest.raises(nest.InputError) as e:
        nest.load_cluster(str(bad))
    assert e.value.line is not None


# --- long calls: progress, cancellation, threads -------------------------------------------------
# A search of about 4 s alone on one core (GPT-3 175B on 1,024 H100s, every cp, vpp and
# micro-batch, the 50 best plans).
BIG = dict(cluster="paper-spineleaf-1024", model="gpt3-175b", top=50, cp=[1, 2, 4, 8], vpp=[1, 2, 3, 4],
           microbatch=[1, 2, 4, 8])


def test_progress_reaches_the_callback():
    seen = []
    nest.plan(SPINE, "gpt3-35b", progress=lambda f, best: seen.append(f))
    # The search reports fractions (possibly none for a search under 50 ms), each in [0, 1].
    assert all(0 <= f <= 1 for f in seen)


def test_exception_in_progress_cancels_the_search():
    calls = []

    def stop(fraction, best):
        calls.append(fraction)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        nest.plan(**BIG, progress=stop)
    assert len(calls) == 1  # the first report stopped it
    assert nest.plan(V100, "llama2-7b", batch=64).verified  # still usable


def test_sigint_cancels_a_long_search():
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            nest.plan(**BIG)
    finally:
        timer.cancel()
    assert nest.plan(V100, "llama2-7b", batch=64).verified


def test_concurrent_calls_keep_their_outputs_apart():
    batches = [16, 32, 64, 128, 16, 32]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: nest.plan(V100, "llama2-7b", batch=b), batches))
    for b, r in zip(batches, results):
        assert r.plan.to_dict()["global_batch"] == b
        assert strip(r.to_dict()) == strip(cli_json("plan", "--cluster", V100, "--model", "llama2-7b",
                                                    "--batch", str(b)))


# --- versions in files ---------------------------------------------------------------------------
def test_written_files_carry_the_version_and_newer_ones_are_named(tmp_path):
    out = tmp_path / "p.json"
    nest.plan(V100, "llama2-7b", batch=64, out=str(out))
    data = json.load(open(out))
    assert data["nest_planner_version"] == nest.__version__
    # The plan file carries the band of its time (informational: a loaded plan is priced again,
    # so the plan read back is the plan without it).
    assert set(data["error_band"]) == {"basis", "low_s", "high_s"}
    assert nest.load_plan(str(out)).to_dict() == {k: v for k, v in data.items()
                                                  if k not in ("nest_planner_version", "error_band")}
    # A newer version's file that this one can read loads; one it cannot says who wrote it.
    data["nest_planner_version"] = "99.0.0"
    out.write_text(json.dumps(data))
    assert nest.load_plan(str(out)).to_dict()["dp"] == data["dp"]
    data["new_key_of_the_future"] = 1
    out.write_text(json.dumps(data))
    with pytest.raises(nest.InputError) as e:
        nest.load_plan(str(out))
    assert "written by NEST Planner 99.0.0, newer than this " + nest.__version__ in str(e.value)
    r = cli("evaluate", "--cluster", V100, "--model", "llama2-7b", "--plan", str(out), rc=2)
    assert "newer than this" in r.stderr
    data["nest_planner_version"] = 7
    out.write_text(json.dumps(data))
    with pytest.raises(nest.InputError) as e:
        nest.load_plan(str(out))
    assert e.value.json_path == "nest_planner_version"


def test_walkthrough_runs(tmp_path):
    """sample_configs/notebooks/walkthrough.py, every cell, as `python3 walkthrough.py` runs it."""
    path = os.path.join(ROOT, "sample_configs/notebooks/walkthrough.py")
    r = subprocess.run([os.sys.executable, path], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "InputError at levels[0].bandwidth_GBps" in r.stdout
    assert "again: SweepResult(6 points, 0 run, 6 resumed" in r.stdout
