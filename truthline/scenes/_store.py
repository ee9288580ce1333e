"""Where rendered frames live: images by content hash, one JSON record per frame.

Layout under a store root (a workspace's media dir, or ``--out``)::

    media/<sha256[:2]>/<sha256>.<ext>     every image variant, written once, atomically
    records/<job_id>.json                 the FrameRecord (written last, atomically)

A record is written only after all its images are in place, so a crash mid-frame leaves
no record and the frame is simply rendered again; a frame whose record exists and whose
images are all present is skipped by a rerun (its job key covers env, version, params,
seed and render settings).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from truthline.scenes._types import IMAGE_VARIANTS, FrameRecord, SceneError


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        # the rename is what makes it atomic for a crashed or killed run; no fsync (it cost
        # more than the rest of the host's work per frame, and a frame is cheap to redo)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class FrameStore:
    """Content-addressed images plus frame records under ``root``."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self.media = self.root / "media"
        self.records_dir = self.root / "records"

    # -- images --------------------------------------------------------------------------
    def put_image(self, data: bytes, ext: str) -> str:
        """Store ``data`` under its sha256 (no-op when present); returns the hash."""
        sha = hashlib.sha256(data).hexdigest()
        path = self.image_path(sha, ext)
        if not path.exists():
            _atomic_write(path, data)
        return sha

    def image_path(self, sha: str, ext: str) -> Path:
        return self.media / sha[:2] / f"{sha}.{ext.lstrip('.')}"

    def variant_path(self, record: FrameRecord, variant: str) -> Path:
        """The file of one image variant of a record (``rgb``, ``linear``, ``mask``, ``nv``)."""
        if variant not in record.images:
            raise SceneError(
                f"frame {record.job_id} has no {variant!r} image "
                f"(it has: {', '.join(sorted(record.images)) or 'none'})"
            )
        return self.image_path(record.images[variant], record.image_ext[variant])

    def add_variant(self, record: FrameRecord, variant: str, data: bytes, ext: str) -> FrameRecord:
        """Store a derived image (e.g. ``nv``, the night-vision ISP output made on the host)
        and rewrite the record to name it; returns the updated record."""
        if variant not in IMAGE_VARIANTS:
            raise SceneError(f"image variant {variant!r}: use one of {', '.join(IMAGE_VARIANTS)}")
        record.images[variant] = self.put_image(data, ext)
        record.image_ext[variant] = ext.lstrip(".")
        self.save(record)
        return record

    # -- records -------------------------------------------------------------------------
    def record_path(self, job_id: str) -> Path:
        return self.records_dir / f"{job_id}.json"

    def has(self, job_id: str) -> bool:
        """True when the frame is complete: its record and every image it names exist."""
        p = self.record_path(job_id)
        if not p.is_file():
            return False
        try:
            rec = self.load(job_id)
        except SceneError:
            return False
        return all(self.variant_path(rec, v).is_file() for v in rec.images)

    def load(self, job_id: str) -> FrameRecord:
        p = self.record_path(job_id)
        return FrameRecord.from_json(p.read_text(), source=str(p))

    def save(self, record: FrameRecord) -> Path:
        p = self.record_path(record.job_id)
        _atomic_write(p, record.to_json().encode())
        return p

    def records(self) -> Iterator[FrameRecord]:
        """Every record in the store, in job-id order."""
        if not self.records_dir.is_dir():
            return
        for p in sorted(self.records_dir.glob("*.json")):
            yield FrameRecord.from_json(p.read_text(), source=str(p))
