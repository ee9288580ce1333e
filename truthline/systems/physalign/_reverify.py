"""Review decisions from files, and the blind re-verification of corrected targets (spec §12.3).

An adjudicator's corrected target (``corrected_regenerated``) is a new value nobody has
answered blind yet. Before it enters the release, two reviewers answer the unchanged public
probe again in a fresh blind round (``reverify``: their own Label Studio projects, or a
file), and the corrected value is approved only when both answers equal it under the
scoring contract's equality and neither raises a QC flag. The adjudicator saw the target,
so they cannot be a re-verifier. Export holds back every correction that is not approved
and names it.

Blind answers and adjudications can also come from a file (JSONL or CSV; a team that
reviews outside Label Studio, or an earlier export): ``probe_id, reviewer, role, read,
qc_flags, note, submitted_at`` for answers, ``probe_id, adjudicator, decision,
corrected_role, corrected_read, rationale, submitted_at`` for adjudications. They are
decided by exactly the rules the Label Studio pulls use.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._records import read_jsonl
from truthline.systems.physalign._verify import (
    _by_submission,
    _check_reviewers,
    _context,
    _counts,
    _load,
    _migrate,
    _norm_read,
    _read_review,
    _target,
    _write_review,
    apply_adjudication,
    decide_rows,
)

ROUND_VERIFY, ROUND_REVERIFY = "verify", "reverify"
ANSWER_FIELDS = ("probe_id", "reviewer", "role", "read", "qc_flags", "note", "submitted_at")
ADJ_FIELDS = ("probe_id", "adjudicator", "decision", "corrected_role", "corrected_read")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``.csv`` or ``.jsonl`` file (empty CSV cells are missing values)."""
    path = Path(path)
    if not path.is_file():
        raise TruthlineError(f"{path}: no such file")
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as fh:
            return [{k: (v if v != "" else None) for k, v in r.items()} for r in csv.DictReader(fh)]
    return read_jsonl(path)


def _flags(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, list):
        return sorted(str(x) for x in v)
    return sorted(x.strip() for x in str(v).split(";") if x.strip())


