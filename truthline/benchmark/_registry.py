"""The metric registry: project files name metrics; each name is one decorated function.

A metric takes a ``Scored`` (one model's scored decisions as a DataFrame, plus the
project and the resampling settings) and returns a dict whose ``value`` is its headline
(a ``CI`` or a float) next to any detail tables. Adding a metric is one function decorated
with ``@metric("name")``. A metric that reads other metrics' results declares them:
``@metric("name", needs=("a", "b"))``; it is computed after them (they are computed even
when the project does not list them) and takes ``(scored, results)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from truthline._registry import Registry
from truthline.benchmark import _metrics as M
from truthline.errors import TruthlineError
from truthline.fields import Boolean, Number, SingleChoice
from truthline.project import Project
from truthline.stats import CI


@dataclass
class Scored:
    """One model's scored decisions. ``decisions`` columns: item_id, parent, stratum,
    condition, path, field, entity, gold, pred, correct, credit, provenance, status,
    confidence; ``entities``: item_id, list, tp, fp, fn."""

    project: Project
    decisions: pd.DataFrame
    entities: pd.DataFrame
    rs: M.Resampling = field(default_factory=M.Resampling)
    cluster: bool = True
    stratify: bool = True

    def boot_args(self, df: pd.DataFrame) -> dict[str, Any]:
        """Units/clusters/strata for a subset of decisions, as the project declares."""
        args: dict[str, Any] = {"units": df["item_id"].tolist(), "rs": self.rs}
        if self.cluster and "parent" in df and df["parent"].notna().any():
            args["clusters"] = df["parent"].fillna(df["item_id"].astype(str)).tolist()
        if self.stratify and "stratum" in df and df["stratum"].notna().any():
            strata = df["stratum"].fillna("").astype(str)
            # strata must be constant within a cluster: fall back to no strata otherwise
            if (
                "clusters" not in args
                or (
                    pd.DataFrame({"c": args["clusters"], "s": strata}).groupby("c")["s"].nunique()
                    <= 1
                ).all()
            ):
                args["strata"] = strata.tolist()
        return args

    def field_rows(self, leaf: str) -> pd.DataFrame:
        return self.decisions[self.decisions["field"] == leaf]

    def primary_rows(self) -> pd.DataFrame:
        """Decisions on ``[benchmark] action_field`` when it has any, else every decision."""
        f = self.settings.action_field
        return self.field_rows(f) if f and len(self.field_rows(f)) else self.decisions

    @property
    def settings(self):
        return self.project.benchmark


@dataclass
class RunScored:
    """Every entry of a run side by side, for metrics across models (routing oracle,
    ensemble, hard subset, rank transfer, paired conditions, open-answer z-scores).
    ``entries``: label -> that entry's ``Scored``; ``kinds``: label -> model kind (``rule``,
    ``simulated``, ...); ``keys``: label -> (model, variant, condition, control)."""

    project: Project
    entries: dict[str, Scored]
    kinds: dict[str, str] = field(default_factory=dict)
    keys: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)
    rs: M.Resampling = field(default_factory=M.Resampling)

    @property
    def settings(self):
        return self.project.benchmark

    def models(self, *, rules: bool = False) -> list[str]:
        """Entry labels of models (rule baselines only when asked), in run order."""
        return [k for k in self.entries if rules or self.kinds.get(k) != "rule"]


MetricFn = Callable[[Scored], dict[str, Any]]
NeedsMetricFn = Callable[[Scored, Mapping[str, Any]], dict[str, Any]]
"""A metric declared with ``needs``: it also takes the results computed before it."""
RunMetricFn = Callable[[RunScored], dict[str, Any]]
_METRICS: Registry[MetricFn | NeedsMetricFn] = Registry("benchmark metric")
_RUN_METRICS: Registry[RunMetricFn] = Registry("benchmark metric across models")
_NEEDS: dict[str, tuple[str, ...]] = {}
"""Per-model metric name -> the metrics whose results it reads (only metrics with needs)."""

METRIC_ENTRY_POINTS = "truthline.metrics"
"""Entry-point group of metrics defined outside this package (a paper system, a plug-in):
``name = "module"`` (or ``"module:function"``); the module registers the name with
``@metric`` when it is imported, which happens the first time a project or run names it."""


def _plugin_metrics() -> dict[str, EntryPoint]:
    """Metric names declared by installed plug-ins (nothing imported here)."""
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = {}
        for ep in entry_points(group=METRIC_ENTRY_POINTS):
            _PLUGINS.setdefault(ep.name, ep)
    return _PLUGINS


_PLUGINS: dict[str, EntryPoint] | None = None


BUILTIN_MODULES = ("truthline.benchmark._diagnostics", "truthline.benchmark._across")
"""The loop's own metric modules besides this one: the one place they are imported (on the
first lookup of any metric name), so no package registers metrics by an import elsewhere."""
_BUILTINS_LOADED = False


def _load_builtins() -> None:
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        import importlib

        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def _loaded(name: str) -> bool:
    _load_builtins()
    return name in _METRICS.as_dict() or name in _RUN_METRICS.as_dict()


def _ensure(name: str) -> bool:
    """Import the plug-in that declares ``name`` if it is not registered yet; whether the
    name is now known."""
    if _loaded(name):
        return True
    ep = _plugin_metrics().get(name)
    if ep is None:
        return False
    try:
        ep.load()
    except ImportError as exc:
        raise TruthlineError(
            f"benchmark metric {name!r}: its plug-in {ep.value!r} "
            f"(entry point group {METRIC_ENTRY_POINTS!r}) cannot be imported: {exc}"
        ) from exc
    if not _loaded(name):
        raise TruthlineError(
            f"benchmark metric {name!r}: its plug-in {ep.value!r} was imported but registers "
            "no metric of that name (decorate it with @metric(name))"
        )
    return True


manifest_facts: Registry[Callable[[Project], dict[str, Any]]] = Registry(
    "run-manifest fact", entry_point_group="truthline.run_manifest"
)
"""Frozen choices a system adds to the ``protocol`` part of a grounding run's manifest
(name -> ``fn(project) -> {key: value}``), e.g. the version of a frozen rule baseline whose
geometry the numbers depend on. Every registered fact is asked; keys keep registry order."""


def metric(name: str, *, across: bool = False, needs: Iterable[str] = ()) -> Callable[[Any], Any]:
    """Register a benchmark metric under the name used in ``[benchmark] metrics``.
    ``across=True``: the function takes a ``RunScored`` (all entries of a run) instead of
    one model's ``Scored``.

    ``needs``: per-model metrics whose results this one reads (a score over other metrics'
    headline values, say). It is computed after them, they are computed even when the
    project does not list them (only listed metrics are reported), and the function takes
    ``(scored, results)``: ``results`` maps every metric computed before it for that model
    (each of its needs, and the listed metrics of a lower depth, see ``compute_metrics``) to
    its result. A need may be declared by a plug-in (it is imported then); an unknown one, a
    metric across models, or needs that form a cycle are refused when a project names it."""
    wanted = tuple(dict.fromkeys(needs))
    if across and wanted:
        raise ValueError(
            f"benchmark metric {name!r}: needs is for per-model metrics "
            "(a metric across models reads every entry's Scored itself)"
        )
    if name in wanted:
        raise ValueError(f"benchmark metric {name!r} needs itself")

    def deco(fn: Any) -> Any:
        if _loaded(name):
            raise ValueError(f"benchmark metric {name!r} is registered twice")
        registered = (_RUN_METRICS if across else _METRICS).register(name)(fn)
        if wanted:
            _NEEDS[name] = wanted
        return registered

    return deco


def metric_needs(name: str) -> tuple[str, ...]:
    """The metrics ``name`` declares it needs (empty for most)."""
    _ensure(name)
    return _NEEDS.get(name, ())


def registered_metrics() -> list[str]:
    """Every metric name: built in, registered, or declared by a plug-in (not imported)."""
    _load_builtins()
    return sorted({*_METRICS, *_RUN_METRICS, *_plugin_metrics()})


def across_names() -> list[str]:
    """Registered metrics that compare the models of a run (plug-ins are imported to tell)."""
    _load_builtins()
    for name in _plugin_metrics():
        _ensure(name)
    return sorted(_RUN_METRICS)


def is_across(name: str) -> bool:
    """Whether ``name`` is a metric over all models of a run (not one model's)."""
    _ensure(name)
    return name in _RUN_METRICS


def _check_known(names: list[str]) -> None:
    """Every name is registered (or declared by a plug-in, which is imported), and so is
    everything the per-model ones need, without a cycle; else one ``KeyError`` line."""
    unknown = [n for n in names if not _ensure(n)]
    if unknown:
        raise KeyError(
            f"unknown benchmark metric(s) {', '.join(unknown)} "
            f"(registered: {', '.join(registered_metrics())})"
        )
    _depths([n for n in names if n in _METRICS])


def _depths(names: list[str]) -> dict[str, int]:
    """Depth of each per-model metric in ``names`` and of everything it needs: 0 without
    needs, else one more than its deepest need. Loads the plug-ins that declare needs; a
    need that is unknown or across models, or a cycle of needs, is a ``KeyError``."""
    depth: dict[str, int] = {}

    def visit(name: str, chain: tuple[str, ...]) -> int:
        if name in depth:
            return depth[name]
        if name in chain:
            cycle = " -> ".join([*chain[chain.index(name) :], name])
            raise KeyError(f"benchmark metrics need each other in a cycle: {cycle}")
        needs = _NEEDS.get(name, ())
        for need in needs:
            if not _ensure(need):
                raise KeyError(
                    f"benchmark metric {name!r} needs {need!r}, which is not registered "
                    f"(registered: {', '.join(registered_metrics())})"
                )
            if need not in _METRICS:
                raise KeyError(
                    f"benchmark metric {name!r} needs {need!r}, a metric across models "
                    "(needs are per-model metrics)"
                )
        depth[name] = 1 + max((visit(n, (*chain, name)) for n in needs), default=-1)
        return depth[name]

    for n in names:
        visit(n, ())
    return depth


def compute_run_metrics(view: RunScored, names: list[str]) -> dict[str, Any]:
    """Every named metric across models (per-model names are skipped)."""
    _check_known(names)
    return {n: _RUN_METRICS[n](view) for n in names if n in _RUN_METRICS}


def compute_metrics(scored: Scored, names: list[str]) -> dict[str, Any]:
    """Every named per-model metric, by depth (``_depths``: those that need nothing first,
    then those that need only those, ...) and in the named order within a depth, which is
    also the order of the result. A metric's needs are computed before it, once, even when
    not named (then they are not returned). Metrics across models are skipped here
    (``compute_run_metrics``)."""
    _check_known(names)
    listed = list(dict.fromkeys(n for n in names if n in _METRICS))
    depth = _depths(listed)
    results: dict[str, Any] = {}

    def compute(name: str) -> None:
        if name in results:
            return
        needs = _NEEDS.get(name)
        if not needs:
            results[name] = _METRICS[name](scored)  # type: ignore[call-arg]
            return
        for n in needs:
            compute(n)
        view = MappingProxyType(dict(results))  # what was computed before it, read-only
        results[name] = _METRICS[name](scored, view)  # type: ignore[call-arg]

    ordered = sorted(listed, key=lambda n: depth[n])  # stable: named order within a depth
    for n in ordered:
        compute(n)
    return {n: results[n] for n in ordered}


def headline(result: Any) -> float:
    v = result.get("value") if isinstance(result, dict) else result
    if isinstance(v, CI):
        return v.point
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def plain(obj: Any) -> Any:
    """JSON-able copy of metric output (CIs become dicts, NaN becomes None)."""
    if isinstance(obj, CI):
        return plain(obj.as_dict())
    if is_dataclass(obj) and not isinstance(obj, type):
        return plain(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        f = float(obj)
        return None if np.isnan(f) else f
    return obj


# -- built-in metrics ----------------------------------------------------------------------
def _targets(s: Scored, kind: tuple[type, ...] | None = None) -> list[str]:
    out = []
    for t in s.settings.target_fields or sorted(s.decisions["field"].unique()):
        try:
            ft = s.project.field(t)
        except KeyError:
            continue
        if kind is None or isinstance(ft, kind):
            out.append(t)
    return out


@metric("accuracy")
def _accuracy(s: Scored) -> dict[str, Any]:
    """Micro accuracy over every target decision, and per target field."""
    d = s.decisions
    by_field = {
        f: M.accuracy(s.field_rows(f)["correct"].astype(float), **s.boot_args(s.field_rows(f)))
        for f in _targets(s)
        if len(s.field_rows(f))
    }
    value = M.accuracy(d["correct"].astype(float), **s.boot_args(d)) if len(d) else None
    return {"value": value, "by_field": by_field}


@metric("credit")
def _credit(s: Scored) -> dict[str, Any]:
    """Mean partial credit: tolerance for numbers, Jaccard for sets, group credit for taxonomies."""
    d = s.decisions
    by_field = {
        f: M.accuracy(s.field_rows(f)["credit"], **s.boot_args(s.field_rows(f)))
        for f in _targets(s)
        if len(s.field_rows(f))
    }
    return {
        "value": M.accuracy(d["credit"], **s.boot_args(d)) if len(d) else None,
        "by_field": by_field,
    }


@metric("macro_f1")
def _macro_f1(s: Scored) -> dict[str, Any]:
    by_field = {}
    for f in _targets(s, (SingleChoice, Boolean)):
        rows = s.field_rows(f)
        if len(rows):
            by_field[f] = M.macro_f1(
                rows["gold"].tolist(), rows["pred"].tolist(), **s.boot_args(rows)
            )
    first = next(iter(by_field.values()), None)
    primary = s.settings.action_field
    return {"value": by_field.get(primary, first) if primary else first, "by_field": by_field}


@metric("per_class")
def _per_class(s: Scored) -> dict[str, Any]:
    out = {}
    for f in _targets(s, (SingleChoice, Boolean)):
        rows = s.field_rows(f)
        if not len(rows):
            continue
        ft = s.project.field(f)
        cats = [str(c) for c in (ft.categories() or [])]
        present = set(map(str, rows["gold"])) | {str(p) for p in rows["pred"] if p is not None}
        labels, m = M.confusion(
            rows["gold"].tolist(), rows["pred"].tolist(), [c for c in cats if c in present]
        )
        out[f] = {
            "classes": M.per_class(rows["gold"].tolist(), rows["pred"].tolist()),
            "confusion": {"labels": labels, "matrix": m.tolist()},
        }
    return {"value": float("nan"), "by_field": out}


@metric("acceptability")
def _acceptability(s: Scored) -> dict[str, Any]:
    out = {}
    for f in _targets(s, (Boolean,)):
        rows = s.field_rows(f)
        if len(rows):
            out[f] = M.binary_scores(
                rows["gold"].tolist(), rows["pred"].tolist(), **s.boot_args(rows)
            )
    first = next(iter(out.values()), None)
    return {"value": first["f1"] if first else None, "by_field": out}


def confidence_value(ft: Any, v: Any) -> float | None:
    """Stated confidence as a number in [0, 1]: numbers as given (percent if > 1); an ordered
    choice maps its k-th of K levels to k/K (low/medium/high -> 1/3, 2/3, 1)."""
    if v is None:
        return None
    if isinstance(ft, Number) or isinstance(v, int | float):
        x = float(v)
        return x / 100 if x > 1 else x
    cats = ft.categories() if ft is not None else None
    if cats and v in cats:
        return (cats.index(v) + 1) / len(cats)
    return None


@metric("ece")
def _ece(s: Scored) -> dict[str, Any]:
    rows = s.primary_rows()
    rows = rows[rows["confidence"].notna()]
    if not len(rows):
        return {"value": None, "note": "no stated confidence in the answers"}
    r = M.ece(rows["confidence"].astype(float), rows["correct"].astype(float), **s.boot_args(rows))
    r["value"] = r["ece"]
    return r


@metric("naudc")
def _naudc(s: Scored) -> dict[str, Any]:
    axis = s.settings.conditions
    if axis is None:
        return {"value": None, "note": "no [benchmark.conditions] declared"}
    rows = s.decisions[s.decisions["condition"].notna()]
    r = M.naudc(
        rows["correct"].astype(float), rows["condition"].tolist(), axis.order, **s.boot_args(rows)
    )
    r["value"] = r["naudc"]
    return r


@metric("f2_detect")
def _f2(s: Scored) -> dict[str, Any]:
    e = s.entities
    if not len(e):
        return {"value": None}
    meta = s.decisions.drop_duplicates("item_id").set_index("item_id")
    e = e.copy()
    for col in ("parent", "stratum"):
        e[col] = e["item_id"].map(meta[col]) if col in meta else None
    ci = M.f_beta(e["tp"], e["fp"], e["fn"], beta=2.0, **s.boot_args(e))
    return {"value": ci, "counts": {k: int(e[k].sum()) for k in ("tp", "fp", "fn")}}
