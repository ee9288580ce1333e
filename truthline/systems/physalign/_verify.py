"""Blind-first double verification and third-reviewer adjudication (spec §12) in Label Studio.

1. Two reviewers each get their OWN project (``verify_blind.xml``): the public probe only,
   imported without predictions, targets or source annotations. The task data is put
   through the leak check before it is imported.
2. Pulled blind answers are decided: **approved_direct** iff both answers agree field by
   field under the scoring contract's equality (alias ``strip().upper()``, reading N), both
   equal the private target and neither raises a QC flag. Anything else needs adjudication.
3. The adjudication project (``adjudicate.xml``) is created only after both blind answers
   were pulled (their ``created_at`` is on record first). The third reviewer sees both
   answers, the private target and the source observation and decides: approve, correct the
   target (regenerated from the alias map; it enters the release only after a fresh blind
   re-verification of the corrected value, see ``_reverify``), correct the probe, or
   withhold. A probe correction withholds the probe and flags its siblings
   (same parent) for review.
4. ``private/review.jsonl`` keeps the blind answers with their timestamps, the adjudication
   and the final decision with who decided and when.

Both are Label Studio project kinds (``physalign.verify``, ``physalign.adjudicate``) pushed
and pulled through the store (``truthline.annotate.push_units`` / ``pull_units``) in the
release's scope; the exposure log records that each blind reviewer saw their own project's
probe and, for an adjudicator, both blind answers, the target and the source observation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.annotate import (
    LSClient,
    ProjectKind,
    ReadBack,
    UnitAnnotation,
    ls_project_row,
    ls_project_rows,
    project_kind,
    pull_units,
    push_units,
)
from truthline.annotate._pull import source_id
from truthline.errors import TruthlineError
from truthline.store import Store, json_hash
from truthline.systems.physalign._leak import check as leak_check
from truthline.systems.physalign._ls import (
    annotator_of,
    data_uri,
    export_tasks,
    label_config,
    migrate_state,
    pushed_tasks,
    release_scope,
    simulated_users,
    submitted,
)
from truthline.systems.physalign._prompt import anchor_text, candidate_lines
from truthline.systems.physalign._records import read_jsonl, write_jsonl

REVIEW = "private/review.jsonl"
QC_FLAGS = (
    "anchor_mislocalized",
    "question_unclear",
    "candidate_missing_or_indistinguishable",
    "answer_not_supported_by_evidence",
    "public_input_leaks_answer",
)
OUTCOMES = {
    "approve_target": "approved_adjudicated",
    "correct_target_regenerate": "corrected_regenerated",
    "correct_probe_regenerate": "withheld",
    "withhold_ambiguous": "withheld",
}


def _norm_read(text: str | None, rules: list[str]) -> str | None:
    from truthline.benchmark._scoring import read_normal_form

    return None if text is None else read_normal_form(text, rules)


def _load(release: Path) -> tuple[list[dict], dict[str, dict], list[dict]]:
    release = Path(release)
    public = read_jsonl(release / "public" / "probes.jsonl")
    private = {p["probe_id"]: p for p in read_jsonl(release / "private" / "targets.jsonl")}
    records = read_jsonl(release / "private" / "annotations.jsonl")
    return public, private, records


def _state_dir(release: Path) -> Path:
    return Path(release) / "private"


def _check_reviewers(reviewers: list[str]) -> list[str]:
    from truthline.annotate._users import check_emails

    reviewers = check_emails(reviewers)
    if len(reviewers) != 2:
        raise TruthlineError(
            f"--reviewer: blind verification needs exactly two different reviewers, got "
            f"{len(reviewers)} ({', '.join(reviewers)})"
        )
    return reviewers


def blind_task(pub: dict[str, Any], release: Path, item_id: int | None = None) -> dict[str, Any]:
    """The task a blind reviewer sees: the public probe and nothing else (``item_id``, the
    probe's store item, is added by the push when not given)."""
    fields = "; ".join(f"{k}: {v}" for k, v in pub["output_schema"].items())
    data: dict[str, Any] = {} if item_id is None else {"item_id": item_id}
    return data | {
        "question": f"{pub['question']} (answer {fields})",
        "problem_text": pub["problem"]["text"],
        "anchor_text": "Evidence "
        + anchor_text(pub)
        + "\nCandidates:\n"
        + "\n".join(candidate_lines(pub)),
        "localized_view": data_uri(Path(release) / "public" / pub["localized_views"][0]["path"]),
        "candidate_choices": [{"value": c["alias"]} for c in pub["candidates"]],
    }


# -- the two Label Studio project kinds ----------------------------------------------------
@dataclass
class ReleaseContext:
    """A release's public probes, private targets and source records (what the kinds need)."""

    release: Path
    public: list[dict[str, Any]]
    private: dict[str, dict[str, Any]]
    records: list[dict[str, Any]]
    checked: set[str] = field(default_factory=set)


_VERIFY_INSTRUCTION = (
    "Blind verification: answer the probe from the view and the text "
    "alone. Pick the candidate alias; for a reading question also type the literal "
    "content at R1 exactly as printed. Raise a QC flag for anything wrong with the probe."
)
_ADJUDICATE_INSTRUCTION = (
    "Third reviewer: both blind answers, the private target and the source "
    "observation are shown. Approve, correct the target (give the corrected role and "
    "reading), correct the probe, or withhold it as ambiguous; always give a rationale."
)


def _text(v: dict[str, Any]) -> str | None:
    return "\n".join(v.get("text") or []) or None


@project_kind("physalign.verify")
class VerifyKind(ProjectKind):
    """One reviewer's blind project: the public probe only, leak-checked, no predictions;
    read back as the reviewer's role, reading, QC flags and note."""

    fields = ("role", "read", "qc_flags", "note", "submitted_at")

    def label_config(self, context: Any) -> str:
        return label_config("verify_blind")

    def settings(self, context: Any) -> dict[str, Any]:
        return {
            "maximum_annotations": 1,
            "show_collab_predictions": False,
            "show_instruction": True,
            "expert_instruction": _VERIFY_INSTRUCTION,
        }

    def task(self, context: ReleaseContext, unit: dict[str, Any]) -> dict[str, Any]:
        return {"data": blind_task(unit, context.release)}

    def check(self, context: ReleaseContext, tasks: dict[str, dict[str, Any]]) -> None:
        """Blindness: no private value in anything a reviewer is shown."""
        texts = {
            f"blind task of probe {pid}": json.dumps(t["data"], ensure_ascii=False)
            for pid, t in tasks.items()
        }
        digest = json_hash(texts)
        if digest in context.checked:  # the other reviewer's identical tasks
            return
        leak_check(
            context.public, list(context.private.values()), context.records, extra_texts=texts
        )
        context.checked.add(digest)

    def read(self, context: Any, key: str, annotation: dict[str, Any]) -> ReadBack:
        role = read = note = None
        qc: list[str] = []
        for r in annotation.get("result") or []:
            v = r.get("value") or {}
            name = r.get("from_name")
            if name == "role":
                role = (v.get("choices") or [None])[0]
            elif name == "read":
                read = _text(v)
            elif name == "qc":
                qc = sorted(v.get("choices") or [])
            elif name == "note":
                note = _text(v)
        return ReadBack(
            {
                "role": role,
                "read": read,
                "qc_flags": qc,
                "note": note,
                "submitted_at": str(annotation.get("created_at")),
            }
        )


@project_kind("physalign.adjudicate")
class AdjudicateKind(ProjectKind):
    """The third reviewer's project: both blind answers, the private target and the source
    observation (all recorded in the exposure log); read back as the decision."""

    fields = ("decision", "corrected_role", "corrected_read", "rationale", "submitted_at")
    tier = 2

    def label_config(self, context: Any) -> str:
        return label_config("adjudicate")

    def settings(self, context: Any) -> dict[str, Any]:
        return {
            "maximum_annotations": 1,
            "show_instruction": True,
            "expert_instruction": _ADJUDICATE_INSTRUCTION,
        }

    def task(self, context: Any, unit: dict[str, Any]) -> dict[str, Any]:
        return {"data": dict(unit["data"])}

    def shown(self, context: Any, key: str, unit: dict[str, Any]) -> list[dict[str, Any]]:
        return list(unit["shown"])

    def read(self, context: Any, key: str, annotation: dict[str, Any]) -> ReadBack:
        got: dict[str, Any] = dict.fromkeys(self.fields)
        for r in annotation.get("result") or []:
            v = r.get("value") or {}
            if r.get("from_name") in ("decision", "corrected_role"):
                got[r["from_name"]] = (v.get("choices") or [None])[0]
            elif r.get("from_name") in ("corrected_read", "rationale"):
                got[r["from_name"]] = _text(v)
        got["submitted_at"] = str(annotation.get("created_at"))
        return ReadBack(got)


def _context(release: Path) -> ReleaseContext:
    public, private, records = _load(release)
    return ReleaseContext(Path(release), public, private, records)


def _migrate(store: Store, release: Path) -> None:
    """A release's legacy ``private/label_studio.json`` into the store (once)."""
    release = Path(release)
    if not (_state_dir(release) / "label_studio.json").is_file():
        return
    review = _read_review(release)
    _, private, _ = _load(release)

    def shown(url: str, slot: str, cohort: str, key: str) -> list[dict[str, Any]] | None:
        if slot != "adjudicate" or key not in review or key not in private:
            return None
        return _adjudication_shown(store, url, release, review[key], private[key])

    migrate_state(store, _state_dir(release), release_scope(release), shown)


def push_verify(
    store: Store, client: LSClient, release: Path, reviewers: list[str]
) -> dict[str, Any]:
    """One blind project per reviewer; tasks hold the public probe only (leak-checked)."""
    reviewers = _check_reviewers(reviewers)
    release = Path(release)
    client.whoami()
    _migrate(store, release)
    ctx = _context(release)
    units = {p["probe_id"]: p for p in ctx.public}
    return push_blind_projects(store, client, release, ctx, units, reviewers, "verify", "verify")


def push_blind_projects(
    store: Store,
    client: LSClient,
    release: Path,
    ctx: Any,
    units: dict[str, Any],
    reviewers: list[str],
    slot: str,
    what: str,
) -> dict[str, Any]:
    """One blind project per reviewer holding ``units`` (the first verification round, or
    the re-verification of corrected targets: ``slot``); each reviewer's exposure is known
    at push."""
    out = []
    for who in reviewers:
        rep = push_units(
            store,
            client,
            "physalign.verify",
            ctx,
            units,
            scope=release_scope(release),
            slot=slot,
            cohort=who,
            title=f"PhysAlign blind {what} [{who}]",
            annotators=[who],  # the reviewer's own project: their exposure is known now
        )
        out.append(
            {
                "created": rep.created,
                "existing": rep.existing,
                "recovered": rep.recovered,
                "reviewer": who,
                "ls_project_id": rep.ls_project_id,
                "project_url": rep.project_url,
            }
        )
    return {"probes": len(units), "projects": out}


def _blind_answer(ann: UnitAnnotation) -> dict[str, Any]:
    v = ann.values
    return {
        "reviewer": ann.annotator,
        "answer": {"role": v.get("role"), "read": v.get("read")},
        "qc_flags": list(v.get("qc_flags") or []),
        "note": v.get("note"),
        "submitted_at": v.get("submitted_at"),
        "ls_annotation_id": ann.ls_annotation_id,
    }


def _by_submission(anns: list[UnitAnnotation]) -> list[UnitAnnotation]:
    """Submitted (not skipped) annotations, oldest first as Label Studio dated them."""
    done = [a for a in anns if not a.skipped and a.values.get("submitted_at") is not None]
    return sorted(done, key=lambda a: (str(a.values["submitted_at"]), int(a.ls_annotation_id or 0)))


def _target(priv: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    t = priv["targets"]
    role = (t.get("owner") or t.get("referent"))["aliases"][0]
    read = (t.get("read") or {}).get("text")
    rules = (t.get("read") or {}).get("rules") or []
    return role, read, rules


def decide_blind(priv: dict[str, Any], blind: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """``(status, reasons)``: ``approved_direct``, ``needs_adjudication`` or ``pending_blind``."""
    if len(blind) < 2:
        return "pending_blind", [f"{len(blind)} of 2 blind answers"]
    role, read, rules = _target(priv)
    reasons = []
    a, b = blind[0], blind[1]

    def norm_role(x: Any) -> str | None:
        return x.strip().upper() if isinstance(x, str) else None

    if norm_role(a["answer"]["role"]) != norm_role(b["answer"]["role"]):
        reasons.append("the blind answers disagree on the role")
    for x in (a, b):
        if norm_role(x["answer"]["role"]) != role:
            reasons.append(f"{x['reviewer']}'s role differs from the target")
        if x["qc_flags"]:
            reasons.append(f"{x['reviewer']} raised QC flags {', '.join(x['qc_flags'])}")
    if read is not None:
        na, nb = _norm_read(a["answer"]["read"], rules), _norm_read(b["answer"]["read"], rules)
        if na != nb:
            reasons.append("the blind readings disagree")
        for x, n in ((a, na), (b, nb)):
            if n != _norm_read(read, rules):
                reasons.append(f"{x['reviewer']}'s reading differs from the target")
    return ("approved_direct" if not reasons else "needs_adjudication"), reasons


def pull_verify(store: Store, client: LSClient, release: Path) -> dict[str, Any]:
    """Pull both blind projects into the store, decide each probe, keep adjudications
    already made."""
    release = Path(release)
    _migrate(store, release)
    ctx = _context(release)
    public, private = ctx.public, ctx.private
    scope = release_scope(release)
    rows_ls = ls_project_rows(store, client.url, scope.name, "verify")
    if len(rows_ls) != 2:
        raise TruthlineError(
            f"{release}: no blind verification pushed to {client.url} (in the store at "
            f"{store.shown}); run `truthline physalign verify push` first"
        )
    blind: dict[str, list[dict[str, Any]]] = {p["probe_id"]: [] for p in public}
    changes: dict[str, Any] = {}
    for lsrow in rows_ls:
        who = str(lsrow.cohort)
        got = pull_units(
            store, client, "physalign.verify", ctx, scope=scope, slot="verify", cohort=who
        )
        for k, v in got.changes().items():
            changes.setdefault(k, [] if isinstance(v, list) else 0)
            changes[k] += v
        for pid in blind:
            # an annotation by anyone else in a blind project is not counted
            anns = [a for a in _by_submission(got.of(pid)) if a.annotator == who]
            if anns:
                blind[pid].append(_blind_answer(anns[0]))  # the first submission is the blind one
    rows = decide_rows(release, public, private, blind)
    _write_review(release, rows)
    return _counts(rows) | changes


def decide_rows(
    release: Path,
    public: list[dict[str, Any]],
    private: dict[str, dict[str, Any]],
    blind: dict[str, list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """Review rows from the blind answers of every probe (from Label Studio or a file),
    keeping adjudications (and re-verifications of corrected targets) already made."""
    old = _read_review(release)
    rows = []
    for pub in public:
        pid = pub["probe_id"]
        answers = sorted(blind[pid], key=lambda x: x["reviewer"])
        status, reasons = decide_blind(private[pid], answers)
        prev = old.get(pid) or {}
        row: dict[str, Any] = {
            "probe_id": pid,
            "blind": answers,
            "status": status,
            "reasons": reasons,
            "adjudication": prev.get("adjudication"),
            "blind_pulled_at": prev.get("blind_pulled_at")
            if prev.get("blind") == answers
            else _now(),
        }
        if status == "approved_direct":
            role, read, _ = _target(private[pid])
            row |= {
                "decision": "approved_direct",
                "decided_by": [x["reviewer"] for x in answers],
                "decided_at": max(x["submitted_at"] for x in answers),
                "final": {"role": role, "read": read},
            }
        elif prev.get("adjudication"):  # an adjudication already decided this probe
            row |= {
                k: prev[k]
                for k in ("decision", "decided_by", "decided_at", "final", "reverify")
                if k in prev
            }
        rows.append(row)
    return rows


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat()


def _read_review(release: Path) -> dict[str, dict[str, Any]]:
    p = Path(release) / REVIEW
    return {r["probe_id"]: r for r in read_jsonl(p)} if p.is_file() else {}


def _write_review(release: Path, rows: list[dict[str, Any]]) -> None:
    from truthline.systems.physalign._schemas import validate_review

    for r in rows:
        validate_review(r, str(Path(release) / REVIEW))
    write_jsonl(Path(release) / REVIEW, rows)


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, int] = {}
    for r in rows:
        k = r.get("decision") or r["status"]
        out[k] = out.get(k, 0) + 1
    return {"probes": len(rows), "by_status": dict(sorted(out.items()))}


# -- adjudication ------------------------------------------------------------------------------
def _answer_text(x: dict[str, Any]) -> str:
    a = x["answer"]
    parts = [f"reviewer {x['reviewer']} at {x['submitted_at']}: role {a['role']}"]
    if a.get("read") is not None:
        parts.append(f"read {a['read']!r}")
    if x["qc_flags"]:
        parts.append(f"QC {', '.join(x['qc_flags'])}")
    if x.get("note"):
        parts.append(f"note {x['note']!r}")
    return "; ".join(parts)


def _adjudication_shown(
    store: Store,
    server_url: str,
    release: Path,
    row: dict[str, Any],
    priv: dict[str, Any],
) -> list[dict[str, Any]]:
    """What an adjudication task shows (for the exposure log): both blind answers (by their
    store source ids), the private target and the source observation."""
    scope = release_scope(release)
    out: list[dict[str, Any]] = []
    for x in row["blind"]:
        lsrow = ls_project_row(store, server_url, scope.name, "verify", x["reviewer"])
        aid = x.get("ls_annotation_id")
        out.append(
            {
                "kind": "annotation",
                "stage": "verify",
                "annotator": x["reviewer"],
                "source_id": source_id(server_url, int(lsrow.ls_project_id), int(aid))
                if lsrow is not None and aid is not None
                else None,
            }
        )
    out.append({"kind": "target", "probe_id": row["probe_id"]})
    out.append(
        {
            "kind": "source_observation",
            "parent_id": priv["parent_id"],
            "obs_id": priv["source_links"].get("obs_id"),
        }
    )
    return out


def push_adjudicate(store: Store, client: LSClient, release: Path) -> dict[str, Any]:
    """The third reviewer's project: probes whose blind answers disagree or were flagged."""
    release = Path(release)
    client.whoami()
    _migrate(store, release)
    public, private, records = _load(release)
    review = _read_review(release)
    if not review:
        raise TruthlineError(
            f"{release / REVIEW}: no blind answers pulled yet; the adjudication project is made "
            "only after both blind answers are on record (`truthline physalign verify pull`)"
        )
    by_id = {p["probe_id"]: p for p in public}
    obs_of = {(r["parent_id"], o["obs_id"]): o for r in records for o in r["pass4"]["observations"]}
    units = {}
    for pid, row in sorted(review.items()):
        if row["status"] != "needs_adjudication":
            continue
        pub, priv = by_id[pid], private[pid]
        role, read, _ = _target(priv)
        a, b = row["blind"][0], row["blind"][1]
        obs = obs_of.get((priv["parent_id"], priv["source_links"].get("obs_id")))
        units[pid] = {
            "data": {
                "question": pub["question"],
                "problem_text": pub["problem"]["text"],
                "localized_view": data_uri(release / "public" / pub["localized_views"][0]["path"]),
                "blind_answer_a": _answer_text(a),
                "blind_answer_b": _answer_text(b),
                "private_target": f"role {role} (entity {priv['alias_map'][role]})"
                + (f"; read {read!r}" if read is not None else "")
                + f"; blind-check reasons: {'; '.join(row['reasons'])}",
                "source_observation": json.dumps(
                    {"source_links": priv["source_links"], "observation": obs}, ensure_ascii=False
                ),
                "candidate_choices": [{"value": c["alias"]} for c in pub["candidates"]],
            },
            "shown": _adjudication_shown(store, client.url, release, row, priv),
        }
    rep = push_units(
        store,
        client,
        "physalign.adjudicate",
        None,
        units,
        scope=release_scope(release),
        slot="adjudicate",
        title="PhysAlign adjudication",
    )
    return {
        "created": rep.created,
        "existing": rep.existing,
        "recovered": rep.recovered,
        "ls_project_id": rep.ls_project_id,
        "project_url": rep.project_url,
        "tasks": len(units),
    }


def pull_adjudicate(store: Store, client: LSClient, release: Path) -> dict[str, Any]:
    """Pull the adjudications into the store and record each one with the final decision
    (who decided, when, why)."""
    release = Path(release)
    _migrate(store, release)
    _, private, _ = _load(release)
    review = _read_review(release)
    scope = release_scope(release)
    got_all = pull_units(
        store, client, "physalign.adjudicate", None, scope=scope, slot="adjudicate"
    )
    siblings: dict[str, list[str]] = {}
    latest: dict[str, UnitAnnotation] = {}
    for pid in {a.key for a in got_all.annotations}:
        anns = _by_submission(got_all.of(pid))
        if anns and pid in review:
            latest[pid] = anns[-1]
    for pid, ann in sorted(latest.items(), key=lambda kv: int(kv[1].ls_task_id or 0)):
        if apply_adjudication(
            review[pid],
            private[pid],
            ann.values,
            ann.annotator,
            where=f"Label Studio task {ann.ls_task_id} (probe {pid})",
            ls_annotation_id=ann.ls_annotation_id,
        ):
            siblings[private[pid]["parent_id"]] = [pid]
    # a probe-level (shared-source) correction puts the parent's other probes up for review
    for r in review.values():
        parent = private[r["probe_id"]]["parent_id"]
        if parent in siblings and r["probe_id"] not in siblings[parent]:
            r["sibling_review"] = True
    rows = [review[k] for k in sorted(review)]
    _write_review(release, rows)
    return _counts(rows) | got_all.changes()


def apply_adjudication(
    row: dict[str, Any],
    priv: dict[str, Any],
    got: dict[str, Any],
    who: str,
    *,
    where: str,
    ls_annotation_id: Any = None,
) -> bool:
    """Record one adjudication on its review row; True for a probe-level correction (its
    siblings go up for review). A corrected target that changes drops an earlier blind
    re-verification: the new value must be re-verified blind before it is released."""
    outcome = got.get("decision")
    if outcome not in OUTCOMES:
        raise TruthlineError(
            f"{where}: field decision is {outcome!r}; the adjudicator must choose one of "
            f"{', '.join(OUTCOMES)}"
        )
    role, read, _ = _target(priv)
    adj = {
        "adjudicator": who,
        "outcome": outcome,
        "corrected_role": got.get("corrected_role"),
        "corrected_read": got.get("corrected_read"),
        "rationale": got.get("rationale"),
        "submitted_at": got.get("submitted_at"),
        "ls_annotation_id": ls_annotation_id,
    }
    before = row.get("final")
    row["adjudication"] = adj
    row["decision"] = OUTCOMES[outcome]
    row["decided_by"] = who
    row["decided_at"] = adj["submitted_at"]
    if outcome == "approve_target":
        row["final"] = {"role": role, "read": read}
    elif outcome == "correct_target_regenerate":
        new_role = got.get("corrected_role") or role
        if new_role not in priv["alias_map"]:
            raise TruthlineError(
                f"{where}: field corrected_role {new_role!r} is not one of the probe's aliases "
                f"({', '.join(priv['alias_map'])})"
            )
        new_read = got.get("corrected_read") if read is not None else None
        row["final"] = {
            "role": new_role,
            "read": new_read or read,
            "entity_id": priv["alias_map"][new_role],
        }
    else:
        row.pop("final", None)
    if row.get("final") != before or outcome != "correct_target_regenerate":
        row.pop("reverify", None)
    return outcome == "correct_probe_regenerate"


# -- SIMULATED reviewers --------------------------------------------------------------------
def simulate_verify(
    store: Store,
    admin: LSClient,
    release: Path,
    reviewers: list[str],
    secrets_file: Path,
    *,
    wrong_every: int = 0,
    flag_every: int = 0,
) -> dict[str, Any]:
    """SIMULATED blind reviewers answer from the private targets (tests and demos only).

    The second reviewer picks another alias on every ``wrong_every``-th probe and raises a
    QC flag on every ``flag_every``-th (0: never), so adjudication has work. A task the
    reviewer already answered is left alone."""
    from truthline.annotate import user_client

    reviewers = _check_reviewers(reviewers)
    release = Path(release)
    _migrate(store, release)
    _, private, _ = _load(release)
    simulated_users(admin, reviewers, secrets_file, store=store, scope=release_scope(release))
    posted = 0
    for r_idx, who in enumerate(reviewers):
        pushed = pushed_tasks(store, admin, release_scope(release), "verify", who)
        if pushed is None:
            raise TruthlineError(
                f"no blind project of {who} on {admin.url}; run `physalign verify push`"
            )
        ls_pid, tasks = pushed
        done = {
            tid
            for tid, t in export_tasks(admin, ls_pid).items()
            if any(annotator_of(a) == who for a in submitted(t))
        }
        client = user_client(admin.url, who, secrets_file)
        for k, (pid, tid) in enumerate(sorted(tasks.items()), start=1):
            if int(tid) in done:
                continue
            role, read, _ = _target(private[pid])
            if r_idx == 1 and wrong_every and k % wrong_every == 0:
                role = next(a for a in sorted(private[pid]["alias_map"]) if a != role)
            result: list[dict[str, Any]] = [
                {
                    "from_name": "role",
                    "to_name": "view",
                    "type": "choices",
                    "value": {"choices": [role]},
                }
            ]
            if read is not None:
                result.append(
                    {
                        "from_name": "read",
                        "to_name": "view",
                        "type": "textarea",
                        "value": {"text": [read]},
                    }
                )
            if r_idx == 1 and flag_every and k % flag_every == 0:
                result.append(
                    {
                        "from_name": "qc",
                        "to_name": "view",
                        "type": "choices",
                        "value": {"choices": ["question_unclear"]},
                    }
                )
            client.post(
                f"/api/tasks/{tid}/annotations/",
                {"result": result, "lead_time": 20.0, "was_cancelled": False},
            )
            posted += 1
    return {"posted": posted, "simulated": True, "reviewers": reviewers}


def simulate_adjudicate(
    store: Store,
    admin: LSClient,
    release: Path,
    adjudicator: str,
    secrets_file: Path,
    *,
    withhold_every: int = 0,
) -> dict[str, Any]:
    """A SIMULATED third reviewer: approves the (known-correct) target, withholding every
    ``withhold_every``-th probe as ambiguous (0: never)."""
    from truthline.annotate import user_client

    release = Path(release)
    _migrate(store, release)
    pushed = pushed_tasks(store, admin, release_scope(release), "adjudicate")
    if pushed is None:
        raise TruthlineError(
            f"no adjudication project on {admin.url}; run `physalign adjudicate push`"
        )
    ls_pid, tasks = pushed
    simulated_users(admin, [adjudicator], secrets_file, store=store, scope=release_scope(release))
    done = {tid for tid, t in export_tasks(admin, ls_pid).items() if submitted(t)}
    client = user_client(admin.url, adjudicator, secrets_file)
    posted = 0
    for k, (_pid, tid) in enumerate(sorted(tasks.items()), start=1):
        if int(tid) in done:
            continue
        outcome = (
            "withhold_ambiguous" if withhold_every and k % withhold_every == 0 else "approve_target"
        )
        result = [
            {
                "from_name": "decision",
                "to_name": "view",
                "type": "choices",
                "value": {"choices": [outcome]},
            },
            {
                "from_name": "rationale",
                "to_name": "view",
                "type": "textarea",
                "value": {"text": [f"SIMULATED adjudicator: {outcome}"]},
            },
        ]
        client.post(
            f"/api/tasks/{tid}/annotations/",
            {"result": result, "lead_time": 40.0, "was_cancelled": False},
        )
        posted += 1
    return {"posted": posted, "simulated": True, "adjudicator": adjudicator}


def status(release: Path) -> dict[str, Any]:
    """Where a release stands: probes, sets, blind verification and adjudication."""
    release = Path(release)
    public, private, _ = _load(release)
    types: dict[str, int] = {}
    for p in public:
        types[p["probe_type"]] = types.get(p["probe_type"], 0) + 1
    sets = {
        k: sum(1 for p in private.values() if p["eligibility"][k])
        for k in ("G", "L", "P", "H", "H_hard")
    }
    review = _read_review(release)
    out: dict[str, Any] = {
        "release": str(release),
        "probes": len(public),
        "parents": len({p["parent_id"] for p in private.values()}),
        "types": dict(sorted(types.items())),
        "sets": sets,
    }
    if review:
        out["verification"] = _counts(list(review.values()))["by_status"]
        out["decided_by"] = {}
        for r in review.values():
            if r.get("decision"):
                who = (
                    r["decided_by"] if isinstance(r["decided_by"], str) else "both blind reviewers"
                )
                out["decided_by"][who] = out["decided_by"].get(who, 0) + 1
        from truthline.systems.physalign._screening import STATES, screen

        sc = screen(release)
        out["screening"] = {k: len(sc.of(k)) for k in STATES}
    else:
        out["verification"] = "not pulled"
    return out
