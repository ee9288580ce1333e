"""One builder of a ``responses`` row for the model-layer tests that store rows directly
(the journal, the cache lookup): a parsed answer, everything else plain."""

from __future__ import annotations

from typing import Any

from truthline.store import now

GOOD = '{"label": "dog", "count": 3}'


def response_row(key: str, **over: Any) -> dict[str, Any]:
    """A stored answer under ``key``; ``over`` replaces columns."""
    ts = now()
    row: dict[str, Any] = dict(
        cache_key=key,
        created_at=ts,
        project="tiny",
        item_id=None,
        purpose="benchmark",
        model_spec="openai:m",
        model_alias="m",
        simulated=False,
        status="parsed",
        reason=None,
        raw_response=GOOD,
        parsed={"label": "dog", "count": 3},
        field_errors={},
        tokens_in=10,
        tokens_out=5,
        tokens_thinking=0,
        cost_usd=0.001,
        latency_s=0.1,
        attempts=1,
        settings={},
        prompt_hash="p",
        image_hashes=[],
        prompt={"system": None, "user": "u"},
        updated_at=ts,
    )
    row.update(over)
    return row
