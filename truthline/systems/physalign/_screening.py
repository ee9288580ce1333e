"""Screening-state accounting of probe candidates (seeds/002 Table 4, §A.4).

Every compiled probe ends in exactly one state, derived from the stored verification and
adjudication results (``private/review.jsonl``), in this order of precedence:

* ``incomplete``: fewer than two blind answers on record (or none pulled yet);
* ``rejected``: withheld (ambiguous, or the probe itself needs regenerating);
* ``further_review``: awaiting adjudication, or a corrected target that has not passed its
  fresh blind re-verification;
* ``risk_isolated``: would be approved, but its parent (or a parent sharing its original
  image) had a shared-source probe correction, or it is named in an isolation file;
* ``approved``: approved directly, after adjudication, or a corrected target whose blind
  re-verification approved it. Only these are retained (exported).

Panel (a) counts the states; panel (b) admission within the approved-before-isolation subset
and parents with complete or partial retention; panel (c) the re-verification outcomes of
corrected targets. Observations the compiler never made into probes (disputed, duplicates,
too few candidates) are counted apart: they are not probe candidates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._records import read_json, read_jsonl

STATES = ("approved", "rejected", "further_review", "incomplete", "risk_isolated")
_APPROVED = ("approved_direct", "approved_adjudicated")


@dataclass(frozen=True)
class Screening:
    """Each probe's state and why, and the parent of each probe."""

    state: dict[str, str]
    reason: dict[str, str]
    parent: dict[str, str]
    corrected: dict[str, str] = field(default_factory=dict)  # probe -> re-verification state

    def of(self, state: str) -> list[str]:
        return sorted(p for p, s in self.state.items() if s == state)


def _isolations(path: Path | None, parents: set[str], probes: set[str]) -> dict[str, str]:
    """``probe or parent id -> reason`` from an isolation file (JSONL or CSV with ``id`` and
    ``reason``); an unknown id is refused by name."""
    if path is None:
        return {}
    from truthline.systems.physalign._reverify import read_rows

    out = {}
    for n, r in enumerate(read_rows(path), start=1):
        key = r.get("id") or r.get("probe_id") or r.get("parent_id")
        if not key:
            raise TruthlineError(f"{path}:{n}: field id is missing (a probe or parent id)")
        if key not in parents and key not in probes:
            raise TruthlineError(f"{path}:{n}: field id: no probe or parent {key!r}")
        out[str(key)] = str(r.get("reason") or "declared risk")
    return out


def screen(release: Path, isolate: Path | None = None) -> Screening:
    """The screening state of every probe of a release."""
    release = Path(release)
    private = read_jsonl(release / "private" / "targets.jsonl")
    rpath = release / "private" / "review.jsonl"
    review = {r["probe_id"]: r for r in read_jsonl(rpath)} if rpath.is_file() else {}
    parent = {p["probe_id"]: p["parent_id"] for p in private}
    declared = _isolations(isolate, set(parent.values()), set(parent))
    # parents linked by an original-image hash share isolation decisions (§A.1)
    dpath = release / "private" / "dedup.json"
    groups = read_json(dpath).get("linked_parent_groups", []) if dpath.is_file() else []
    linked = {p: set(g) for g in groups for p in g}
    risky: dict[str, str] = {}
    for pid, r in review.items():
        if (
            r.get("sibling_review")
            or (r.get("adjudication") or {}).get("outcome") == "correct_probe_regenerate"
        ):
            risky.setdefault(parent[pid], f"shared-source correction in parent of {pid}")
    for key, why in declared.items():
        if key in set(parent.values()):
            risky.setdefault(key, why)
    for p, why in list(risky.items()):
        for q in linked.get(p, ()):
            risky.setdefault(q, f"{why} (same original image)")
    state: dict[str, str] = {}
    reason: dict[str, str] = {}
    corrected: dict[str, str] = {}
    for pid in sorted(parent):
        r = review.get(pid) or {}
        decision, status = r.get("decision"), r.get("status")
        if decision == "corrected_regenerated":
            corrected[pid] = (r.get("reverify") or {}).get("status") or "not_started"
        if not r or status == "pending_blind":
            s, why = "incomplete", f"{len(r.get('blind') or [])} of 2 blind answers"
        elif decision == "withheld":
            s, why = "rejected", str((r.get("adjudication") or {}).get("outcome") or "withheld")
        elif decision == "corrected_regenerated" and corrected[pid] != "approved":
            s, why = "further_review", f"corrected target, blind re-verification {corrected[pid]}"
        elif decision not in (*_APPROVED, "corrected_regenerated"):
            s, why = "further_review", "; ".join(r.get("reasons") or []) or "not decided"
        elif pid in declared or parent[pid] in risky:
            s, why = "risk_isolated", declared.get(pid) or risky[parent[pid]]
        else:
            s, why = "approved", str(decision)
        state[pid], reason[pid] = s, why
    return Screening(state, reason, parent, corrected)


def screening_table(release: Path, isolate: Path | None = None) -> dict[str, Any]:
    """Table 4's three panels for a release (counts, shares of all candidates, ids)."""
    release = Path(release)
    sc = screen(release, isolate)
    n = len(sc.state)
    counts = {s: len(sc.of(s)) for s in STATES}
    parents = sorted(set(sc.parent.values()))
    by_parent: dict[str, list[str]] = {}
    for pid, par in sc.parent.items():
        by_parent.setdefault(par, []).append(sc.state[pid])
    retained_parents = [p for p in parents if "approved" in by_parent[p]]
    complete = [p for p in retained_parents if set(by_parent[p]) == {"approved"}]
    skipped_path = release / "private" / "skipped.jsonl"
    skipped = read_jsonl(skipped_path) if skipped_path.is_file() else []
    not_compiled: dict[str, int] = {}
    for s in skipped:
        why = str(s.get("reason") or "")
        key = "exact-input duplicate" if why.startswith("exact-input duplicate") else why
        not_compiled[key] = not_compiled.get(key, 0) + 1
    reverify: dict[str, int] = {}
    for st in sc.corrected.values():
        reverify[st] = reverify.get(st, 0) + 1
    pre_isolation = counts["approved"] + counts["risk_isolated"]
    return {
        "release": str(release),
        "candidates": n,
        "candidate_parents": len(parents),
        "states": counts,
        "shares": {s: (counts[s] / n if n else None) for s in STATES},
        "admission": {
            "approved_before_isolation": pre_isolation,
            "risk_isolated": counts["risk_isolated"],
            "retained": counts["approved"],
            "retained_share_of_candidates": counts["approved"] / n if n else None,
            "retained_parents": len(retained_parents),
            "parents_complete": len(complete),
            "parents_partial": len(retained_parents) - len(complete),
            "parents_without_retained_probe": len(parents) - len(retained_parents),
        },
        "corrections": {
            "corrected_targets": len(sc.corrected),
            "reverify": dict(sorted(reverify.items())),
        },
        "not_compiled": dict(sorted(not_compiled.items())),
        "probes": {s: sc.of(s) for s in STATES if s != "approved"},
        "reasons": {pid: sc.reason[pid] for pid in sorted(sc.state) if sc.state[pid] != "approved"},
    }
