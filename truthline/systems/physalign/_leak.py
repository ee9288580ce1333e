"""The leak check (spec §4.3): no private value may reach a public file or a rendered prompt.

Private values are the parent ids, entity ids and internal names, the primitive, mention
and observation ids the targets were compiled from, the alias map, and, for a probe with a
reading target, its target text anywhere but the +GT input. Private key names
(``parent_id``, ``alias_map``, ...) may not appear in a public record at any depth. The
check runs on the compiled release in memory (before anything public is written), on the
release folder (files, file names, rendered prompts), and on any extra texts a caller
renders (the benchmark's prompts).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from truthline.errors import TruthlineError
from truthline.systems.physalign._prompt import render_prompt

PRIVATE_KEYS = frozenset(
    {
        "parent_id",
        "alias_map",
        "targets",
        "target",
        "entity_id",
        "entity_ids",
        "internal_name",
        "eligibility",
        "owner_id",
        "membership",
        "answer",
        "source_links",
        "review",
    }
)


_TOKEN = re.compile(r"[\w.]+")


class LeakError(TruthlineError):
    """A private value reached a public record, file name or prompt."""


def occurs(needle: str, text: str) -> bool:
    """``needle`` as a token of ``text`` (not inside a longer word: ``N`` is not in ``Answer``)."""
    return re.search(r"(?<!\w)" + re.escape(needle) + r"(?!\w)", text) is not None


def _secrets(private: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, str]:
    """secret string -> what it is (for the error message)."""
    out: dict[str, str] = {}
    for rec in records:
        out[rec["parent_id"]] = "parent id"
        for e in rec["pass2"]["entities"]:
            out[e["entity_id"]] = "entity id"
            if e.get("internal_name"):
                out[str(e["internal_name"])] = "entity internal name"
        for p in rec["pass1"]["primitives"]:
            out[p["prim_id"]] = "primitive id"
        for m in rec["pass3"]["text_mentions"]:
            out[m["mention_id"]] = "mention id"
        for o in rec["pass4"]["observations"]:
            if o.get("obs_id"):
                out[str(o["obs_id"])] = "observation id"
    for p in private:
        out[p["parent_id"]] = "parent id"
        for ent in p["alias_map"].values():
            out[ent] = "entity id (alias map)"
    return out


def _pattern(secrets: dict[str, str]) -> re.Pattern[str] | None:
    words = sorted((s for s in secrets if s), key=len, reverse=True)
    if not words:
        return None
    return re.compile(r"(?<![\w.])(" + "|".join(re.escape(w) for w in words) + r")(?![\w])")


def _keys(obj: Any, path: str = "") -> Iterable[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield f"{path}/{k}" if k in PRIVATE_KEYS else ""
            yield from _keys(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _keys(v, f"{path}/{i}")


def check(
    public: list[dict[str, Any]],
    private: list[dict[str, Any]],
    records: list[dict[str, Any]],
    *,
    where: str = "public/probes.jsonl",
    extra_texts: dict[str, str] | None = None,
    file_names: list[str] | None = None,
    base_prompts: dict[str, str] | None = None,
) -> None:
    """Raise ``LeakError`` listing every leak (file, probe, field, what leaked).

    ``base_prompts`` (probe id -> a Base-condition prompt rendered elsewhere, e.g. by the
    benchmark's template) are scanned for private values and, for a probe with a reading
    target, for that target."""
    secrets = _secrets(private, records)
    # ids and keys made of word characters and dots are looked up token by token (a set);
    # anything else (a key with a space, say) goes through one regex alternation
    simple = {k for k in secrets if _TOKEN.fullmatch(k)}
    pat = _pattern({k: v for k, v in secrets.items() if k not in simple})
    priv_by_id = {p["probe_id"]: p for p in private}
    problems: list[str] = []

    def scan(text: str, at: str) -> None:
        for m in _TOKEN.finditer(text):
            prefix = ""
            # the same boundaries as the regex: a secret starts a run of [\w.] and ends at
            # the run's end or before one of its dots
            for part in m.group().split("."):
                prefix = f"{prefix}.{part}" if prefix else part
                if prefix in simple:
                    problems.append(f"{at}: {secrets[prefix]} {prefix!r}")
        if pat is not None:
            for m in pat.finditer(text):
                problems.append(f"{at}: {secrets[m.group(1)]} {m.group(1)!r}")

    for pub in public:
        pid = pub.get("probe_id", "?")
        for k in _keys(pub):
            if k:
                problems.append(
                    f"{where}: probe {pid}: field {k}: a private key in a public record"
                )
        scan(json.dumps(pub, ensure_ascii=False), f"{where}: probe {pid}")
        for cond in ("base", "plus_gt"):
            if cond in pub.get("conditions", {}):
                scan(render_prompt(pub, cond), f"rendered {cond} prompt of probe {pid}")
        priv = priv_by_id.get(pid)
        if priv is None:
            problems.append(f"{where}: probe {pid}: no private record (an orphan public probe)")
            continue
        read = (priv["targets"].get("read") or {}).get("text")
        if read and priv["eligibility"].get("L"):
            base = {k: v for k, v in pub.items() if k != "conditions"}
            if occurs(read, json.dumps(base, ensure_ascii=False)) or occurs(
                read, render_prompt(pub, "base")
            ):
                problems.append(
                    f"{where}: probe {pid}: the reading target {read!r} appears in the base "
                    "input (only the +GT input may carry it)"
                )
    for pid, text in (base_prompts or {}).items():
        at = f"benchmark prompt of probe {pid}"
        scan(text, at)
        priv = priv_by_id.get(pid)
        read = ((priv or {}).get("targets", {}).get("read") or {}).get("text")
        if priv and read and priv["eligibility"].get("L") and occurs(read, text):
            problems.append(f"{at}: the reading target {read!r} appears in the Base prompt")
    for name, text in (extra_texts or {}).items():
        scan(text, name)
    for name in file_names or []:
        scan(name, f"file name {name}")
    if problems:
        head = "\n".join(problems[:30])
        more = f"\n... and {len(problems) - 30} more" if len(problems) > 30 else ""
        raise LeakError(
            f"leak check failed ({len(problems)} leaks; nothing public may be "
            f"released):\n{head}{more}"
        )


def project_prompts(release: Path, project: Any) -> dict[str, str]:
    """Probe id -> the project's own Base prompt for each row of the release's import table
    (what a model is sent once the probes are imported into ``project``)."""
    import csv

    from truthline.models._prompt import render_prompt as project_prompt

    meta = Path(release) / "import" / "metadata.csv"
    if not meta.is_file():
        raise LeakError(f"{meta}: no import table; run `truthline physalign export` first")
    out = {}
    with meta.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            key = row.pop("key")
            row.pop("sim_truth", None)
            item = {"key": key, "meta": row, "media": [f"{key}.png"]}
            system, user = project_prompt(project, item)
            out[key.rsplit("/", 1)[-1]] = f"{system or ''}\n{user}"
    return out


def leak_check_release(
    release: Any,
    records: list[dict[str, Any]] | None = None,
    *,
    extra_texts: dict[str, str] | None = None,
    project: Any = None,
) -> dict[str, Any]:
    """Check a compiled ``Release`` in memory (with its annotation ``records``) or a release
    folder (public files and their names, rendered prompts); returns what was checked."""
    from truthline.systems.physalign._records import read_jsonl

    if not isinstance(release, (str, Path)):
        check(
            release.public,
            release.private,
            records or [],
            where="public/probes.jsonl (in memory)",
            extra_texts=extra_texts,
        )
        return {"probes": len(release.public)}
    root = Path(release)
    pub_dir = root / "public"
    public = read_jsonl(pub_dir / "probes.jsonl")
    private = read_jsonl(root / "private" / "targets.jsonl")
    records = read_jsonl(root / "private" / "annotations.jsonl")
    files = sorted(p for p in pub_dir.rglob("*") if p.is_file())
    names = [p.relative_to(pub_dir).as_posix() for p in files]
    texts = dict(extra_texts or {})
    for p in files:  # every other public text file is scanned whole
        if p.suffix in (".json", ".jsonl", ".csv", ".md", ".txt") and p.name != "probes.jsonl":
            texts[str(p)] = p.read_text(encoding="utf-8", errors="replace")
    prompts = project_prompts(root, project) if project is not None else None
    check(
        public,
        private,
        records,
        where=str(pub_dir / "probes.jsonl"),
        extra_texts=texts,
        file_names=names,
        base_prompts=prompts,
    )
    return {
        "probes": len(public),
        "files": len(names),
        "texts": len(texts),
        "project_prompts": len(prompts or {}),
    }
