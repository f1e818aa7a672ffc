# %% [markdown]
# # NEST Planner from Python: a walk-through
#
# Cells in the `# %%` form (Jupyter, VS Code, Spyder and `jupytext` open them as a notebook;
# `python3 walkthrough.py` runs them all). Needs the module: `cmake --install build` or the
# Debian package puts it in /usr/lib/python3/dist-packages; from a build tree,
# `PYTHONPATH=build/python`. docs/python.md describes every call.

# %%
import json
import os
import tempfile

import nest_planner as nest

print("NEST Planner", nest.__version__)
HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.dirname(HERE)  # sample_configs/

# %% [markdown]
# ## Inputs: presets, files, dicts
# A cluster or a model is a preset name (`nest.presets()` lists them), a file, or a dict in
# the same format. `to_dict()` is what `nest-cli inspect --json` says about it.

# %%
cluster = nest.load_cluster("paper-v100-8")
model = nest.load_model("llama2-7b", batch=64)
print(cluster.devices, "devices;", model["parameters"] / 1e9, "B parameters")
cluster  # in a notebook: a table

# %% [markdown]
# ## Plan
# Keywords are nest-cli plan's flags, with `_` for `-`: `microbatch=[1, 2, 4]` is
# `--microbatch 1,2,4`, `no_zero=True` is `--no-zero`.

# %%
result = nest.plan(cluster, "llama2-7b", batch=64, microbatch=[1, 2, 4],
                   progress=lambda fraction, best: None)
print(f"{result.report['iteration_time_s']:.3f} s per iteration, MFU {result.report['mfu']:.1%}")
for ranked in result.top(3):
    print(ranked["rank"], f"{ranked['objective_s']:.4f} s", f"+{ranked['delta_pct']:.2f} %")
result  # the best plan's stages as a table

# %% [markdown]
# ## Evaluate, simulate and compare

# %%
report = nest.evaluate(cluster, "llama2-7b", {"tp": 2, "pp": 4, "microbatch": 1, "recompute": "full"}, batch=64)
print("hand layout:", round(report["iteration_time_s"], 3), "s; feasible:", report["feasible"])
sim = nest.simulate(cluster, "llama2-7b", result.plan)  # the plan gives batch and sequence
print("simulated:", round(sim["makespan_s"], 3), "s; gap", f"{sim['relative_gap']:+.2%}")
comparison = nest.compare(cluster, "llama2-7b", batch=64, planners=["nest", "megatron"])
for row in comparison.results:
    print(row["planner"], row["report"]["iteration_time_s"] if row["feasible"] else "no plan")

# %% [markdown]
# ## Export launch files, calibrate, import a cluster

# %%
out = tempfile.mkdtemp()
exported = nest.export(result.plan, "megatron", out, cluster=cluster, model="llama2-7b")
print(exported["summary"])
print("files:", [os.path.basename(f) for f in exported.files])
calibration = nest.calibrate(os.path.join(SAMPLES, "runs/mtnlg-530b.json"), fit="gemm_efficiency")
print("calibrated:", json.dumps(calibration["parameters"])[:100], "...")
slurm = nest.import_cluster(os.path.join(SAMPLES, "clusters/imports/slurm-topology.conf"),
                            device="h100-sxm-80gb", gpus_per_node=8, bandwidth=[450, 50, 25, 12.5])
print("imported:", slurm.devices, "devices")

# %% [markdown]
# ## Bad input raises InputError, naming where and why

# %%
try:
    nest.plan(cluster, "llama2-7b", microbatch=float("nan"))
except nest.InputError as e:
    print("InputError:", e)
bad = json.load(open(os.path.join(SAMPLES, "clusters/paper-v100-8.json")))
bad["levels"][0]["bandwidth_GBps"] = -3
try:
    nest.load_cluster(bad)
except nest.InputError as e:
    print("InputError at", e.json_path, "->", e.reason)

# %% [markdown]
# ## A sweep, resumable: models x batch sizes
# Rerunning the cell skips the points already in the results file. With a
# `dask.distributed.Client` as `client=`, the points run on its workers.

# %%
results_file = os.path.join(out, "sweep.jsonl")
grid = {"model": ["llama2-7b", "gpt3-35b"], "batch": [32, 64, 128]}
done = nest.sweep(grid, cluster="paper-spineleaf-64", results=results_file)
print(done)
for row in done.rows():
    print(row["model"], row["batch"], row["samples_per_s"] and round(row["samples_per_s"], 2))
print("again:", nest.sweep(grid, cluster="paper-spineleaf-64", results=results_file))  # all resumed
