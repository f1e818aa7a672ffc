"""Inputs (clusters, models, plans, workspaces, runs, calibrations) and results.

Every object is plain Python over the JSON the CLI prints: ``to_dict()`` returns it, ``to_json()``
writes it as nest-cli does (2-space indent, keys sorted, UTF-8), and ``_repr_html_`` shows a
table in a notebook.
"""
from __future__ import annotations

import html
import json
import os

from . import _cli, _core
from ._cli import InputError


def dumps(data) -> str:
    """JSON as nest-cli prints it (nlohmann::json dump(2): sorted keys, ': ', UTF-8)."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return html.escape(json.dumps(v)[:120])
    return html.escape(str(v))


def _table(title: str, rows: list[tuple[str, object]], stages: list[dict] | None = None) -> str:
    out = [f"<div><b>{html.escape(title)}</b><table>"]
    out += [f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{_fmt(v)}</td></tr>" for k, v in rows]
    out.append("</table>")
    if stages:
        cols = [k for k, v in stages[0].items() if not isinstance(v, (dict, list))]
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
        for s in stages:
            out.append("<tr>" + "".join(f"<td>{_fmt(s.get(c))}</td>" for c in cols) + "</tr>")
        out.append("</table>")
    out.append("</div>")
    return "".join(out)


class JsonObject:
    """A value with the CLI's JSON: to_dict(), to_json(), a table in notebooks."""

    _title = "NEST Planner"

    def __init__(self, data, text: str | None = None):
        self._data = data
        self._text = text

    def to_dict(self):
        return json.loads(json.dumps(self._data))  # a copy the caller may change

    def to_json(self) -> str:
        return self._text if self._text is not None else dumps(self._data) + "\n"

    def __getitem__(self, key):
        return self._data[key]

    def __eq__(self, other):
        return type(other) is type(self) and other._data == self._data

    def __repr__(self):
        scalars = {k: v for k, v in self._data.items() if not isinstance(v, (dict, list))} \
            if isinstance(self._data, dict) else self._data
        return f"{type(self).__name__}({scalars!r})"

    def _repr_html_(self):
        d = self._data if isinstance(self._data, dict) else {"value": self._data}
        rows = [(k, v) for k, v in d.items() if not isinstance(v, (dict, list))]
        stages = d.get("stages") if isinstance(d.get("stages"), list) and d.get("stages") else None
        return _table(self._title, rows, stages if stages and isinstance(stages[0], dict) else None)


# --- inputs --------------------------------------------------------------------------------------
class _Input:
    """A file path, a preset name or a dict, as the CLI's option takes it."""

    kind = "input"

    def __init__(self, source, file_name: str | None = None):
        if isinstance(source, os.PathLike):
            source = os.fspath(source)
        self._arg = None
        self._file_name = file_name
        if isinstance(source, dict):
            self.definition = source
        elif isinstance(source, str) and source and "\0" not in source:
            self.definition = None
            self._arg = source
        else:
            raise InputError(f"{self.kind}: expected a file path, a preset name or a dict, "
                             f"got {type(source).__name__}", keyword=self.kind)
        self.source = source

    def _cli_arg(self) -> str:
        if self._arg is None:  # a dict: written once, when the CLI first needs it
            self._arg = _cli.dict_file(self.kind, self.definition, self._file_name)
        return self._arg


def _need_file(kind: str, path: str):
    if not os.path.exists(path):
        raise InputError(f"{path}: no such {kind} file", keyword=kind)


class Cluster(_Input, JsonObject):
    """A cluster: a file, a preset name (``nest-cli presets``) or a dict in the cluster format.

    ``to_dict()`` is the cluster part of ``nest-cli inspect --cluster C --json`` (devices, levels,
    device types); ``definition`` is the cluster JSON itself when it came from a dict or an import.
    """

    kind = "cluster"
    _title = "Cluster"

    def __init__(self, source):
        if isinstance(source, Cluster):
            source = source.definition if source.definition is not None else source.source
        _Input.__init__(self, source)
        data, text, _ = _cli.run("inspect", ["--cluster", self._cli_arg(), "--json"])
        JsonObject.__init__(self, data["cluster"])
        self.devices = data["cluster"]["devices"]


