"""Cache keys: what identifies a request's answer in the store.

A key is the SHA-256 of the JSON (sorted keys) of what is sent: the model's identity, the
settings but ``KEY_LABELS``, the rendered prompt's hash and the images' hashes; identical
requests share one key, so nothing is asked twice. The text hashed never changes (answers
stored years ago are found under it): ``request_keys`` builds the very text ``json_hash``
hashes, from parts serialized once per run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from truthline.models._images import image_hash
from truthline.models._spec import ModelSpec
from truthline.models._types import ModelRequest
from truthline.store import json_hash, json_hash_text, text_hash

KEY_LABELS = ("condition", "control", "variant")
"""Settings that only label a request (a benchmark's condition, control, prompt variant):
never sent, and what they change (prompt text, images) is in the key already. Left out of
the key, so a benchmark request byte-identical to a prefill request shares its answer."""

Key = tuple[str, str, list[str]]
"""``(cache_key, prompt_hash, image_hashes)``."""

_TEXT = json_hash_text


def request_key(spec: ModelSpec, req: ModelRequest, *, reads_context: bool = False) -> Key:
    """``(cache_key, prompt_hash, image_hashes)`` for one request: what is sent (model,
    settings but ``KEY_LABELS``, prompt, images), so identical requests share one key.

    ``reads_context``: the backend answers from the request's context (see
    ``Backend.reads_context``), so the item, its context and every setting are part of it.
    """
    prompt_hash = json_hash([req.system, req.user])
    images = [image_hash(p) for p in req.images]
    key = _key(spec, req, prompt_hash, images, reads_context, labels=reads_context)
    return key, prompt_hash, images


def _key(
    spec: ModelSpec,
    req: ModelRequest,
    prompt_hash: str,
    images: list[str],
    reads_context: bool,
    *,
    labels: bool,
) -> str:
    settings = (
        req.settings if labels else {k: v for k, v in req.settings.items() if k not in KEY_LABELS}
    )
    ident: dict[str, object] = {
        "model": spec.cache_identity,
        "settings": settings,
        "prompt": prompt_hash,
        "images": images,
    }
    if reads_context:
        ident["item"] = req.item_id
        ident["context"] = req.context
    return json_hash(ident)


def legacy_key(spec: ModelSpec, req: ModelRequest, key: Key, reads_context: bool) -> str | None:
    """The key this request had before ``KEY_LABELS`` left the key (answers stored then
    are still found under it: nothing is asked again); None where it is the same key."""
    if reads_context or not any(k in req.settings for k in KEY_LABELS):
        return None
    return _key(spec, req, key[1], key[2], False, labels=True)


def request_keys(
    spec: ModelSpec, requests: Sequence[ModelRequest], *, reads_context: bool = False
) -> tuple[list[Key], list[str | None]]:
    """``request_key`` and ``legacy_key`` of every request of a run, the same keys.

    Why: the requests of a run share one settings dict, and serializing it (twice: with
    and without its labels) was most of a key's cost. Here the model's identity and each
    settings dict are serialized once, and each key's text is put together from them:
    ``json.dumps`` of a dict with sorted keys is its parts' text in key order
    (``images`` < ``model`` < ``prompt`` < ``settings``), so the digest is ``json_hash``'s.
    """
    if reads_context:  # the item and its context are in the key: one request at a time
        keys = [request_key(spec, r, reads_context=True) for r in requests]
        return keys, [None] * len(keys)
    model = _TEXT(spec.cache_identity)
    texts: dict[int, tuple[dict[str, Any], str, str | None]] = {}
    keys, legacy = [], []
    for req in requests:
        done = texts.get(id(req.settings))
        if done is None or done[0] is not req.settings:  # (the dict is held: ids stay apart)
            kept = {k: v for k, v in req.settings.items() if k not in KEY_LABELS}
            labelled = _TEXT(req.settings) if len(kept) < len(req.settings) else None
            done = texts[id(req.settings)] = (req.settings, _TEXT(kept), labelled)
        prompt = json_hash([req.system, req.user])
        images = [image_hash(p) for p in req.images]
        head = f'{{"images": {_TEXT(images)}, "model": {model}, "prompt": {_TEXT(prompt)}, '
        keys.append((text_hash(f'{head}"settings": {done[1]}}}'), prompt, images))
        legacy.append(text_hash(f'{head}"settings": {done[2]}}}') if done[2] is not None else None)
    return keys, legacy


def fresh_key(key: str, since: datetime) -> str:
    """The key of a ``fresh`` answer to request ``key``: asked again by a run started at
    ``since`` (a rerun of that run finds it: nothing is asked twice)."""
    return json_hash({"fresh_of": key, "since": _utc(since).isoformat()})


def _utc(ts: datetime) -> datetime:
    """Aware UTC (SQLite returns stored times without their zone)."""
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


__all__ = ["KEY_LABELS", "Key", "fresh_key", "legacy_key", "request_key", "request_keys"]
