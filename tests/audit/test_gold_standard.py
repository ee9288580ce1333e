"""Gold-standard accuracy per annotator (issue 26) on the hand-built example: the expert's
answers (items 1-7 and 10) become the known answers, each tier-1 annotator is scored on
the ones in their queue, every count worked out by hand, with a Wilson 95% interval."""

from __future__ import annotations

import math

from truthline.annotate._gold_standard import answers_from_experts, known_answers
from truthline.audit import run_audit
from truthline.audit._gold_standard import accuracy
from truthline.audit._report import to_markdown
from truthline.store import now, tables

from .test_hand import hand  # noqa: F401  (the fixture)


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return mid - half, mid + half


def test_accuracy_on_expert_answers(hand):  # noqa: F811
    store, project, ids = hand
    assert accuracy(store, project) == {}  # no known answers yet: nothing to report
    assert answers_from_experts(store, project) == 8 * 3
    known = known_answers(store, project.name)
    assert set(known) == {ids[f"i{k}"] for k in (1, 2, 3, 4, 5, 6, 7, 10)}
    assert known[ids["i3"]] == {"action": "carry", "violation": True, "count": 5}
    acc = accuracy(store, project)
    # A: items 1 (3 right), 2 (action wrong), 3 (action wrong), 10 (3 right) -> 10 of 12
    # B: 4 (action wrong; count 3 vs 2 within tolerance 1), 5 (3), 6 (action wrong),
    #    10 (count 2 vs 1 within tolerance) -> 10 of 12;  C: 7 (action wrong) -> 2 of 3
    got = {a: (x.items, x.correct, x.scored) for a, x in acc.items()}
    assert got == {"A": (4, 10, 12), "B": (4, 10, 12), "C": (1, 2, 3)}
    lo, hi = _wilson(2, 3)
    assert math.isclose(acc["C"].accuracy, 2 / 3)
    assert math.isclose(acc["C"].low, lo, rel_tol=1e-9) and math.isclose(acc["C"].high, hi)

    r = run_audit(store, project, resamples=50, gradient_model="hand-eval").as_dict()
    assert r["gold_standard"]["A"]["correct"] == 10 and r["gold_standard"]["C"]["scored"] == 3
    # reported beside the signals, not as one: nobody is flagged by it
    assert all("gold" not in k for s in r["signals"].values() for k in s["signals"])
    md = to_markdown(r)
    assert "Gold-standard accuracy" in md
    assert f"0.667 [{lo:.3f}, {hi:.3f}]" in md


def test_audit_warns_about_exposed_blind_labels(hand):  # noqa: F811
    store, project, ids = hand
    r = run_audit(store, project, resamples=20, gradient_model="hand-eval")
    assert not any("exposure violation" in w for w in r.warnings)
    with store.begin() as conn:
        conn.execute(
            tables.exposure_violations.insert(),
            [
                dict(
                    project=project.name,
                    item_id=ids["i10"],
                    server_url="http://127.0.0.1:1",
                    ls_project_id=1,
                    ls_task_id=5,
                    kind=kind,
                    source_id=sid,
                    annotator="A",
                    detail="planted",
                    found_at=now(),
                )
                for kind, sid in (
                    ("prediction_on_task", ""),
                    ("prediction_on_task", "ls:1:9@x"),
                    ("annotator_saw_item", "ls:1:9@x"),
                )
            ],
        )
    r = run_audit(store, project, resamples=20, gradient_model="hand-eval")
    assert next(w for w in r.warnings if "exposure violation" in w).startswith("1 blind label(s)")