class Model(_Input, JsonObject):
    """A model: a preset name, a model file (NEST JSON, a Hugging Face config.json, a measured
    profile) or a dict. ``to_dict()`` is the model part of ``nest-cli inspect --model M --json``
    (with ``seq`` / ``batch`` when given)."""

    kind = "model"
    _title = "Model"

    def __init__(self, source, *, seq: int | None = None, batch: int | None = None):
        if isinstance(source, Model):
            source = source.definition if source.definition is not None else source.source
        name = "config.json" if isinstance(source, dict) and "model_type" in source else None
        _Input.__init__(self, source, name)
        data, _, _ = _cli.run("inspect", ["--model", self._cli_arg(), "--json"] +
                              _cli.option_args({"seq": seq, "batch": batch}))
        JsonObject.__init__(self, data["model"])


class _Loaded(_Input, JsonObject):
    """A file read by core's own loader (plan, workspace, calibration, runs)."""

    def __init__(self, source):
        if isinstance(source, type(self)):
            source = source._data if source._loaded_from_dict else source.source
        if isinstance(source, str) and not isinstance(source, bool):
            _need_file(self.kind, source)
        self._loaded_from_dict = isinstance(source, dict)
        _Input.__init__(self, source)
        ok, text = _core.load(self.kind, self._cli_arg())
        if not ok:
            raise InputError(_cli._clean(text), keyword=self.kind)
        JsonObject.__init__(self, json.loads(text))


class Plan(_Loaded):
    """A plan: a file from ``nest-cli plan --out`` or the window, or its dict. ``to_dict()`` is
    the plan as core writes it (``PlanResult.plan`` of a search is one too)."""

    kind = "plan"
    _title = "Plan"

    @classmethod
    def _from_result(cls, data):
        p = cls.__new__(cls)
        _Input.__init__(p, data)
        p._loaded_from_dict = True
        JsonObject.__init__(p, data)
        return p

    def _repr_html_(self):
        d = self._data
        rows = [(k, v) for k, v in d.items() if not isinstance(v, (dict, list))]
        stages = [{k: v for k, v in s.items() if k != "devices"} for s in d.get("stages", [])]
        return _table("Plan", rows, stages or None)


class Workspace(_Loaded):
    """A workspace (*.nestws.json): cluster, model and search settings as the window plans."""

    kind = "workspace"
    _title = "Workspace"


class Calibration(_Loaded):
    """A fitted calibration (``nest-cli calibrate --out``, or ``calibrate()``)."""

    kind = "calibration"
    _title = "Calibration"


class Runs(_Loaded):
    """Measured runs ({"format": "nest-runs", "runs": [...]}) for ``calibrate()``."""

    kind = "runs"
    _title = "Runs"


# --- results -------------------------------------------------------------------------------------
class ErrorBand(JsonObject):
    """The model's error band on one reported time (the ``error_band`` of the CLI's --json):
    ``basis`` ("megatron-core tuned, 65-512 GPUs, uncalibrated", "calibrated (3 runs)") and
    ``low_s``/``high_s``, the band's bounds on that time in seconds. ``seconds in band`` is true
    inside them."""

    _title = "Error band"

    @property
    def basis(self) -> str:
        return self._data["basis"]

    @property
    def low_s(self):
        return self._data["low_s"]

    @property
    def high_s(self):
        return self._data["high_s"]

    def __contains__(self, seconds) -> bool:
        return self.low_s is not None and self.high_s is not None and self.low_s <= seconds <= self.high_s


def _band(data) -> ErrorBand | None:
    band = data.get("error_band") if isinstance(data, dict) else None
    return ErrorBand(band) if isinstance(band, dict) else None


class Report(JsonObject):
    """The cost report of one plan (``nest-cli evaluate --json``); ``error_band`` bounds its
    iteration time (None on the report inside a plan result: the result holds it)."""

    _title = "Report"

    @property
    def error_band(self) -> ErrorBand | None:
        return _band(self._data)


