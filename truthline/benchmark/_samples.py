"""Per-sample logs: every model answer behind a figure, as a record a person can read.

A summary number (accuracy 0.71, 12 model failures) is only as good as the answers behind
it. A sample is one (item, model, variant, condition, control) of a benchmark run, or one
prefill prediction: the rendered prompt as sent (``responses.prompt``; answers stored
before migration 3 have only its hash), the raw output, the parsed values, the outcome,
every scored decision (parsed vs gold, correct, credit) and the score per field, the
item's strata and Label Studio tasks, cost and latency, and whether the answer was
``reused`` (stored before the run started, e.g. by a prefill: ``reused_from`` names it;
its cost is not this run's) or fresh. ``benchmark samples`` exports them
as JSONL; the dashboard's Samples page browses them with the same ``SampleFilter`` the
benchmark page's links carry as query parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import select

from truthline.audit._gold import in_slice
from truthline.benchmark._types import EntryKey
from truthline.errors import TruthlineError
from truthline.project import Project
from truthline.store import Store, tables

OUTCOMES = ("ok", "refused", "truncated", "parse_error", "infra_missing", "error")
"""A sample's outcome: parsed (``ok``); the model failures split by why (``refused``,
``truncated``, ``parse_error``: unparseable, empty, several objects ...); ``infra_missing``
(no answer after retries: excluded from scores, counted as coverage); ``error`` (a rule
baseline that raised)."""

_STATUS_GROUPS = {"model_failure": ("refused", "truncated", "parse_error"), "parsed": ("ok",)}


def outcome_of(status: str, reason: str | None) -> str:
    """The outcome word of a stored status and failure reason."""
    if status == "parsed":
        return "ok"
    if status == "model_failure":
        return reason if reason in ("refused", "truncated") else "parse_error"
    return status


def task_url(server_url: str, project_id: int, task_id: int) -> str:
    """The Label Studio page of one task (the Data Manager opened on it)."""
    return f"{server_url.rstrip('/')}/projects/{project_id}/data?task={task_id}"


@dataclass(frozen=True)
class SampleFilter:
    """Which samples to show. Entry fields (``model``, ``variant``, ``condition``,
    ``control``), ``outcome`` (an outcome word or a status: ``model_failure`` covers the
    three failure outcomes), ``stratum`` (the ``|``-joined values of the benchmark's strata)
    and ``cond`` (the item's condition value) select samples; ``field``, ``correct``,
    ``gold`` (the gold value as text) and ``slice`` (gold provenance slice) select
    decisions, and a sample is kept when at least one of its decisions matches them all.
    ``None`` matches anything."""

    model: str | None = None
    variant: str | None = None
    condition: str | None = None
    control: str | None = None
    outcome: str | None = None
    stratum: str | None = None
    cond: str | None = None
    field: str | None = None
    correct: bool | None = None
    gold: str | None = None
    slice: str | None = None

    @classmethod
    def for_entry(cls, key: EntryKey, **more: Any) -> SampleFilter:
        """The samples of one run entry (``more``: further filters)."""
        return cls(
            model=key.model,
            variant=key.variant or "",
            condition=key.condition or "base",
            control=key.control or "",
            **more,
        )

    @property
    def on_decisions(self) -> bool:
        return any(v is not None for v in (self.field, self.correct, self.gold, self.slice))

    def query(self) -> dict[str, str]:
        """The filter as URL query parameters (what the benchmark page links carry)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[f.name] = ("1" if v else "0") if isinstance(v, bool) else str(v)
        return out

    @classmethod
    def from_query(cls, params: Mapping[str, Any]) -> SampleFilter:
        """The filter named by query parameters; unknown parameters are ignored."""
        kw: dict[str, Any] = {}
        for f in fields(cls):
            v = params.get(f.name)
            if isinstance(v, list):
                v = v[0] if v else None
            if v in (None, ""):
                continue
            kw[f.name] = str(v) in ("1", "true", "True", "yes") if f.name == "correct" else str(v)
        return cls(**kw)

    def keeps(self, rec: Mapping[str, Any]) -> bool:
        """Whether the sample passes (sample-level fields, then any decision)."""
        for name in ("model", "variant", "condition", "control", "stratum"):
            want = getattr(self, name)
            if want is not None and str(rec.get(name) or "") != want:
                return False
        if self.cond is not None and str(rec.get("condition_value")) != self.cond:
            return False
        if self.outcome is not None:
            allowed = _STATUS_GROUPS.get(self.outcome, (self.outcome,))
            if rec["outcome"] not in allowed and rec["status"] != self.outcome:
                return False
        return not self.on_decisions or bool(self.decisions(rec))

    def decisions(self, rec: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The sample's decisions this filter selects (all of them without decision fields)."""
        out = []
        for d in rec.get("decisions") or []:
            if self.field is not None and d["field"] != self.field:
                continue
            if self.correct is not None and bool(d["correct"]) != self.correct:
                continue
            if self.gold is not None and _text(d["gold"]) != self.gold:
                continue
            if self.slice is not None and not in_slice(
                self.slice, d.get("provenance") or "", rec.get("arm")
            ):
                continue
            out.append(d)
        return out


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def run_samples(
    store: Store, project: Project, run_id: str, flt: SampleFilter | None = None
) -> list[dict[str, Any]]:
    """Every sample of a benchmark run (those ``flt`` keeps), in model, item order."""
    r, s, it = tables.run_results, tables.responses, tables.items
    with store.begin() as conn:
        run = conn.execute(
            select(tables.runs.c.manifest, tables.runs.c.project).where(tables.runs.c.id == run_id)
        ).first()
        if run is None:
            raise TruthlineError(
                f"no benchmark run {run_id!r}; list runs with `truthline benchmark runs`"
            )
        if run.project != project.name:
            raise TruthlineError(f"run {run_id!r} belongs to project {run.project!r}")
        rows = conn.execute(
            select(r, *_response_cols(), *_item_cols())
            .select_from(r.join(it, it.c.id == r.c.item_id).outerjoin(s, s.c.id == r.c.response_id))
            .where(r.c.run_id == run_id)
            .order_by(r.c.model, r.c.variant, r.c.condition, r.c.control, r.c.item_id)
        ).all()
        context = _Context.load(conn, project)
        origins = _Origins(conn, run_id, run.manifest or {})
    specs = {k: e.get("spec") for k, e in ((run.manifest or {}).get("entries") or {}).items()}
    out = []
    for row in rows:
        m = row._mapping
        scores = m["scores"] or {}
        rec = context.record(m, scores.get("decisions") or [], scores.get("entities") or {})
        rec.update(origins.of(m))
        rec.update(
            run_id=run_id,
            model=m["model"],
            model_spec=specs.get(EntryKey.of(m).manifest_key) or m["model_spec"],
            variant=m["variant"],
            condition=m["condition"],
            control=m["control"],
            status=m["status"],
            outcome=outcome_of(m["status"], scores.get("reason", m["reason"])),
            reason=scores.get("reason", m["reason"]),
        )
        if flt is None or flt.keeps(rec):
            out.append(_ordered(rec))
    return out


def prefill_samples(
    store: Store, project: Project, flt: SampleFilter | None = None
) -> list[dict[str, Any]]:
    """Every prefill prediction as a sample, scored against the latest gold where there is
    one (``model`` is the prediction's model version, ``condition`` is ``prefill``)."""
    from truthline.benchmark._gold import load_gold
    from truthline.benchmark._runner import targets_of
    from truthline.benchmark._scoring import score_answer

    try:
        gold = load_gold(store, project.name)
    except TruthlineError:  # no gold yet: the predictions still show, unscored
        gold = None
    by_item = {g.item_id: g for g in gold.items} if gold else {}
    targets = targets_of(project, gold) if gold else []
    p, s, it = tables.predictions, tables.responses, tables.items
    with store.begin() as conn:
        rows = conn.execute(
            select(
                p.c.model_version,
                p.c["values"],
                p.c.status.label("prediction_status"),
                s.c.status.label("response_status"),
                *_response_cols(),
                *_item_cols(),
                p.c.item_id,
                p.c.response_id,
            )
            .select_from(p.join(it, it.c.id == p.c.item_id).outerjoin(s, s.c.id == p.c.response_id))
            .where(p.c.project == project.name)
            .order_by(p.c.model_version, p.c.item_id)
        ).all()
        context = _Context.load(conn, project)
    out = []
    for row in rows:
        m = row._mapping
        g = by_item.get(int(m["item_id"]))
        scored: dict[str, Any] = {"decisions": [], "entities": {}}
        if g is not None:
            values = m["values"] if m["prediction_status"] == "parsed" else None
            scored = score_answer(project, g.values, g.provenance, values, targets)
        rec = context.record(m, scored["decisions"], scored["entities"])
        status = m["response_status"] or m["prediction_status"]
        rec.update(
            run_id=None,
            model=m["model_version"],
            model_spec=m["model_spec"],
            variant="",
            condition="prefill",
            control="",
            status=status,
            outcome=outcome_of(status, m["reason"]),
            reason=m["reason"],
            parsed=m["values"],
        )
        if flt is None or flt.keeps(rec):
            out.append(_ordered(rec))
    return out


def _response_cols() -> list[Any]:
    s = tables.responses
    return [
        s.c.model_spec,
        s.c.reason,
        s.c.raw_response,
        s.c.parsed,
        s.c.field_errors,
        s.c.prompt,
        s.c.prompt_hash,
        s.c.image_hashes,
        s.c.tokens_in,
        s.c.tokens_out,
        s.c.tokens_thinking,
        s.c.cost_usd,
        s.c.latency_s,
        s.c.attempts,
        s.c.simulated,
        s.c.created_at.label("response_created_at"),
        s.c.purpose.label("response_purpose"),
    ]


class _Origins:
    """Which answers of a run were reused (stored before the run started) and where each
    came from: its response id, the purpose that stored it, the first other run that
    scored it (a benchmark answer), when it was stored and what it cost then."""

    def __init__(self, conn: Any, run_id: str, manifest: Mapping[str, Any]):
        from truthline.benchmark._runner import run_start

        self.since = run_start(manifest) if manifest.get("started_at") else None
        r, t = tables.run_results, tables.runs
        mine = select(r.c.response_id).where(r.c.run_id == run_id, r.c.response_id.is_not(None))
        self.runs: dict[int, str] = {}
        """Response id -> the first other run that scored it."""
        for rid, run in conn.execute(
            select(r.c.response_id, r.c.run_id)
            .select_from(r.join(t, t.c.id == r.c.run_id))
            .where(r.c.run_id != run_id, r.c.response_id.in_(mine))
            .order_by(t.c.created_at, r.c.run_id)
        ):
            self.runs.setdefault(int(rid), str(run))

    def of(self, m: Any) -> dict[str, Any]:
        stored = m["response_created_at"]
        if stored is not None and stored.tzinfo is None:
            stored = stored.replace(tzinfo=UTC)
        if stored is None or self.since is None or stored >= self.since:
            return {"reused": False, "reused_from": None}
        rid = int(m["response_id"])
        return {
            "reused": True,
            "reused_from": {
                "response_id": rid,
                "purpose": m["response_purpose"],
                "run_id": self.runs.get(rid),
                "stored_at": stored.isoformat(),
                "cost_usd": float(m["cost_usd"] or 0.0),
            },
            "cost_usd": 0.0,
        }


def _item_cols() -> list[Any]:
    it = tables.items
    return [
        it.c.key,
        it.c.parent,
        it.c.meta,
        it.c.media,
        it.c.media_root,
        it.c.media_kind,
    ]


@dataclass
class _Context:
    """What every record of a project shares: strata, the condition column, item arms and
    Label Studio tasks."""

    strata: list[str]
    cond_col: str | None
    arms: dict[int, str]
    tasks: dict[int, list[dict[str, Any]]]

    @classmethod
    def load(cls, conn: Any, project: Project) -> _Context:
        aa, lt, lp = tables.arm_assignments, tables.ls_tasks, tables.ls_projects
        arms = dict(
            conn.execute(select(aa.c.item_id, aa.c.arm).where(aa.c.project == project.name)).all()
        )
        tasks: dict[int, list[dict[str, Any]]] = {}
        for item_id, server, pid, tid, arm in conn.execute(
            select(lt.c.item_id, lt.c.server_url, lt.c.ls_project_id, lt.c.ls_task_id, lp.c.arm)
            .select_from(
                lt.join(
                    lp,
                    (lp.c.ls_project_id == lt.c.ls_project_id)
                    & (lp.c.server_url == lt.c.server_url),
                )
            )
            .where(lp.c.project == project.name)
            .order_by(lt.c.item_id, lp.c.arm)
        ):
            tasks.setdefault(int(item_id), []).append(
                {"arm": arm, "project_id": pid, "task_id": tid, "url": task_url(server, pid, tid)}
            )
        b = project.benchmark
        return cls(list(b.strata), b.conditions.column if b.conditions else None, arms, tasks)

    def record(
        self, m: Any, decisions: list[dict[str, Any]], entities: dict[str, Any]
    ) -> dict[str, Any]:
        """The item, response and score parts of one sample."""
        meta = m["meta"] or {}
        item_id = int(m["item_id"])
        prompt = m["prompt"]
        return {
            "item_id": item_id,
            "item": m["key"],
            "parent": m["parent"],
            "arm": self.arms.get(item_id),
            "strata": {s: meta.get(s) for s in self.strata},
            "stratum": "|".join(str(meta.get(s, "")) for s in self.strata) if self.strata else None,
            "condition_value": None if self.cond_col is None else meta.get(self.cond_col),
            "media_kind": m["media_kind"],
            "media": [str(Path(m["media_root"]) / p) for p in (m["media"] or [])],
            "images_sent": len(m["image_hashes"] or []),
            "prompt": prompt,
            "prompt_hash": m["prompt_hash"],
            "prompt_note": None
            if prompt is not None or m["prompt_hash"] is None
            else "prompt text not stored (answer stored before truthline kept prompt texts)",
            "raw_output": m["raw_response"],
            "parsed": m["parsed"],
            "field_errors": m["field_errors"] or {},
            "decisions": decisions,
            "fields": per_field(decisions),
            "entities": entities,
            "n_decisions": len(decisions),
            "n_correct": sum(bool(d["correct"]) for d in decisions),
            "cost_usd": float(m["cost_usd"] or 0.0),
            "tokens": {
                "in": int(m["tokens_in"] or 0),
                "out": int(m["tokens_out"] or 0),
                "thinking": int(m["tokens_thinking"] or 0),
            },
            "latency_s": m["latency_s"],
            "attempts": m["attempts"],
            "simulated": bool(m["simulated"]),
            "response_id": m.get("response_id"),
            "label_studio": self.tasks.get(item_id, []),
        }


def per_field(decisions: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Score per field of one sample: decisions, correct ones, accuracy and mean credit."""
    out: dict[str, dict[str, Any]] = {}
    for d in decisions:
        f = out.setdefault(d["field"], {"n": 0, "correct": 0, "credit": 0.0})
        f["n"] += 1
        f["correct"] += int(bool(d["correct"]))
        f["credit"] += float(d.get("credit") or 0.0)
    for f in out.values():
        f["accuracy"] = f["correct"] / f["n"]
        f["credit"] = f["credit"] / f["n"]
    return out


_FIRST = (
    "run_id",
    "item",
    "item_id",
    "model",
    "model_spec",
    "variant",
    "condition",
    "control",
    "status",
    "outcome",
    "reason",
)


def _ordered(rec: dict[str, Any]) -> dict[str, Any]:
    """Identity and outcome first, then the rest (a JSONL line reads left to right)."""
    return {**{k: rec[k] for k in _FIRST}, **{k: v for k, v in rec.items() if k not in _FIRST}}


def write_jsonl(records: Iterable[Mapping[str, Any]], out: Path | TextIO) -> int:
    """One JSON object per line; returns the number written."""
    if isinstance(out, Path):
        with out.open("w", encoding="utf-8") as fh:
            return write_jsonl(records, fh)
    n = 0
    for rec in records:
        out.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
        n += 1
    return n


def summarize(records: Iterable[Mapping[str, Any]], flt: SampleFilter | None = None) -> dict:
    """Counts behind a filter: samples, outcomes, and the decisions it selects (with how
    many are correct), so a page can show the same n the summary table showed."""
    flt = flt or SampleFilter()
    outcomes: dict[str, int] = {}
    n = decisions = correct = 0
    for rec in records:
        n += 1
        outcomes[rec["outcome"]] = outcomes.get(rec["outcome"], 0) + 1
        ds = flt.decisions(rec)
        decisions += len(ds)
        correct += sum(bool(d["correct"]) for d in ds)
    return {
        "samples": n,
        "outcomes": outcomes,
        "decisions": decisions,
        "correct": correct,
        "filter": asdict(flt),
    }


__all__ = [
    "OUTCOMES",
    "SampleFilter",
    "outcome_of",
    "per_field",
    "prefill_samples",
    "run_samples",
    "summarize",
    "task_url",
    "write_jsonl",
]
