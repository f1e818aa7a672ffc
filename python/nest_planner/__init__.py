"""NEST Planner from Python: plan, evaluate, simulate, compare, calibrate, export, sweep.

A thin layer over the C++ core: each call runs the matching nest-cli sub-command in-process
(``nest_planner._core``), with keywords named after its flags (``microbatch=[1, 2, 4]`` is
``--microbatch 1,2,4``, ``no_zero=True`` is ``--no-zero``), so every result's ``to_dict()`` is
the CLI's ``--json`` output for the same inputs. Bad input raises :class:`InputError`. See
docs/python.md.
"""
from __future__ import annotations

import os

from . import _cli, _core
from ._cli import InputError, NestError
from ._objects import (Calibration, Cluster, Comparison, ErrorBand, ExportResult, JsonObject, Model, Plan,
                       PlanResult, RankedPlan, Report, Runs, Simulation, Workspace)

__version__: str = _core.__version__

__all__ = [
    "__version__", "InputError", "NestError",
    "Cluster", "Model", "Plan", "Workspace", "Runs", "Calibration",
    "PlanResult", "RankedPlan", "Report", "Simulation", "Comparison", "ExportResult", "ErrorBand",
    "load_cluster", "load_model", "load_plan", "load_workspace", "load_runs", "load_calibration",
    "presets", "inspect", "plan", "evaluate", "simulate", "compare", "calibrate", "export",
    "import_cluster", "sweep",
]


def load_cluster(source) -> Cluster:
    """A cluster from a file, a preset name or a dict (checked by core's loader)."""
    return Cluster(source)


def load_model(source, *, seq: int | None = None, batch: int | None = None) -> Model:
    """A model from a preset name, a file (NEST, Hugging Face config.json, profile) or a dict."""
    return Model(source, seq=seq, batch=batch)


def load_plan(source) -> Plan:
    return Plan(source)


def load_workspace(source) -> Workspace:
    return Workspace(source)


def load_runs(source) -> Runs:
    return Runs(source)


def load_calibration(source) -> Calibration:
    return Calibration(source)


def _arg(kind: str, value, cls) -> str:
    """A cluster / model / workspace / plan / calibration argument as the CLI takes it."""
    if isinstance(value, JsonObject) and hasattr(value, "_cli_arg"):
        if not isinstance(value, cls):
            raise InputError(f"{kind}: expected a {cls.__name__}, got a {type(value).__name__}", keyword=kind)
        return value._cli_arg()
    if isinstance(value, dict):
        name = "config.json" if kind == "model" and "model_type" in value else None
        return _cli.dict_file(kind, value, name)
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str) and value and "\0" not in value:
        return value
    raise InputError(f"{kind}: expected a file path, a preset name, a dict or a {cls.__name__}, "
                     f"got {type(value).__name__}", keyword=kind)


def _input_args(cluster, model, workspace) -> list[str]:
    if isinstance(cluster, Workspace) and workspace is None:
        cluster, workspace = None, cluster
    args: list[str] = []
    if workspace is not None:
        args += ["--workspace", _arg("workspace", workspace, Workspace)]
    if cluster is not None:
        args += ["--cluster", _arg("cluster", cluster, Cluster)]
    if model is not None:
        args += ["--model", _arg("model", model, Model)]
    return args


def _options(options: dict) -> list[str]:
    """Keyword options; a Calibration, a plan or a dict for `calibration` and `plan` too."""
    opts = dict(options)
    extra: list[str] = []
    for kind, cls in (("calibration", Calibration), ("plan", Plan)):
        value = opts.pop(kind, None)
        if value is not None:
            extra += [f"--{kind}", _arg(kind, value, cls)]
    for reserved in ("json",):
        if reserved in opts:
            raise InputError(f"unknown keyword '{reserved}': results are always the CLI's JSON", keyword=reserved)
    return extra + _cli.option_args(opts)


def presets() -> dict:
    """Devices, cluster templates and presets, model presets (``nest-cli presets --json``)."""
    return _cli.run("presets", ["--json"])[0]


def inspect(cluster=None, model=None, *, workspace=None, **options) -> dict:
    """Devices, levels, parameters, FLOPs per token (``nest-cli inspect --json``)."""
    return _cli.run("inspect", _input_args(cluster, model, workspace) + _options(options) + ["--json"])[0]


