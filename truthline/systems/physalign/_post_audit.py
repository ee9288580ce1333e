"""Post-construction quality audit of retained probes (seeds/002 Table 5, §A.5).

**Plan.** The sampling frame is the retained inventory (screening state ``approved``). A
declared total ``n`` is allocated across groups (``by``: ``probe_type`` and/or ``domain``):
the ``census_smallest`` smallest groups are inspected in full, and the remaining slots go
to the other groups in proportion to their sizes (largest remainder, capped at a group's
size, ties by group name). Within a group probes are taken in a fixed-seed hash order,
``sha256("<seed>|<probe_id>")`` ascending, without replacement: selection never looks at
model scores, difficulty, gold answers or earlier review outcomes. The plan (frame,
allocation, selected ids in order) is written once to ``private/audit_plan.json`` with a
worksheet ``private/audit_worksheet.csv`` for the auditors.

**Report.** Outcomes per audited probe (the filled worksheet; rows left blank are not audited
yet and are listed): ``first_pass`` (``pass`` or ``flag``) and, for a flagged probe, ``reinspection`` after correction (``pass`` or ``unresolved``). The first-pass
rate is passed / audited, the post-correction rate (passed + reinspected pass) / audited,
each with a Wilson interval widened by the parent-cluster design effect
(``truthline.stats.proportion_ci``), overall and per group. Pooled rates are descriptive
audit statistics of the audited set, not sampling-weighted estimates for the inventory.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._records import read_json, read_jsonl, write_json

PLAN = "private/audit_plan.json"
WORKSHEET = "private/audit_worksheet.csv"
GROUP_KEYS = ("probe_type", "domain")
ORDER_RULE = 'sha256("<seed>|<probe_id>") ascending'
FIRST_PASS = ("pass", "flag")
REINSPECTION = ("pass", "unresolved")


@dataclass(frozen=True)
class Outcome:
    """One audited probe's review outcome."""

    probe_id: str
    group: str
    parent: str
    first_pass: str
    reinspection: str | None


def hash_rank(seed: int, probe_id: str) -> str:
    """The fixed-seed hash a probe is ordered by within its group."""
    return hashlib.sha256(f"{seed}|{probe_id}".encode()).hexdigest()


def allocate(sizes: dict[str, int], n: int, census_smallest: int = 0) -> dict[str, int]:
    """Audit slots per group: a census of the smallest groups, the rest proportional."""
    total = sum(sizes.values())
    if not 0 < n <= total:
        raise TruthlineError(f"--n {n}: the retained inventory has {total} probes (1..{total})")
    by_size = sorted(sizes, key=lambda g: (sizes[g], g))
    census = by_size[:census_smallest]
    alloc = {g: sizes[g] for g in census}
    left = n - sum(alloc.values())
    if left < 0:
        raise TruthlineError(
            f"--census-smallest {census_smallest}: those groups hold {sum(alloc.values())} "
            f"probes, more than --n {n}"
        )
    rest = [g for g in sorted(sizes) if g not in alloc]
    while rest:
        pool = sum(sizes[g] for g in rest)
        quota = {g: left * sizes[g] / pool for g in rest}
        over = [g for g in rest if quota[g] >= sizes[g]]
        if over:  # a group smaller than its share is taken whole; share the rest again
            for g in over:
                alloc[g] = sizes[g]
                left -= sizes[g]
            rest = [g for g in rest if g not in over]
            continue
        base = {g: int(quota[g]) for g in rest}
        spare = left - sum(base.values())
        for g in sorted(rest, key=lambda g: (-(quota[g] - base[g]), g))[:spare]:
            base[g] += 1
        alloc.update(base)
        break
    return dict(sorted(alloc.items()))


def _group(priv: dict[str, Any], by: tuple[str, ...]) -> str:
    return "|".join(str(priv.get(k) or "none") for k in by)


def plan(
    release: Path,
    n: int,
    *,
    by: tuple[str, ...] = ("probe_type",),
    seed: int = 0,
    census_smallest: int = 0,
) -> dict[str, Any]:
    """Draw the audit sample of a release's retained probes (written once)."""
    from truthline.systems.physalign._screening import screen

    release = Path(release)
    for k in by:
        if k not in GROUP_KEYS:
            raise TruthlineError(f"--by {k!r}: group by {' or '.join(GROUP_KEYS)}")
    sc = screen(release)
    private = {
        p["probe_id"]: p
        for p in read_jsonl(release / "private" / "targets.jsonl")
        if sc.state[p["probe_id"]] == "approved"
    }
    if not private:
        raise TruthlineError(f"{release}: no retained (approved) probe to audit yet")
    groups: dict[str, list[str]] = {}
    for pid, priv in sorted(private.items()):
        groups.setdefault(_group(priv, by), []).append(pid)
    for g in groups:
        groups[g].sort(key=lambda pid: hash_rank(seed, pid))
    alloc = allocate({g: len(v) for g, v in groups.items()}, n, census_smallest)
    selected = {g: groups[g][: alloc[g]] for g in sorted(groups)}
    out = {
        "seed": seed,
        "n": n,
        "by": list(by),
        "census_smallest": census_smallest,
        "order": ORDER_RULE,
        "frame": len(private),
        "groups": {g: len(v) for g, v in sorted(groups.items())},
        "allocation": alloc,
        "selected": selected,
    }
    path = release / PLAN
    if path.is_file() and read_json(path) != out:
        raise TruthlineError(
            f"{path}: an audit sample was already declared for this release (seed "
            f"{read_json(path).get('seed')}, n {read_json(path).get('n')}); the sample is drawn "
            "once: report on it, or move the file away to declare a new one"
        )
    write_json(path, out)
    with (release / WORKSHEET).open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["probe_id", "group", "rank", "first_pass", "issue", "reinspection"])
        for g, ids in selected.items():
            for rank, pid in enumerate(ids, start=1):
                w.writerow([pid, g, rank, "", "", ""])
    return out | {"plan": str(path), "worksheet": str(release / WORKSHEET)}


