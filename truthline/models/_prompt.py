"""Prompts rendered from the project's Jinja2 templates, and requests built from items.

Template context: ``project`` (the Project), ``item`` (``id``, ``key``, ``meta``, ``parent``,
``media``), ``fields`` (top-level name -> FieldType; ``.describe`` says what a valid
value is, entity lists have ``.subfields``), ``taxonomies`` (name -> Taxonomy),
``n_images`` and ``variant`` (the ``[prompts] variants`` name being rendered, ``"default"``
for the user prompt: one template can serve several variants, e.g. a prompt-order
ablation). Undefined names are errors that name the template file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.models._types import ModelRequest


@lru_cache(maxsize=64)
def _template(path: str, mtime: float):
    import jinja2

    env = jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False
    )
    try:
        return env.from_string(Path(path).read_text(encoding="utf-8"))
    except jinja2.TemplateSyntaxError as exc:
        raise TruthlineError(f"{path}:{exc.lineno}: template syntax error: {exc.message}") from None


def render_template(path: Path, context: dict[str, Any]) -> str:
    import jinja2

    if not path.is_file():
        raise TruthlineError(f"prompt template {path} not found")
    tpl = _template(str(path), path.stat().st_mtime)
    try:
        return tpl.render(**context).strip()
    except jinja2.UndefinedError as exc:
        raise TruthlineError(
            f"{path}: {exc.message} (context: project, item, fields, taxonomies, n_images, variant)"
        ) from None


def typed_meta(meta: dict[str, Any] | None, *, strict: str | None = None) -> dict[str, Any]:
    """Item metadata with JSON cells decoded: a metadata CSV stores every cell as text, so
    candidates or an anchor box arrive as ``'{"E1": ...}'``; templates and rules need the
    structure. A cell that does not parse stays text, unless ``strict`` (the item's key)
    is given: then it is an error naming the item and column."""
    out: dict[str, Any] = {}
    for k, v in (meta or {}).items():
        if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
            try:
                v = json.loads(v)
            except json.JSONDecodeError as exc:
                if strict is not None:
                    raise TruthlineError(
                        f"item {strict!r}: metadata column {k!r} is not valid JSON ({exc.msg} "
                        f"at char {exc.pos}); fix the metadata CSV and import it again"
                    ) from None
        out[k] = v
    return out


def _default_user(project: Any, n_images: int) -> str:
    lines = [f"You are shown {n_images} image(s). Answer with exactly one JSON object with keys:"]
    lines += [f'- "{n}": {f.describe}' for n, f in project.field_types.items()]
    return "\n".join(lines)


def render_prompt(
    project: Any, item: dict[str, Any], *, template: str | None = None
) -> tuple[str | None, str]:
    """``(system, user)`` for one item; ``template`` is a user template path relative to
    the project (default: ``prompts.user``), or a variant name from ``prompts.variants``."""
    return _render(project, item, template, {})


def _render(
    project: Any, item: dict[str, Any], template: str | None, defaults: dict[int, str]
) -> tuple[str | None, str]:
    """``render_prompt``; ``defaults`` keeps the default user prompt per image count
    (the same for every item of a project without a user template)."""
    n_images = len(item.get("media") or [])
    rel = project.prompts.variants.get(template, template) if template else project.prompts.user
    if not rel and n_images not in defaults:
        defaults[n_images] = _default_user(project, n_images)
    if not rel and not project.prompts.system:  # nothing to render per item
        return None, defaults[n_images]
    ctx = {
        "project": project,
        "item": {
            "id": item.get("id"),
            "key": item.get("key"),
            "meta": typed_meta(item.get("meta")),
            "parent": item.get("parent"),
            "media": item.get("media") or [],
        },
        "fields": project.field_types,
        "taxonomies": project.taxonomies,
        "n_images": n_images,
        "variant": template or "default",
    }
    system = None
    if project.prompts.system:
        system = render_template(project.prompt_path(project.prompts.system), ctx)
    user = render_template(project.prompt_path(rel), ctx) if rel else defaults[n_images]
    return system, user


def default_settings(project: Any, **overrides: Any) -> dict[str, Any]:
    """Request settings (part of the cache key): decoding, output cap, image policy."""
    out: dict[str, Any] = {
        "temperature": 0.0,
        "max_tokens": project.benchmark.output_cap,
        "image_policy": project.image_policy.model_dump(),
    }
    out.update({k: v for k, v in overrides.items() if v is not None})
    return out


def item_requests(
    project: Any,
    items: Iterable[dict[str, Any]],
    *,
    purpose: str,
    settings: dict[str, Any] | None = None,
    template: str | None = None,
    context: dict[str, Any] | None = None,
) -> list[ModelRequest]:
    """One request per stored item (``Store.items`` rows), prompts rendered, images resolved."""
    # one dict for every request (nothing changes a request's settings): the writer binds
    # it once per group and the runner checks it once, not once per item
    shared = dict(settings or default_settings(project))
    defaults: dict[int, str] = {}
    roots: dict[str, Path] = {}  # items share a few media roots: each parsed once
    out = []
    for it in items:
        system, user = _render(project, it, template, defaults)
        where = it.get("media_root") or "."
        root = roots.get(where) or roots.setdefault(where, Path(where))
        ctx = {
            "meta": typed_meta(it.get("meta")),
            "key": it.get("key"),
        }
        if template:
            ctx["variant"] = template
        ctx.update(context or {})
        out.append(
            ModelRequest(
                project=project.name,
                item_id=it.get("id"),
                purpose=purpose,
                system=system,
                user=user,
                images=[root / m for m in it.get("media") or []],
                fields=project.field_types,
                settings=shared,
                context=ctx,
            )
        )
    return out
