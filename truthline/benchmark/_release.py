"""The public, hub-ready half of a release: typed Parquet splits that ``datasets`` loads.

Why a module of its own: the hub format (Hugging Face ``datasets`` Parquet with feature
metadata, train/test splits, pseudonymous annotators) is a contract with outside tools;
``_export`` keeps the private records that let truthline reload a release exactly.

Columns are real Arrow types: strings, numbers, booleans, lists and structs (entity lists
are lists of structs, boxes are structs); images are the ``datasets`` Image encoding
``struct<bytes: binary, path: string>`` declared in the schema's ``huggingface`` metadata,
so ``load_dataset`` decodes them to PIL images. No column carries JSON text.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from truthline._limits import MAX_INPUT_BYTES, read_capped
from truthline._names import inside
from truthline.benchmark._gold import GoldItem
from truthline.errors import TruthlineError
from truthline.project import Project

SPLITS = ("train", "test")
ROLES = frozenset({"adjudicator", "expert"})
"""Gold sources that name a role, not a person (kept as they are in public files)."""


def pseudonymizer(secret: bytes) -> Callable[[str], str]:
    """Stable per-release pseudonyms: HMAC-SHA256 of the annotator id under a release secret
    (kept in ``private/``), so the same person has one pseudonym across a release's files and
    nobody without the secret can test a guessed id against it."""

    def pseud(name: str) -> str:
        return (
            "annotator-" + hmac.new(secret, name.encode("utf-8"), hashlib.sha256).hexdigest()[:10]
        )

    return pseud


def is_person(source: str) -> bool:
    """A gold source naming a person: not a role word, not a model spec (``kind:name``)."""
    return source not in ROLES and ":" not in source


def cluster_of(project: Project, it: GoldItem) -> str:
    """The unit items are split by: the parent (video, problem), else the project's cluster
    metadata column, else the item itself."""
    for col in (project.cluster, project.benchmark.cluster):
        if col and it.meta.get(col) not in (None, ""):
            return str(it.meta[col])
    return str(it.parent) if it.parent else it.key


def assign_splits(clusters: dict[str, str], seed: int, test_fraction: float) -> dict[str, str]:
    """Item key -> ``train``/``test``: whole clusters in a seeded order go to test until it
    holds ``test_fraction`` of the items; at least one cluster stays in train and, with two
    or more clusters, at least one goes to test. Deterministic for a seed."""
    if not 0 < test_fraction < 1:
        raise TruthlineError(f"test fraction {test_fraction} must be between 0 and 1")
    members: dict[str, list[str]] = {}
    for key, c in sorted(clusters.items()):
        members.setdefault(c, []).append(key)
    order = sorted(members)
    random.Random(seed).shuffle(order)
    want = test_fraction * len(clusters)
    test: set[str] = set()
    n_test = 0
    for c in order[:-1]:  # the last cluster always stays in train
        if test and n_test >= want:
            break
        test.add(c)
        n_test += len(members[c])
    return {k: ("test" if c in test else "train") for k, c in clusters.items()}


def nested_gold(project: Project, values: dict[str, Any]) -> dict[str, Any]:
    """Decision-level gold (``workers[P1].action``) as the nested value of each field:
    scalars by name, entity lists as a list of objects keyed by their id."""
    out: dict[str, Any] = {}
    for name, ft in project.field_types.items():
        subs = getattr(ft, "subfields", None)
        if subs is None:
            if name in values:
                out[name] = values[name]
            continue
        key = getattr(ft.spec, "key", None) or "id"
        ents: dict[str, dict[str, Any]] = {}
        for e in values.get(name) or []:
            if isinstance(e, dict):
                ents[str(e.get(key))] = dict(e)
            else:
                ents[str(e)] = {key: e}
        pat = re.compile(rf"^{re.escape(name)}\[([^\]]*)\]\.(.+)$")
        for path, v in values.items():
            m = pat.match(path)
            if m:
                ents.setdefault(m.group(1), {key: m.group(1)})[m.group(2)] = v
        if name in values or ents:
            out[name] = list(ents.values())
    return out


def hf_feature(t: pa.DataType) -> Any:
    """The ``datasets`` feature dict (``Features.to_dict`` form) of an Arrow type."""
    if pa.types.is_struct(t):
        return {t.field(i).name: hf_feature(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"feature": hf_feature(t.value_type), "_type": "List"}
    return {"dtype": _dtype(t), "_type": "Value"}


def yaml_feature(name: str, feat: Any) -> dict[str, Any]:
    """One feature in the dataset card's ``dataset_info.features`` form."""
    return {"name": name, **_yaml_body(feat)}