def _outcomes(release: Path, path: Path, sel: dict[str, str]) -> list[Outcome]:
    from truthline.systems.physalign._reverify import read_rows

    parent = {
        p["probe_id"]: p["parent_id"] for p in read_jsonl(release / "private" / "targets.jsonl")
    }
    out: dict[str, Outcome] = {}
    for n, r in enumerate(read_rows(path), start=1):
        at = f"{path}:{n}"
        pid = r.get("probe_id")
        if pid not in sel:
            raise TruthlineError(
                f"{at}: field probe_id: {pid!r} is not in the declared audit sample; only "
                "sampled probes are audited"
            )
        fp = (r.get("first_pass") or "").strip().lower()
        if not fp:  # a worksheet row not audited yet
            continue
        if fp not in FIRST_PASS:
            raise TruthlineError(f"{at}: field first_pass is {fp!r}; use pass or flag")
        re_ = (r.get("reinspection") or "").strip().lower() or None
        if fp == "flag" and re_ not in REINSPECTION:
            raise TruthlineError(
                f"{at}: field reinspection is {re_!r}; a flagged probe needs pass or unresolved"
            )
        if fp == "pass" and re_ is not None:
            raise TruthlineError(f"{at}: field reinspection: probe {pid} passed at first pass")
        if pid in out:
            raise TruthlineError(f"{at}: probe {pid} has a second outcome row")
        out[str(pid)] = Outcome(str(pid), sel[str(pid)], parent[str(pid)], fp, re_)
    return [out[k] for k in sorted(out)]


def _rate(ok: list[int], parents: list[str]) -> dict[str, Any]:
    from truthline.stats import proportion_ci

    if not ok:
        return {"point": None, "low": None, "high": None, "n": 0}
    ci = proportion_ci(ok, [1] * len(ok), clusters=parents if len(set(parents)) >= 2 else None)
    return {"point": ci.point, "low": ci.low, "high": ci.high, "n": len(ok), "method": ci.method}


def _summary(rows: list[Outcome]) -> dict[str, Any]:
    parents = [r.parent for r in rows]
    first = [int(r.first_pass == "pass") for r in rows]
    after = [int(r.first_pass == "pass" or r.reinspection == "pass") for r in rows]
    flagged = [r for r in rows if r.first_pass == "flag"]
    return {
        "audited": len(rows),
        "passed_first": sum(first),
        "flagged": len(flagged),
        "corrected_passed": sum(r.reinspection == "pass" for r in flagged),
        "unresolved": sum(r.reinspection == "unresolved" for r in flagged),
        "accepted_after_correction": sum(after),
        "first_pass_rate": _rate(first, parents),
        "after_correction_rate": _rate(after, parents),
        "reinspection_pass_rate": _rate(
            [int(r.reinspection == "pass") for r in flagged], [r.parent for r in flagged]
        ),
    }


def report(release: Path, outcomes: Path) -> dict[str, Any]:
    """Table 5 (a) allocation and (b) outcomes of the declared audit sample."""
    release = Path(release)
    path = release / PLAN
    if not path.is_file():
        raise TruthlineError(
            f"{path}: no audit sample declared; run `truthline physalign post-audit plan` first"
        )
    p = read_json(path)
    sel = {pid: g for g, ids in p["selected"].items() for pid in ids}
    rows = _outcomes(release, Path(outcomes), sel)
    by_group = {g: [r for r in rows if r.group == g] for g in p["selected"]}
    return {
        "release": str(release),
        "seed": p["seed"],
        "order": p["order"],
        "frame": p["frame"],
        "sample": len(sel),
        "not_yet_audited": sorted(set(sel) - {r.probe_id for r in rows}),
        "allocation": {
            g: {"group_size": p["groups"][g], "audited": p["allocation"][g]} for g in p["groups"]
        },
        "overall": _summary(rows),
        "groups": {g: _summary(v) for g, v in by_group.items()},
        "note": "pooled rates describe the audited set; sampling fractions differ by group, "
        "so they are not estimates for the whole inventory",
    }