def plan(cluster=None, model=None, *, workspace=None, progress=None, **options) -> PlanResult:
    """The best plan (``nest-cli plan --json``). Keywords are plan's flags: planner, microbatch,
    cp, vpp, recompute, max_stages, memory_headroom, no_zero, batch, seq, framework, top,
    threads, calibration, ... ``progress(fraction, best_s)`` is called while it searches;
    Ctrl+C (KeyboardInterrupt) stops the search."""
    base = _input_args(cluster, model, workspace) + _options(options)
    top = options.get("top") or 1

    def rerun(k: int) -> PlanResult:
        opts = dict(options, top=k)
        return plan(cluster, model, workspace=workspace, progress=progress, **opts)

    data, text, _ = _cli.run("plan", base + ["--json"], progress)
    return PlanResult(data, text, rerun, top if isinstance(top, int) else 1)


def _plan_or_layout(plan, options: dict) -> dict:
    if plan is None:
        return options
    if isinstance(plan, dict) and "stages" not in plan:  # a uniform layout: tp, pp, dp, ...
        clash = set(plan) & set(options)
        if clash:
            raise InputError(f"{sorted(clash)[0]}: given both in the layout and as a keyword")
        return {**plan, **options}
    return {**options, "plan": plan}


def evaluate(cluster=None, model=None, plan=None, *, workspace=None, **options) -> Report:
    """The cost report of one plan (``nest-cli evaluate --json``): ``plan`` is a Plan, a plan
    file or dict, or a layout dict ({"tp": 8, "pp": 2, "dp": 4, ...}, or those as keywords)."""
    args = _input_args(cluster, model, workspace) + _options(_plan_or_layout(plan, options))
    data, text, _ = _cli.run("evaluate", args + ["--json"])
    return Report(data, text)


def simulate(cluster=None, model=None, plan=None, *, workspace=None, **options) -> Simulation:
    """One iteration run event by event (``nest-cli simulate --json``); ``out=`` writes the timeline."""
    args = _input_args(cluster, model, workspace) + _options(_plan_or_layout(plan, options))
    data, text, _ = _cli.run("simulate", args + ["--json"])
    return Simulation(data, text)


def compare(cluster=None, model=None, *, workspace=None, progress=None, **options) -> Comparison:
    """NEST against the baselines (``nest-cli compare --json``); ``planners=["nest", "megatron"]``."""
    args = _input_args(cluster, model, workspace) + _options(options)
    data, text, _ = _cli.run("compare", args + ["--json"], progress)
    return Comparison(data, text)


def calibrate(runs, fit=None, *, out=None, **options) -> Calibration:
    """Fits the cost model to measured runs (``nest-cli calibrate --json``). ``runs`` is a Runs,
    a runs file or its dict (its cluster and model files then need absolute paths)."""
    args = ["--runs", _arg("runs", runs, Runs)] + _cli.option_args({"fit": fit, "out": out}) + _options(options)
    data, text, _ = _cli.run("calibrate", args + ["--json"])
    c = Calibration.__new__(Calibration)
    c._loaded_from_dict = True
    from ._objects import _Input
    _Input.__init__(c, data)
    JsonObject.__init__(c, data, text)
    return c


def export(plan, format: str, out_dir=None, *, cluster=None, model=None, workspace=None, **options) -> ExportResult:
    """Launch files for a framework (``nest-cli export --json``): megatron, nemo, deepspeed,
    torchtitan or nest, written into ``out_dir`` (nothing is written without it)."""
    if not isinstance(format, str):
        raise InputError(f"format: expected a word, got {type(format).__name__}", keyword="format")
    opts = dict(options, plan=plan, format=format)
    if out_dir is not None:
        try:
            name = _core.default_export_file_name(format)
        except ValueError as e:
            raise InputError(f"format: {e}", keyword="format") from None
        folder = os.fspath(out_dir) if isinstance(out_dir, (str, os.PathLike)) else None
        if folder is None:
            raise InputError(f"out_dir: expected a folder path, got {type(out_dir).__name__}", keyword="out_dir")
        opts["out"] = os.path.join(folder, name)
    args = _input_args(cluster, model, workspace) + _options(opts)
    data, text, _ = _cli.run("export", args + ["--json"])
    return ExportResult(data, text)


def import_cluster(path, format: str | None = None, **options) -> Cluster:
    """A cluster from Slurm topology.conf, an NCCL topology dump, ``nvidia-smi topo -m`` or an
    ASTRA-sim network (``nest-cli import-cluster``): ``definition`` is the CLI's JSON."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise InputError(f"path: expected a file path, got {type(path).__name__}", keyword="path")
    if "out" in options:
        raise InputError("unknown keyword 'out': save the result with json.dump(cluster.definition, f)", keyword="out")
    args = [("./" + path) if path.startswith("-") else path] + _cli.option_args(dict(options, format=format))
    data, _, _ = _cli.run("import-cluster", args)
    return Cluster(data)


from ._sweep import sweep  # noqa: E402  (uses plan() above)
