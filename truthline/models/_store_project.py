"""Small helpers for backends that need the project definition or a stable item key."""

from __future__ import annotations

import hashlib
from types import SimpleNamespace
from typing import Any

from sqlalchemy import select

from truthline.models._types import ModelRequest
from truthline.store import tables


def project_from_store(store: Any, name: str, fields: Any) -> Any:
    """The project as registered in the store; falls back to the request's fields."""
    if store is not None:
        with store.begin() as conn:
            row = conn.execute(
                select(tables.projects.c.definition).where(tables.projects.c.name == name)
            ).first()
        if row is not None:
            from truthline.project import validate_data

            return validate_data(row[0], f"<store project {name}>")
    return SimpleNamespace(name=name, field_types=dict(fields))


def key_of(req: ModelRequest) -> str:
    """Deterministic key of a request for simulations: item key, variant, prompt hash."""
    ident = req.context.get("key") or req.item_id
    h = hashlib.sha256(f"{req.system}\x1f{req.user}".encode()).hexdigest()[:16]
    return f"{ident}|{req.context.get('variant', '')}|{h}"