def _answers(path: Path, known: set[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for n, r in enumerate(read_rows(path), start=1):
        for f in ("probe_id", "reviewer", "role", "submitted_at"):
            if not r.get(f):
                raise TruthlineError(f"{path}:{n}: field {f} is missing")
        if r["probe_id"] not in known:
            raise TruthlineError(f"{path}:{n}: field probe_id: no probe {r['probe_id']!r}")
        answers = out.setdefault(str(r["probe_id"]), [])
        if any(a["reviewer"] == r["reviewer"] for a in answers):
            continue  # the first answer of a reviewer is the blind one
        answers.append(
            {
                "reviewer": str(r["reviewer"]),
                "answer": {"role": r["role"], "read": r.get("read")},
                "qc_flags": _flags(r.get("qc_flags")),
                "note": r.get("note"),
                "submitted_at": str(r["submitted_at"]),
                "ls_annotation_id": None,
            }
        )
    for pid, answers in out.items():
        answers.sort(key=lambda a: (a["submitted_at"], a["reviewer"]))
        if len(answers) > 2:
            raise TruthlineError(
                f"{path}: probe {pid}: {len(answers)} reviewers answered; a blind round has two"
            )
    return out


def decide_reverify(
    priv: dict[str, Any], row: dict[str, Any], blind: list[dict[str, Any]]
) -> tuple[str, list[str]]:
    """``(status, reasons)`` of a corrected target's fresh blind round: ``approved`` iff both
    answers equal the corrected value and neither flagged QC; ``pending`` below two."""
    if len(blind) < 2:
        return "pending", [f"{len(blind)} of 2 blind answers"]
    final = row["final"]
    _, _, rules = _target(priv)
    reasons = []
    for x in blind:
        role = x["answer"]["role"]
        if not isinstance(role, str) or role.strip().upper() != final["role"]:
            reasons.append(f"{x['reviewer']}'s role differs from the corrected target")
        if final.get("read") is not None and _norm_read(x["answer"]["read"], rules) != _norm_read(
            final["read"], rules
        ):
            reasons.append(f"{x['reviewer']}'s reading differs from the corrected target")
        if x["qc_flags"]:
            reasons.append(f"{x['reviewer']} raised QC flags {', '.join(x['qc_flags'])}")
    return ("approved" if not reasons else "failed"), reasons


def _apply_reverify(
    release: Path, private: dict[str, Any], blind: dict[str, list[dict[str, Any]]], where: str
) -> dict[str, Any]:
    review = _read_review(release)
    for pid, answers in sorted(blind.items()):
        row = review.get(pid) or {}
        if row.get("decision") != "corrected_regenerated":
            raise TruthlineError(
                f"{where}: probe {pid} has no corrected target to re-verify (decision "
                f"{row.get('decision') or row.get('status') or 'none'})"
            )
        adjudicator = (row.get("adjudication") or {}).get("adjudicator")
        for a in answers:
            if a["reviewer"] == adjudicator:
                raise TruthlineError(
                    f"{where}: probe {pid}: {adjudicator} adjudicated this probe and saw its "
                    "target, so cannot re-verify it blind; ask two other reviewers"
                )
        status, reasons = decide_reverify(private[pid], row, answers)
        row["reverify"] = {"blind": answers, "status": status, "reasons": reasons}
    rows = [review[k] for k in sorted(review)]
    _write_review(release, rows)
    return reverify_counts(rows)


def reverify_counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Corrected targets by their re-verification state, and the ids still held back."""
    corrected = [r for r in rows if r.get("decision") == "corrected_regenerated"]
    states: dict[str, int] = {}
    held = []
    for r in corrected:
        st = (r.get("reverify") or {}).get("status") or "not_started"
        states[st] = states.get(st, 0) + 1
        if st != "approved":
            held.append(r["probe_id"])
    return {"corrected": len(corrected), "reverify": dict(sorted(states.items())), "held": held}


def load_answers(release: Path, path: Path, round_: str = ROUND_VERIFY) -> dict[str, Any]:
    """Blind answers from a file: the first round decides every probe (as ``verify pull``),
    the ``reverify`` round re-verifies corrected targets."""
    release = Path(release)
    public, private, _ = _load(release)
    blind = _answers(Path(path), set(private))
    if round_ == ROUND_REVERIFY:
        return _apply_reverify(release, private, blind, str(path))
    if round_ != ROUND_VERIFY:
        raise TruthlineError(f"--round {round_!r}: use {ROUND_VERIFY} or {ROUND_REVERIFY}")
    # answers already on record stay (the first answer of a reviewer is the blind one)
    old = _read_review(release)
    merged: dict[str, list[dict[str, Any]]] = {}
    for p in public:
        pid = p["probe_id"]
        have = list((old.get(pid) or {}).get("blind") or [])
        who = {a["reviewer"] for a in have}
        have += [a for a in blind.get(pid, []) if a["reviewer"] not in who]
        if len(have) > 2:
            raise TruthlineError(
                f"{path}: probe {pid}: {len(have)} reviewers answered; a blind round has two"
            )
        merged[pid] = sorted(have, key=lambda x: x["reviewer"])
    rows = decide_rows(release, public, private, merged)
    _write_review(release, rows)
    return _counts(rows)


def load_adjudications(release: Path, path: Path) -> dict[str, Any]:
    """Adjudications from a file, recorded as ``adjudicate pull`` records them."""
    release = Path(release)
    _, private, _ = _load(release)
    review = _read_review(release)
    siblings: set[str] = set()
    for n, r in enumerate(read_rows(Path(path)), start=1):
        where = f"{path}:{n}"
        pid = r.get("probe_id")
        if pid not in review or review[pid].get("status") != "needs_adjudication":
            raise TruthlineError(
                f"{where}: field probe_id: probe {pid!r} does not need adjudication (its blind "
                "answers must be on record first and disagree or carry a QC flag)"
            )
        if not r.get("adjudicator"):
            raise TruthlineError(f"{where}: field adjudicator is missing")
        if any(b["reviewer"] == r["adjudicator"] for b in review[pid]["blind"]):
            raise TruthlineError(
                f"{where}: field adjudicator: {r['adjudicator']} answered this probe blind; "
                "the third reviewer must be someone else"
            )
        if apply_adjudication(
            review[pid], private[pid], r, str(r["adjudicator"]), where=f"{where} (probe {pid})"
        ):
            siblings.add(private[pid]["parent_id"])
    for row in review.values():
        if private[row["probe_id"]]["parent_id"] in siblings and row.get("decision") != "withheld":
            row["sibling_review"] = True
    rows = [review[k] for k in sorted(review)]
    _write_review(release, rows)
    return _counts(rows) | {"corrections": reverify_counts(rows)}


# -- Label Studio: the re-verification round ---------------------------------------------------
def _corrected(release: Path) -> dict[str, dict[str, Any]]:
    return {
        pid: r
        for pid, r in _read_review(release).items()
        if r.get("decision") == "corrected_regenerated"
    }


def push_reverify(store: Any, client: Any, release: Path, reviewers: list[str]) -> dict[str, Any]:
    """A fresh blind project per reviewer with the probes whose target was corrected."""
    from truthline.systems.physalign._verify import push_blind_projects

    reviewers = _check_reviewers(reviewers)
    release = Path(release)
    client.whoami()
    _migrate(store, release)
    corrected = _corrected(release)
    if not corrected:
        raise TruthlineError(
            f"{release}: no corrected target to re-verify (no adjudication chose "
            "correct_target_regenerate)"
        )
    for pid, row in corrected.items():
        adj = (row.get("adjudication") or {}).get("adjudicator")
        if adj in reviewers:
            raise TruthlineError(
                f"--reviewer {adj}: adjudicated probe {pid} and saw its target, so cannot "
                "re-verify it blind"
            )
    ctx = _context(release)
    units = {p["probe_id"]: p for p in ctx.public if p["probe_id"] in corrected}
    return push_blind_projects(
        store, client, release, ctx, units, reviewers, ROUND_REVERIFY, "re-verify"
    )


def pull_reverify(store: Any, client: Any, release: Path) -> dict[str, Any]:
    """Pull both re-verification projects and decide each corrected target."""
    from truthline.annotate import ls_project_rows, pull_units
    from truthline.systems.physalign._ls import release_scope
    from truthline.systems.physalign._verify import _blind_answer

    release = Path(release)
    _migrate(store, release)
    ctx = _context(release)
    scope = release_scope(release)
    rows_ls = ls_project_rows(store, client.url, scope.name, ROUND_REVERIFY)
    if len(rows_ls) != 2:
        raise TruthlineError(
            f"{release}: no blind re-verification pushed to {client.url}; run `truthline "
            "physalign verify reverify-push` first"
        )
    corrected = _corrected(release)
    blind: dict[str, list[dict[str, Any]]] = {pid: [] for pid in corrected}
    for lsrow in rows_ls:
        who = str(lsrow.cohort)
        got = pull_units(
            store, client, "physalign.verify", ctx, scope=scope, slot=ROUND_REVERIFY, cohort=who
        )
        for pid in blind:
            anns = [a for a in _by_submission(got.of(pid)) if a.annotator == who]
            if anns:
                blind[pid].append(_blind_answer(anns[0]))
    return _apply_reverify(release, ctx.private, blind, f"{client.url} re-verification")
