"""Typed benchmark results: what crosses from ``truthline.benchmark`` to the CLI, the report,
the dashboards and the paper systems.

* ``EntryKey``: a run entry's identity (model, variant, condition, control) and the one way
  an entry is written (``label``; ``id`` is the form results are keyed by);
* ``BoardEntry``: one leaderboard row (``leaderboard``, ``model_metrics``);
* ``GoldComparison`` of ``SliceScores`` (with ``FieldBalanced``): ``compare_gold``;
* ``PairedMatrix`` of ``PairedCell``: ``paired_matrix``.

They are frozen: readers use attributes, and only the JSON edge (``--json``, ``report.json``,
a demo's summary) calls ``as_dict()``, which gives exactly the dict these results were before
they were typed (same keys, same order). Two things stay plain dicts inside them, on purpose:
a metric's result (its shape is the metric's own, and a plug-in may define it) and an
interval (a ``CI.as_dict()``, what ``fmt_ci`` and the thin-design note read).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from truthline.vocab import Slice

__all__ = [
    "BoardEntry",
    "EntryKey",
    "FieldBalanced",
    "GoldComparison",
    "PairedCell",
    "PairedMatrix",
    "SliceScores",
    "as_plain",
]

SIMULATED = " [SIMULATED]"
"""The marker of an entry whose answers are SIMULATED."""

CI = dict[str, Any]
"""An interval as results hold it: ``CI.as_dict()`` (point, low, high, n, clusters, ...)."""


class EntryKey(NamedTuple):
    """A run entry: one model under one prompt variant, condition and input control.

    A tuple (``model, variant, condition, control = key`` and ``key[0]`` work, and it equals
    the plain tuple), so code that kept entries as tuples reads it unchanged."""

    model: str
    variant: str = ""
    condition: str = "base"
    control: str = ""

    @classmethod
    def of(cls, row: Mapping[Any, Any]) -> EntryKey:
        """The key of a row holding ``model`` (and ``variant``, ``condition``, ``control``;
        missing or ``None`` ones take the defaults): a manifest entry, a stored result row,
        a sample record."""

        def get(name: str, default: str) -> str:
            v = row.get(name)
            return default if v is None else str(v)

        return cls(
            str(row["model"]), get("variant", ""), get("condition", "base"), get("control", "")
        )

    @property
    def is_rule(self) -> bool:
        """A rule baseline (``rule:...``): no model, no training distribution to share."""
        return self.model.startswith("rule:")

    @property
    def is_plain(self) -> bool:
        """No variant, the base condition, no control."""
        return (self.variant, self.condition, self.control) == ("", "base", "")

    @property
    def manifest_key(self) -> str:
        """``model|variant|condition|control`` (every part, empty ones too): the key of the
        entry in a run manifest's ``entries``."""
        return "|".join(self)

    @property
    def id(self) -> str:
        """``model|variant|condition|control`` without the empty parts, ``model`` alone for
        a plain entry: what results across entries are keyed by (``across_metrics``'s
        per-model tables, ``paired_matrix``'s entries)."""
        return self.label("|", wrap=("|", ""), name_base=True)

    def label(
        self,
        sep: str = ", ",
        *,
        wrap: tuple[str, str] = (" (", ")"),
        condition_last: bool = False,
        name_base: bool = False,
        parts: bool = True,
        simulated: bool = False,
        marker_first: bool = False,
    ) -> str:
        """The one way an entry is written: the model, then its parts that are not the
        default (variant, condition unless ``base``, control; empty ones left out) joined by
        ``sep`` inside ``wrap``, then `` [SIMULATED]`` when ``simulated``.

        The defaults give the report's form, ``"m (v3, gt) [SIMULATED]"``. The places that
        write entries differ in exactly these parameters:

        * ``sep="/"``, ``marker_first``: ``benchmark show`` (``"m [SIMULATED] (v3/gt)"``);
        * ``parts=False``: ``benchmark run``, whose table has the parts in their own columns;
        * ``wrap=(" [", "]")``, ``condition_last``: the dashboards' Benchmark page
          (``"m [v3, no-image, gt]"``);
        * ``" · "``, ``wrap=(" · ", "")``, ``condition_last``: the Samples page's items;
        * ``"|"``, ``wrap=("|", "")``, ``name_base``: ``id`` — the condition is named even
          when it is ``base`` (``"m|v3|base"``), except for a plain entry (``"m"``).
        """
        extras: list[str] = []
        if parts:
            named = self.condition != "base" or (name_base and not self.is_plain)
            cond = self.condition if named else ""
            shown = (
                (self.variant, self.control, cond)
                if condition_last
                else (self.variant, cond, self.control)
            )
            extras = [x for x in shown if x]
        body = f"{wrap[0]}{sep.join(extras)}{wrap[1]}" if extras else ""
        marker = SIMULATED if simulated else ""
        return self.model + (marker + body if marker_first else body + marker)

    def as_dict(self) -> dict[str, str]:
        return {
            "model": self.model,
            "variant": self.variant,
            "condition": self.condition,
            "control": self.control,
        }


