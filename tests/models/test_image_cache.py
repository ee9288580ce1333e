"""Encoded images kept per (source file, policy): the bytes are exactly a fresh encode's, a
changed file or policy misses, the disk copy is private, atomic, verified and bounded."""

from __future__ import annotations

import base64
import io
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from truthline.models import ModelRequest, run_requests
from truthline.models._image_cache import (
    MEMORY,
    ImageCache,
    clear_image_cache,
    default_image_cache_dir,
)
from truthline.models._images import data_url, encode_image, load_pil
from truthline.models._stub import StubServer


def reference_encode(path: Path, policy: dict) -> bytes:
    """``encode_image`` as it was before the cache: PIL straight from the path."""
    from PIL import Image

    with Image.open(path) as src:
        im = src.convert("RGB")
        side = int(policy.get("max_side", 1024))
        if max(im.size) > side:
            im.thumbnail((side, side), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        im.save(buf, format="JPEG", quality=int(policy.get("jpeg_quality", 85)))
    return buf.getvalue()


def write_png(path: Path, seed: int, shape=(90, 140, 3)) -> Path:
    import cv2

    rng = np.random.default_rng(seed)
    cv2.imwrite(str(path), rng.integers(0, 255, shape, np.uint8))
    return path


def from_url(url: str) -> bytes:
    head, _, b64 = url.partition(",")
    assert head == "data:image/jpeg;base64"
    return base64.b64decode(b64)


@pytest.fixture(autouse=True)
def _fresh_memory():
    MEMORY.clear()
    yield
    MEMORY.clear()


POLICIES = [{}, {"max_side": 64}, {"max_side": 64, "jpeg_quality": 40}, {"max_side": 500}]


@pytest.mark.parametrize("policy", POLICIES)
def test_cached_bytes_equal_a_fresh_encode(tmp_path, policy):
    img = write_png(tmp_path / "a.png", 1)
    ref = reference_encode(img, policy)
    cache = ImageCache(tmp_path / "cache", min_encode_s=0)
    assert encode_image(img, policy) == ref
    assert from_url(cache.data_url(img, policy)) == ref  # encoded
    assert from_url(cache.data_url(img, policy)) == ref  # memory
    MEMORY.clear()
    assert cache.jpeg(img, policy) == ref  # disk, as a later process reads it
    assert cache.stats == {"memory": 1, "disk": 1, "encoded": 1}
    assert from_url(data_url(img, policy)) == ref
    assert np.array_equal(np.asarray(load_pil(img, policy)), np.asarray(_pil(ref)))


def _pil(jpeg: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(jpeg)).convert("RGB")


def test_a_changed_file_or_policy_misses(tmp_path):
    img = write_png(tmp_path / "a.png", 1)
    cache = ImageCache(tmp_path / "cache", min_encode_s=0)
    first = cache.jpeg(img, {"max_side": 64})
    write_png(img, 2)  # same path and size, other pixels
    os.utime(img, ns=(1, 1))
    second = cache.jpeg(img, {"max_side": 64})
    assert second == reference_encode(img, {"max_side": 64}) != first
    assert cache.jpeg(img, {"max_side": 48}) == reference_encode(img, {"max_side": 48})
    assert cache.jpeg(img, {"max_side": 64, "jpeg_quality": 30}) == reference_encode(
        img, {"max_side": 64, "jpeg_quality": 30}
    )
    assert cache.stats["encoded"] == 4
    # detail is sent beside the image, not in it: no new encode
    assert cache.jpeg(img, {"max_side": 64, "detail": "low"}) == second
    assert cache.stats["encoded"] == 4
    files = sorted(p.name for p in (tmp_path / "cache").rglob("*.jpg"))
    assert len(files) == 4 and len({f.split(".")[1] for f in files}) == 3


def test_disk_entries_are_private_verified_and_rewritten_when_torn(tmp_path):
    img = write_png(tmp_path / "a.png", 3)
    folder = tmp_path / "cache"
    cache = ImageCache(folder, min_encode_s=0)
    ref = cache.jpeg(img, {})
    (entry,) = folder.rglob("*.jpg")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not [p for p in folder.rglob(".tmp-*")]
    entry.write_bytes(entry.read_bytes()[:-10])  # torn
    MEMORY.clear()
    assert cache.jpeg(img, {}) == ref
    assert cache.stats["disk"] == 0 and cache.stats["encoded"] == 2
    MEMORY.clear()
    assert cache.jpeg(img, {}) == ref
    assert cache.stats["disk"] == 1


def test_the_disk_cache_is_bounded_and_clearable(tmp_path):
    folder = tmp_path / "cache"
    imgs = [write_png(tmp_path / f"{i}.png", i) for i in range(8)]
    one = len(encode_image(imgs[0], {})) + 32
    cache = ImageCache(folder, max_disk_bytes=3 * one, min_encode_s=0)
    for i, img in enumerate(imgs):
        cache.jpeg(img, {})
        os.utime(next(folder.rglob(f"*{_sha(img)}*")), (i, i))  # a clear order of use
    held = sorted(folder.rglob("*.jpg"), key=lambda p: p.stat().st_mtime)
    assert sum(p.stat().st_size for p in held) <= 3 * one
    assert 1 <= len(held) <= 3
    assert _sha(imgs[-1]) in held[-1].name  # the newest stays
    assert not any(_sha(imgs[0]) in p.name for p in held)
    before = cache.stats["encoded"]
    MEMORY.clear()
    assert cache.jpeg(imgs[-1], {}) == encode_image(imgs[-1], {})
    assert cache.jpeg(imgs[0], {}) == encode_image(imgs[0], {})  # pruned: encoded again
    assert cache.stats["encoded"] == before + 1
    held = list(folder.rglob("*.jpg"))
    held_bytes = sum(p.stat().st_size for p in held)
    files, size = clear_image_cache(folder)
    assert (files, size) == (len(held), held_bytes)
    assert not list(folder.rglob("*.jpg"))
    assert MEMORY.size == 0


def test_a_cache_folder_deleted_during_a_run_is_made_again(tmp_path):
    import shutil

    folder = tmp_path / "cache"
    cache = ImageCache(folder, min_encode_s=0)
    img = write_png(tmp_path / "a.png", 1)
    ref = cache.jpeg(img, {})
    shutil.rmtree(folder)  # by hand, while the process runs
    for _ in range(2):  # the first write after it fails (skipped), the next makes the folder
        MEMORY.clear()
        assert cache.jpeg(img, {}) == ref  # sent all the same
    MEMORY.clear()
    assert cache.jpeg(img, {}) == ref
    assert len(list(folder.rglob("*.jpg"))) == 1 and cache.stats["disk"] == 1
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def _sha(path: Path) -> str:
    from truthline.models._images import image_hash

    return image_hash(path)


def test_cache_folder_is_the_workspace(tmp_path, store, monkeypatch):
    assert default_image_cache_dir(store) == tmp_path / "image-cache"

    class Remote:
        url = "postgresql://db/x"

    monkeypatch.delenv("TRUTHLINE_WORKSPACE", raising=False)
    assert default_image_cache_dir(Remote()) is None
    monkeypatch.setenv("TRUTHLINE_WORKSPACE", str(tmp_path / "ws"))
    assert default_image_cache_dir(Remote()) == tmp_path / "ws" / "image-cache"


def test_an_image_cheaper_to_encode_than_to_keep_stays_in_memory_only(tmp_path):
    folder = tmp_path / "cache"
    img = write_png(tmp_path / "a.png", 4)
    cache = ImageCache(folder, min_encode_s=60.0)  # no encode takes a minute
    ref = cache.jpeg(img, {})
    assert ref == reference_encode(img, {}) and not list(folder.rglob("*.jpg"))
    assert cache.jpeg(img, {}) == ref and cache.stats == {"memory": 1, "disk": 0, "encoded": 1}


def test_the_openai_backend_sends_cached_bytes_and_keeps_them_in_the_workspace(
    tmp_path, tiny, store, monkeypatch
):
    from truthline.models import _image_cache

    monkeypatch.setattr(_image_cache, "DISK_MIN_ENCODE_S", 0.0)  # these test images are small
    imgs = [write_png(tmp_path / f"{i}.png", 10 + i, (300, 200, 3)) for i in range(3)]
    policy = {"max_side": 128, "jpeg_quality": 70}
    sent: list[str] = []

    def answer(body: dict) -> str:
        for msg in body["messages"]:
            for part in msg["content"] if isinstance(msg["content"], list) else []:
                if part["type"] == "image_url":
                    sent.append(part["image_url"]["url"])
        return '{"label": "cat", "count": 1}'

    stub = StubServer(answer=answer).start()
    try:
        for variant in ("a", "b"):  # a second prompt: the same images, no new encode
            reqs = [
                ModelRequest(
                    project="tiny",
                    item_id=None,
                    purpose="benchmark",
                    system=None,
                    user=f"{variant} {i}",
                    images=[img],
                    fields=tiny.field_types,
                    settings={"temperature": 0.0, "max_tokens": 32, "image_policy": policy},
                )
                for i, img in enumerate(imgs)
            ]
            out = run_requests(store, f"openai:m@{stub.url}", reqs, progress=False)
            assert [r.status for r in out] == ["parsed"] * 3
    finally:
        stub.stop()
    assert len(sent) == 6
    assert sorted(from_url(u) for u in sent) == sorted(
        reference_encode(img, policy) for img in imgs for _ in range(2)
    )
    assert len(list((tmp_path / "image-cache").rglob("*.jpg"))) == 3