def _yaml_body(feat: Any) -> dict[str, Any]:
    if feat.get("_type") == "Image":
        return {"dtype": "image"}
    if feat.get("_type") == "Value":
        return {"dtype": feat["dtype"]}
    if feat.get("_type") == "List":
        inner = _yaml_body(feat["feature"])
        return {"list": inner.get("dtype", inner.get("struct", inner))}
    return {"struct": [yaml_feature(k, v) for k, v in feat.items()]}


def _dtype(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_binary(t):
        return "binary"
    return str(t)  # int64; double/float become float64/float32 in _fix_double


IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


@dataclass
class PublicRow:
    """One item as published; ``media`` are (public name, file) pairs."""

    key: str
    split: str
    media: list[tuple[str, Path]]
    columns: dict[str, Any] = field(default_factory=dict)


def media_column(project: Project, n_media: Sequence[int]) -> str:
    """``image`` (one image per item), ``frames`` (several) or ``video`` (files by path)."""
    if project.media == "video":
        return "video"
    return "image" if all(n == 1 for n in n_media) else "frames"


def write_splits(public: Path, rows: list[PublicRow], media_col: str) -> dict[str, Any]:
    """``public/data/<split>-00000-of-00001.parquet`` per non-empty split; returns the
    features (``datasets`` dict form) and item counts per split."""
    records = []
    for r in rows:
        rec: dict[str, Any] = {"item": r.key}
        if media_col == "video":
            rec[media_col] = [name for name, _ in r.media]
        else:
            imgs = [{"bytes": p.read_bytes(), "path": name} for name, p in r.media]
            rec[media_col] = imgs[0] if media_col == "image" else imgs
        rec.update(r.columns)
        records.append(rec)
    try:
        table = pa.Table.from_pylist(records)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise TruthlineError(
            f"release: gold or metadata values of one column have mixed types ({e}); "
            "make each field's values one type before exporting"
        ) from e
    feats = {}
    for f in table.schema:
        if f.name == media_col and media_col != "video":
            feats[f.name] = (
                {"_type": "Image"}
                if media_col == "image"
                else {"feature": {"_type": "Image"}, "_type": "List"}
            )
        else:
            feats[f.name] = hf_feature(f.type)
    for v in feats.values():
        _fix_double(v)
    meta = {b"huggingface": json.dumps({"info": {"features": feats}}).encode("utf-8")}
    table = table.replace_schema_metadata(meta)
    data = inside(public, "data")
    data.mkdir(parents=True, exist_ok=True)
    splits: dict[str, int] = {}
    sizes: dict[str, int] = {}
    keys = [r.key for r in rows]
    for split in SPLITS:
        idx = [i for i, r in enumerate(rows) if r.split == split]
        if not idx:
            continue
        part = table.take(pa.array(idx))
        pq.write_table(part, data / f"{split}-00000-of-00001.parquet")
        splits[split] = len(idx)
        sizes[split] = int(part.nbytes)
    return {"features": feats, "splits": splits, "num_bytes": sizes, "items": keys}


def _fix_double(feat: Any) -> None:
    """Arrow's ``double``/``float`` are ``float64``/``float32`` in ``datasets``."""
    if not isinstance(feat, dict):
        return
    if feat.get("_type") == "Value":
        feat["dtype"] = {"double": "float64", "float": "float32"}.get(feat["dtype"], feat["dtype"])
        return
    for v in feat.values():
        _fix_double(v)


def read_images(public: Path, media_col: str) -> dict[str, list[tuple[str, bytes]]]:
    """Item key -> (public name, bytes) of its images, read back from the split files."""
    out: dict[str, list[tuple[str, bytes]]] = {}
    for f in sorted((public / "data").glob("*.parquet")):
        t = pq.read_table(f, columns=["item", media_col])
        for key, media in zip(
            t.column("item").to_pylist(), t.column(media_col).to_pylist(), strict=True
        ):
            imgs = [media] if media_col == "image" else list(media or [])
            out[key] = [(m["path"], m["bytes"]) for m in imgs]
    return out


# -- verifying a release against its SHA256SUMS -----------------------------------------
_SUM_LINE = re.compile(r"^(?P<hash>[0-9a-fA-F]{64})  (?P<rel>\S.*)$")
"""A line as ``sha256sum`` and ``_export`` write it: the digest, two spaces, the path."""


@dataclass
class Verification:
    """What ``verify_files`` found: files whose checksum differs, listed files that are
    gone, and files present but not listed (an added file is no part of what was signed)."""

    mismatched: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[str]:
        """Every failing path, sorted (empty: the release is intact)."""
        return sorted({*self.mismatched, *self.missing, *self.unlisted})

    def summary(self) -> str:
        """One line: how many of each failure, with the first few paths."""
        parts = []
        for what, paths in (
            ("checksum mismatch", self.mismatched),
            ("listed but missing", self.missing),
            ("not listed in SHA256SUMS", self.unlisted),
        ):
            if paths:
                more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
                parts.append(f"{what}: {', '.join(paths[:5])}{more}")
        return "; ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "mismatches": self.failures,
            "mismatched": self.mismatched,
            "missing": self.missing,
            "unlisted": self.unlisted,
        }


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _listed(release: Path, sums: Path) -> dict[str, str]:
    """Relative path -> checksum from SHA256SUMS; a malformed line, a path listed twice or
    one leaving the release (``..``, absolute, a symlink out) is an error naming its line."""
    root = release.resolve()
    out: dict[str, str] = {}
    try:
        text = read_capped(sums, MAX_INPUT_BYTES, "SHA256SUMS").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TruthlineError(f"{sums}: not UTF-8 text (byte {exc.start})") from None
    for n, line in enumerate(text.splitlines(), start=1):
        m = _SUM_LINE.match(line)
        if not m:
            raise TruthlineError(
                f"{sums}:{n}: malformed line {line[:80]!r}; expected '<64 hex digits>  <path>'"
            )
        rel = m["rel"]
        target = (release / rel).resolve()
        if Path(rel).is_absolute() or ".." in Path(rel).parts or not target.is_relative_to(root):
            raise TruthlineError(
                f"{sums}:{n}: {rel!r} points outside the release; a release lists only its "
                "own files"
            )
        if rel in out:
            raise TruthlineError(f"{sums}:{n}: {rel!r} is listed twice")
        out[rel] = m["hash"].lower()
    return out


def _present(release: Path, sums: Path) -> list[str]:
    """Every file under the release (symlinks not followed), but SHA256SUMS itself."""
    found = []
    for folder, dirs, files in os.walk(release):
        linked = [d for d in dirs if (Path(folder) / d).is_symlink()]  # os.walk skips them
        for name in [*files, *linked]:
            p = Path(folder) / name
            if p != sums:
                found.append(p.relative_to(release).as_posix())
    return sorted(found)


def verify_files(path: Path) -> Verification:
    """Check a release folder (or its ``public/`` half) against its SHA256SUMS."""
    release = Path(path)
    sums = release / "SHA256SUMS"
    if not sums.is_file():
        raise TruthlineError(f"{release} has no SHA256SUMS; is it a truthline release?")
    listed = _listed(release, sums)
    res = Verification()
    for rel, digest in sorted(listed.items()):
        f = release / rel
        if not f.is_file():
            res.missing.append(rel)
        elif _file_sha256(f) != digest:
            res.mismatched.append(rel)
    res.unlisted = [rel for rel in _present(release, sums) if rel not in listed]
    return res