@dataclass(frozen=True)
class BoardEntry:
    """One entry of a run with outcome accounting and the project's metrics: a leaderboard
    row. Model failures are scored wrong and stay in ``decisions``; infrastructure-missing
    answers are left out (``coverage``); ``format_rate`` is the share of returned answers
    that parse."""

    run_id: str
    key: EntryKey
    slice: str
    decisions: int
    requests: int
    parsed: int
    model_failure: int
    error: int
    infra_missing: int
    coverage: float
    format_rate: float
    failure_reasons: dict[str, int]
    cost_usd: float
    simulated: bool
    metrics: dict[str, Any]
    """Metric name -> its result (plain data, the metric's own shape)."""

    @property
    def model(self) -> str:
        return self.key.model

    @property
    def accuracy(self) -> CI:
        """Accuracy over every target decision with its CI (``{}`` without decisions)."""
        return (self.metrics.get("accuracy") or {}).get("value") or {}

    def headline(self, name: str) -> float | None:
        """A metric's headline number: its value's point (or the value itself)."""
        v = (self.metrics.get(name) or {}).get("value")
        if isinstance(v, dict):
            return v.get("point")
        return v

    def as_dict(self) -> dict[str, Any]:
        """The leaderboard row as ``--json``, ``report.json`` and the demo print it."""
        return {
            "run_id": self.run_id,
            **self.key.as_dict(),
            "slice": self.slice,
            "decisions": self.decisions,
            "requests": self.requests,
            "parsed": self.parsed,
            "model_failure": self.model_failure,
            "error": self.error,
            "infra_missing": self.infra_missing,
            "coverage": self.coverage,
            "format_rate": self.format_rate,
            "failure_reasons": self.failure_reasons,
            "cost_usd": self.cost_usd,
            "simulated": self.simulated,
            "metrics": self.metrics,
            "accuracy": self.accuracy,
        }


_SLICE_ATTR = {
    Slice.ALL: "all",
    Slice.BLIND: "blind",
    Slice.ANCHORED: "anchored",
    Slice.VLM_SOURCED: "vlm_sourced",
}


@dataclass(frozen=True)
class FieldBalanced:
    """Field-balanced accuracy per gold slice: the mean of per-field accuracies over the
    ``fields`` every slice holds, and its inflation over blind gold in pp. Without common
    fields only ``fields`` (empty) is set."""

    fields: tuple[str, ...]
    blind: CI | None = None
    anchored: CI | None = None
    vlm_sourced: CI | None = None
    inflation_anchored_pp: CI | None = None
    inflation_vlm_sourced_pp: CI | None = None

    def as_dict(self) -> dict[str, Any]:
        if not self.fields:
            return {"fields": list(self.fields)}
        return {
            "fields": list(self.fields),
            "blind": self.blind,
            "anchored": self.anchored,
            "vlm-sourced": self.vlm_sourced,
            "inflation_anchored_pp": self.inflation_anchored_pp,
            "inflation_vlm-sourced_pp": self.inflation_vlm_sourced_pp,
        }


@dataclass(frozen=True)
class SliceScores:
    """One entry's accuracy on each gold slice (``None``: the slice has no decision of it)
    and the inflation of anchored / VLM-sourced over blind gold in pp, all from one paired
    resampling draw."""

    key: EntryKey
    all: CI | None
    blind: CI | None
    anchored: CI | None
    vlm_sourced: CI | None
    inflation_anchored_pp: CI | None
    inflation_vlm_sourced_pp: CI | None
    field_balanced: FieldBalanced

    @classmethod
    def of(
        cls,
        key: EntryKey,
        cis: Mapping[str, CI | None],
        inflation: Mapping[str, CI | None],
        field_balanced: FieldBalanced,
    ) -> SliceScores:
        """From per-slice accuracies and the inflations over blind, keyed by slice name
        (``compare_gold`` and ``compare_labels`` build theirs the same way)."""
        return cls(
            key=key,
            all=cis["all"],
            blind=cis["blind"],
            anchored=cis["anchored"],
            vlm_sourced=cis["vlm-sourced"],
            inflation_anchored_pp=inflation["anchored"],
            inflation_vlm_sourced_pp=inflation["vlm-sourced"],
            field_balanced=field_balanced,
        )

    @property
    def model(self) -> str:
        return self.key.model

    def ci(self, slice_: str) -> CI | None:
        """The accuracy on one gold slice (``"all"``, ``"blind"``, ``"anchored"``,
        ``"vlm-sourced"``)."""
        return getattr(self, _SLICE_ATTR[Slice(slice_)])

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.key.as_dict(),
            **{sl: self.ci(sl) for sl in Slice},
            "inflation_anchored_pp": self.inflation_anchored_pp,
            "inflation_vlm-sourced_pp": self.inflation_vlm_sourced_pp,
            "paired": True,
            "field_balanced": self.field_balanced.as_dict(),
        }