class Simulation(JsonObject):
    """One simulated iteration (``nest-cli simulate --json``); ``error_band`` bounds its makespan."""

    _title = "Simulation"

    @property
    def error_band(self) -> ErrorBand | None:
        return _band(self._data)


class Comparison(JsonObject):
    """NEST against the baselines (``nest-cli compare --json``): one row per planner."""

    _title = "Comparison"

    @property
    def results(self):
        return self._data["results"]

    @property
    def error_band(self) -> ErrorBand | None:
        """The band of NEST's time (each result row has its own ``error_band``)."""
        return _band(self._data)

    def _repr_html_(self):
        rows = []
        for r in self._data["results"]:
            rep = r.get("report") or {}
            rows.append({"planner": r.get("planner"), "feasible": r.get("feasible"),
                         "iteration_time_s": rep.get("iteration_time_s"), "mfu": rep.get("mfu")})
        return _table("Comparison", [("error_band", self._data.get("error_band"))], rows)


class ExportResult(JsonObject):
    """Launch files for a framework (``nest-cli export --json``): ``files`` lists what was written."""

    _title = "Export"

    @property
    def files(self):
        return self._data["files"]


class RankedPlan(JsonObject):
    """One of the K best plans: rank, objective_s, delta_s, delta_pct, verified, error_band, plan,
    report."""

    _title = "Ranked plan"

    @property
    def error_band(self) -> ErrorBand | None:
        return _band(self._data)

    @property
    def plan(self) -> Plan:
        return Plan._from_result(self._data["plan"])

    @property
    def report(self) -> Report:
        return Report(self._data["report"])


class PlanResult(JsonObject):
    """The best plan of a search (``nest-cli plan --json``): ``.plan``, ``.report``, ``.top(k)``.

    ``solve_time_s`` and ``stats.wall_s`` are the search's own wall time, so they differ from
    one run to the next; every other key is the same for the same inputs.
    """

    _title = "Plan"

    def __init__(self, data, text, rerun, top_searched: int = 1):
        super().__init__(data, text)
        self._rerun = rerun
        self._top_searched = top_searched

    @property
    def plan(self) -> Plan:
        return Plan._from_result(self._data["plan"])

    @property
    def report(self) -> Report:
        return Report(self._data["report"])

    @property
    def objective(self) -> float:
        return self._data["objective_s"]

    @property
    def error_band(self) -> ErrorBand | None:
        """The band of the plan's iteration time."""
        return _band(self._data)

    @property
    def verified(self) -> bool:
        return self._data["verified"]

    def top(self, k: int = 5) -> list[RankedPlan]:
        """The k best distinct plans, best first (searched again with ``top=k`` when this search
        kept fewer; nest planner only)."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError(f"top: expected a whole number >= 1, got {k!r}", keyword="top")
        have = self._data.get("top")
        if have is None and k == 1:
            d = self._data
            return [RankedPlan({"rank": 1, "objective_s": d["objective_s"], "delta_s": 0.0, "delta_pct": 0.0,
                                "verified": d["verified"], "error_band": d["error_band"], "plan": d["plan"],
                                "report": d["report"]})]
        if have is None or self._top_searched < k:
            return self._rerun(k).top(k)
        return [RankedPlan(t) for t in have[:k]]

    def _repr_html_(self):
        d, rep = self._data, self._data["report"]
        band = d.get("error_band") or {}
        rows = [("planner", d.get("planner")), ("iteration_time_s", rep.get("iteration_time_s")),
                ("error_band", f"{band.get('low_s', 0):.4g}-{band.get('high_s', 0):.4g} s, {band.get('basis', '')}"
                 if band else None),
                ("samples_per_s", rep.get("throughput_samples_per_s")), ("mfu", rep.get("mfu")),
                ("peak_memory_GB", (rep.get("peak_memory_bytes") or 0) / 1e9),
                ("verified", d.get("verified")), ("solve_time_s", d.get("solve_time_s"))]
        stages = [{k: v for k, v in s.items() if k != "devices"} for s in d["plan"].get("stages", [])]
        return _table("Best plan", [r for r in rows if r[1] is not None], stages or None)
