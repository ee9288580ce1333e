"""The audit reads the same decisions from SQLite and PostgreSQL: on SQLite annotation values
are read as JSON text and decoded by the audit's own fast path, on PostgreSQL by the driver,
and both give the same estimates, intervals, gold values and gold hash."""

from __future__ import annotations

import math
import os
from typing import Any

import pytest

from tests.conftest import _reset_pg
from truthline.audit import load, run_audit
from truthline.audit._gold import decide
from truthline.project import load_project
from truthline.simulate import build_scenario
from truthline.store import Store
from truthline.workspace import templates_dir


def _norm(x: Any) -> Any:
    """JSON-comparable, NaN equal to NaN."""
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x
    if isinstance(x, dict):
        return {str(k): _norm(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_norm(v) for v in x]
    return x if isinstance(x, int | str | bool | type(None)) else str(x)


def _audit(url: str) -> dict[str, Any]:
    project = load_project(templates_dir() / "steel-safety")
    store = Store(url)
    try:
        sc = build_scenario(store, project, n_items=40, seed=3)
        res = run_audit(store, project, resamples=200, gradient_model=sc.benchmark_version)
        data = load(store, project)
        gold = decide(data, dict(data.exclusions))
        out = _norm(res.as_dict())
        return {
            "audit": {k: v for k, v in out.items() if k not in ("created_at", "store")},
            "gold_hash": gold.hash,
            "gold": _norm([[v.item, v.path, v.value, v.provenance, v.arm] for v in gold.values]),
            "pending": _norm([[p.item, p.kind, p.path, p.reason] for p in gold.pending]),
        }
    finally:
        store.close()


def test_sqlite_and_postgresql_audit_alike(tmp_path):
    pg = os.environ.get("TRUTHLINE_TEST_PG_URL")
    if not pg:
        pytest.fail("TRUTHLINE_TEST_PG_URL is not set: run the suite with scripts/test.sh")
    _reset_pg(pg)
    lite = _audit(f"sqlite:///{tmp_path / 'a.db'}")
    assert lite["gold"] and lite["audit"]
    assert _audit(pg) == lite