@dataclass(frozen=True)
class GoldComparison:
    """``compare_gold``: every entry of a run on blind vs anchored vs VLM-sourced gold."""

    run_id: str
    gold_snapshot: str | None
    models: tuple[SliceScores, ...]
    resamples: int
    seed: int
    reference: str = "gold"
    """``"gold"``: the run's gold sliced by provenance (``compare_gold``); ``"labels"``: each
    arm's tier-1 labels as references of their own (``compare_labels``, the paper's design)."""
    mean_inflation_anchored_ci: CI | None = None
    """The mean over entries of anchored − blind (pp) with its CI from one shared draw
    (``compare_labels``); ``None`` where entries were drawn apart (``compare_gold``)."""
    mean_inflation_vlm_sourced_ci: CI | None = None
    references: dict[str, int] | None = None
    """Labels and items serving each reference slice (``compare_labels``)."""

    def _inflations(self, balanced: bool) -> list[float]:
        """Each model entry's anchored − blind (pp); rule baselines are shown per row but
        not averaged or counted (the finding is about models, SteelBench: "all 9 models")."""
        models = [m for m in self.models if not m.key.is_rule]
        if balanced:
            return [
                m.field_balanced.inflation_anchored_pp["point"]
                for m in models
                if m.field_balanced.inflation_anchored_pp
            ]
        return [m.inflation_anchored_pp["point"] for m in models if m.inflation_anchored_pp]

    @property
    def mean_inflation_pp(self) -> float | None:
        """Mean over the model entries (not rule baselines) of anchored minus blind
        accuracy, in pp."""
        infl = self._inflations(False)
        return float(np.mean(infl)) if infl else None

    @property
    def higher_on_anchored(self) -> str:
        """``"2 of 3"``: the model entries scoring higher on anchored than on blind gold."""
        infl = self._inflations(False)
        return f"{sum(1 for v in infl if v > 0)} of {len(infl)}"

    @property
    def mean_inflation_field_balanced_pp(self) -> float | None:
        bal = self._inflations(True)
        return float(np.mean(bal)) if bal else None

    @property
    def higher_on_anchored_field_balanced(self) -> str:
        bal = self._inflations(True)
        return f"{sum(1 for v in bal if v > 0)} of {len(bal)}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "gold_snapshot": self.gold_snapshot,
            "models": [m.as_dict() for m in self.models],
            "mean_inflation_pp": self.mean_inflation_pp,
            "higher_on_anchored": self.higher_on_anchored,
            "mean_inflation_field_balanced_pp": self.mean_inflation_field_balanced_pp,
            "higher_on_anchored_field_balanced": self.higher_on_anchored_field_balanced,
            "resamples": self.resamples,
            "seed": self.seed,
            "paired": True,
            "reference": self.reference,
            "mean_inflation_anchored_ci": self.mean_inflation_anchored_ci,
            "mean_inflation_vlm-sourced_ci": self.mean_inflation_vlm_sourced_ci,
            "references": self.references,
        }


@dataclass(frozen=True)
class PairedCell:
    """Entry ``a`` minus entry ``b`` in accuracy on their ``n`` common decisions;
    distinguishable when the paired 95% CI excludes zero."""

    a: EntryKey
    b: EntryKey
    n: int
    difference: CI
    distinguishable: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.id,
            "b": self.b.id,
            "n": self.n,
            "difference": self.difference,
            "distinguishable": self.distinguishable,
        }


@dataclass(frozen=True)
class PairedMatrix:
    """``paired_matrix``: every two entries of a run that share decisions."""

    run_id: str
    entries: tuple[EntryKey, ...]
    pairs: tuple[PairedCell, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "entries": [e.id for e in self.entries],
            "pairs": [c.as_dict() for c in self.pairs],
        }


def as_plain(x: Any) -> Any:
    """``x`` with every typed result in it (in dicts and lists) as its ``as_dict()``: the
    JSON edge."""
    if hasattr(x, "as_dict") and not isinstance(x, type):
        return x.as_dict()
    if isinstance(x, dict):
        return {k: as_plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [as_plain(v) for v in x]
    return x
