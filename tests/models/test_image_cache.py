"""Encoded images kept per (source file, policy): the bytes are exactly a fresh encode's, a
changed file or policy misses, the disk copy is private, atomic, verified and bounded; a
source that already fits the policy is sent as it is, any other re-encoded."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from tests.models._requests import tiny_request
from truthline.models import ModelRequest, run_requests
from truthline.models._image_cache import (
    MEMORY,
    ImageCache,
    clear_image_cache,
    default_image_cache_dir,
)
from truthline.models._images import data_url, encode_image, load_pil, reencode
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
    blob = base64.b64decode(b64)
    png = blob[:8] == b"\x89PNG\r\n\x1a\n"
    assert head == ("data:image/png;base64" if png else "data:image/jpeg;base64")
    return blob


def image_requests(
    tiny, imgs: list[Path], policy: dict | None = None, variant: str = "q"
) -> list[ModelRequest]:
    """One benchmark request per image of the tiny project, ``variant`` in its prompt."""
    settings = {"temperature": 0.0, "max_tokens": 32, "image_policy": policy or {}}
    return [
        tiny_request(tiny, f"{variant} {i}", [img], system=None, settings=settings)
        for i, img in enumerate(imgs)
    ]


@pytest.fixture(autouse=True)
def _fresh_memory():
    from truthline.models import _image_cache

    MEMORY.clear()
    _image_cache._VERDICTS.clear()
    yield
    MEMORY.clear()
    _image_cache._VERDICTS.clear()


def _new_process() -> None:
    """What a new process starts without: encoded images, hashes, verdicts read."""
    from truthline.models import _image_cache, _images

    MEMORY.clear()
    _images._HASHES.clear()
    _image_cache._VERDICTS.clear()


@pytest.fixture
def decodes(monkeypatch) -> list[Path]:
    """The paths ``keeps`` decoded (to tell whether a source fits and decodes whole)."""
    from truthline.models import _image_cache

    real, seen = _image_cache.keeps, []
    monkeypatch.setattr(
        _image_cache, "keeps", lambda d, p, pol=None: seen.append(p) or real(d, p, pol)
    )
    return seen


POLICIES = [{"max_side": 64}, {"max_side": 64, "jpeg_quality": 40}, {"max_side": 139}]
"""Each re-encodes the 90x140 test image (its longer side is over ``max_side``)."""
ENC = {"max_side": 64}


@pytest.mark.parametrize("policy", POLICIES)
def test_cached_bytes_equal_a_fresh_encode(tmp_path, policy):
    img = write_png(tmp_path / "a.png", 1)
    ref = reference_encode(img, policy)
    cache = ImageCache(tmp_path / "cache", min_encode_s=0)
    assert encode_image(img, policy) == ref
    assert from_url(cache.data_url(img, policy)) == ref  # encoded
    assert from_url(cache.data_url(img, policy)) == ref  # memory
    MEMORY.clear()
    assert cache.image_bytes(img, policy) == ref  # disk, as a later process reads it
    assert cache.stats == {"memory": 1, "kept": 0, "disk": 1, "encoded": 1}
    assert from_url(data_url(img, policy)) == ref
    assert np.array_equal(np.asarray(load_pil(img, policy)), np.asarray(_pil(ref)))


def _save(path: Path, mode: str = "RGB", size=(40, 30), **kw) -> Path:
    from PIL import Image

    rng = np.random.default_rng(7)
    bands = len(mode) if mode in ("RGB", "RGBA") else 1
    arr = rng.integers(0, 255, (size[1], size[0], bands), np.uint8)
    Image.fromarray(arr.squeeze(), mode).save(path, **kw)
    return path


def test_a_source_that_fits_the_policy_is_sent_as_it_is(tmp_path):
    """A minimal client's bytes: no second JPEG generation, no CPU; never copied to disk."""
    folder = tmp_path / "cache"
    cache = ImageCache(folder, min_encode_s=0)
    for img in (
        _save(tmp_path / "a.png"),
        _save(tmp_path / "b.jpg", quality=95),
        _save(tmp_path / "g.png", "L"),
        write_png(tmp_path / "c.png", 1),  # 90x140, at the policy's max side exactly
    ):
        policy = {"max_side": 140, "jpeg_quality": 40}
        assert encode_image(img, policy) == img.read_bytes()
        assert reencode(img.read_bytes(), img, policy) == reference_encode(img, policy)
        url = cache.data_url(img, policy)
        assert from_url(url) == img.read_bytes()
        assert url.startswith("data:image/png" if img.suffix == ".png" else "data:image/jpeg")
        assert np.array_equal(np.asarray(load_pil(img, policy)), np.asarray(_pil(img.read_bytes())))
    assert not list(folder.rglob("*.img"))
    assert cache.stats == {"memory": 0, "kept": 4, "disk": 0, "encoded": 0}


@pytest.mark.parametrize(
    "case",
    [
        "too big a side",
        "too many bytes",
        "alpha",
        "palette",
        "transparency",
        "16-bit",
        "rotated",
        "frames",
    ],
)
def test_any_other_source_is_re_encoded(tmp_path, case, monkeypatch):
    from PIL import Image

    from truthline.models import _images

    path = tmp_path / ("x.jpg" if case == "rotated" else "x.png")
    policy: dict = {"max_side": 64}
    if case == "too big a side":
        _save(path, size=(65, 10))
    elif case == "too many bytes":
        _save(path)
        monkeypatch.setattr(_images, "KEEP_MAX_BYTES", path.stat().st_size - 1)
    elif case == "alpha":
        _save(path, "RGBA")
    elif case == "palette":
        _save(path, "RGB").replace(path)
        Image.open(path).convert("P").save(path)
    elif case == "transparency":
        _save(path, "RGB", transparency=(0, 0, 0))
    elif case == "16-bit":
        import cv2

        cv2.imwrite(str(path), np.random.default_rng(3).integers(0, 65535, (20, 30, 3), np.uint16))
    elif case == "rotated":
        exif = Image.Exif()
        exif[0x0112] = 6
        _save(path, exif=exif)
    else:
        frames = [Image.new("RGB", (20, 20), c) for c in ("red", "blue")]
        frames[0].save(path, save_all=True, append_images=frames[1:])
    out = encode_image(path, policy)
    assert out != path.read_bytes() and out[:2] == b"\xff\xd8"  # a JPEG made here
    assert out == reference_encode(path, policy)


def test_a_corrupt_source_that_would_be_kept_is_refused(tmp_path):
    from truthline.errors import TruthlineError

    img = _save(tmp_path / "a.jpg")
    img.write_bytes(img.read_bytes()[: img.stat().st_size // 2])  # truncated
    with pytest.raises(TruthlineError, match=r"a\.jpg: cannot encode image"):
        encode_image(img, {})


def _pil(jpeg: bytes):
    from PIL import Image

    return Image.open(io.BytesIO(jpeg)).convert("RGB")


def test_a_changed_file_or_policy_misses(tmp_path):
    img = write_png(tmp_path / "a.png", 1)
    cache = ImageCache(tmp_path / "cache", min_encode_s=0)
    first = cache.image_bytes(img, {"max_side": 64})
    write_png(img, 2)  # same path and size, other pixels
    os.utime(img, ns=(1, 1))
    second = cache.image_bytes(img, {"max_side": 64})
    assert second == reference_encode(img, {"max_side": 64}) != first
    assert cache.image_bytes(img, {"max_side": 48}) == reference_encode(img, {"max_side": 48})
    assert cache.image_bytes(img, {"max_side": 64, "jpeg_quality": 30}) == reference_encode(
        img, {"max_side": 64, "jpeg_quality": 30}
    )
    assert cache.stats["encoded"] == 4
    # detail is sent beside the image, not in it: no new encode
    assert cache.image_bytes(img, {"max_side": 64, "detail": "low"}) == second
    assert cache.stats["encoded"] == 4
    files = sorted(p.name for p in (tmp_path / "cache").rglob("*.img"))
    assert len(files) == 4 and len({f.split(".")[1] for f in files}) == 3


def test_disk_entries_are_private_verified_and_rewritten_when_torn(tmp_path):
    img = write_png(tmp_path / "a.png", 3)
    folder = tmp_path / "cache"
    cache = ImageCache(folder, min_encode_s=0)
    ref = cache.image_bytes(img, ENC)
    (entry,) = folder.rglob("*.img")
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not [p for p in folder.rglob(".tmp-*")]
    entry.write_bytes(entry.read_bytes()[:-10])  # torn
    MEMORY.clear()
    assert cache.image_bytes(img, ENC) == ref
    assert cache.stats["disk"] == 0 and cache.stats["encoded"] == 2
    MEMORY.clear()
    assert cache.image_bytes(img, ENC) == ref
    assert cache.stats["disk"] == 1


def test_the_disk_cache_is_bounded_and_clearable(tmp_path):
    folder = tmp_path / "cache"
    imgs = [write_png(tmp_path / f"{i}.png", i) for i in range(8)]
    one = len(encode_image(imgs[0], ENC)) + 32
    cache = ImageCache(folder, max_disk_bytes=3 * one, min_encode_s=0)
    for i, img in enumerate(imgs):
        cache.image_bytes(img, ENC)
        os.utime(next(folder.rglob(f"*{_sha(img)}*")), (i, i))  # a clear order of use
    held = sorted(folder.rglob("*.img"), key=lambda p: p.stat().st_mtime)
    assert sum(p.stat().st_size for p in held) <= 3 * one
    assert 1 <= len(held) <= 3
    assert _sha(imgs[-1]) in held[-1].name  # the newest stays
    assert not any(_sha(imgs[0]) in p.name for p in held)
    before = cache.stats["encoded"]
    MEMORY.clear()
    assert cache.image_bytes(imgs[-1], ENC) == encode_image(imgs[-1], ENC)
    assert cache.image_bytes(imgs[0], ENC) == encode_image(imgs[0], ENC)  # pruned: encoded again
    assert cache.stats["encoded"] == before + 1
    held = list(folder.rglob("*.img"))
    held_bytes = sum(p.stat().st_size for p in held)
    files, size = clear_image_cache(folder)
    assert (files, size) == (len(held), held_bytes)
    assert not list(folder.rglob("*.img"))
    assert MEMORY.size == 0


def test_a_cache_folder_deleted_during_a_run_is_made_again(tmp_path):
    import shutil

    folder = tmp_path / "cache"
    cache = ImageCache(folder, min_encode_s=0)
    img = write_png(tmp_path / "a.png", 1)
    ref = cache.image_bytes(img, ENC)
    shutil.rmtree(folder)  # by hand, while the process runs
    for _ in range(2):  # the first write after it fails (skipped), the next makes the folder
        MEMORY.clear()
        assert cache.image_bytes(img, ENC) == ref  # sent all the same
    MEMORY.clear()
    assert cache.image_bytes(img, ENC) == ref
    assert len(list(folder.rglob("*.img"))) == 1 and cache.stats["disk"] == 1
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
    ref = cache.image_bytes(img, ENC)
    assert ref == reference_encode(img, ENC) and not list(folder.rglob("*.img"))
    assert cache.image_bytes(img, ENC) == ref
    assert cache.stats == {"memory": 1, "kept": 0, "disk": 0, "encoded": 1}


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
            reqs = image_requests(tiny, imgs, policy, variant)
            out = run_requests(store, f"openai:m@{stub.url}", reqs, progress=False)
            assert [r.status for r in out] == ["parsed"] * 3
    finally:
        stub.stop()
    assert len(sent) == 6
    assert sorted(from_url(u) for u in sent) == sorted(
        reference_encode(img, policy) for img in imgs for _ in range(2)
    )
    assert len(list((tmp_path / "image-cache").rglob("*.img"))) == 3


def test_a_source_too_big_to_keep_is_read_from_disk_after_its_first_encode(tmp_path, monkeypatch):
    from truthline.models import _images

    monkeypatch.setattr(_images, "KEEP_MAX_BYTES", 1000)  # the 38 KB test image is "big"
    img = write_png(tmp_path / "a.png", 5)
    cache = ImageCache(tmp_path / "cache", min_encode_s=0)
    first = cache.image_bytes(img, {"max_side": 500})  # fits the side, not the byte bound
    assert first == reference_encode(img, {"max_side": 500}) != img.read_bytes()
    MEMORY.clear()
    assert cache.image_bytes(img, {"max_side": 500}) == first
    assert cache.stats == {"memory": 0, "kept": 0, "disk": 1, "encoded": 1}


@pytest.fixture
def reads(monkeypatch):
    """Every read of a source file (the hash for the key, the bytes to send), by name."""
    from truthline.models import _images

    _images._HASHES.clear()
    seen: list[str] = []
    real = _images.read_source

    def counted(path):
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(_images, "read_source", counted)
    yield seen
    _images._HASHES.clear()


def test_a_run_reads_each_small_source_once(tmp_path, tiny, store, reads):
    from truthline.models._images import HELD

    imgs = [write_png(tmp_path / f"{i}.png", 30 + i, (32, 48, 3)) for i in range(3)]
    sent: list[bytes] = []

    def answer(body: dict) -> str:
        for part in body["messages"][-1]["content"]:
            if part["type"] == "image_url":
                sent.append(from_url(part["image_url"]["url"]))
        return '{"label": "cat", "count": 1}'

    stub = StubServer(answer=answer).start()
    try:
        out = run_requests(
            store, f"openai:m@{stub.url}", image_requests(tiny, imgs), progress=False
        )
        assert [r.status for r in out] == ["parsed"] * 3
        # hashed for the key, then sent from the bytes that hashing read: one read each
        assert sorted(reads) == ["0.png", "1.png", "2.png"]
        assert sorted(sent) == sorted(img.read_bytes() for img in imgs)
        assert (HELD.size, HELD.scope.depth) == (0, 0)

        from truthline.models import _images

        _images._HASHES.clear()  # hashed again, and every answer is stored: nothing sent
        out = run_requests(
            store, f"openai:m@{stub.url}", image_requests(tiny, imgs), progress=False
        )
        assert all(r.cached for r in out) and len(sent) == 3
        assert (HELD.size, HELD.scope.depth) == (0, 0)  # what the run held is released at its end
    finally:
        stub.stop()


def test_held_sources_are_bounded_and_kept_only_while_a_run_lives(tmp_path, reads, monkeypatch):
    from truthline.models._images import HELD, image_hash, source

    a, b = (write_png(tmp_path / f"{n}.png", i, (32, 32, 3)) for i, n in enumerate("ab"))
    image_hash(a)  # no run: nothing held
    assert HELD.size == 0
    monkeypatch.setattr(HELD, "max_bytes", a.stat().st_size)  # room for one
    MEMORY.clear()
    reads.clear()
    from truthline.models import _images

    _images._HASHES.clear()
    HELD.scope.enter()
    try:
        ha, hb = image_hash(a), image_hash(b)
        assert reads == ["a.png", "b.png"] and HELD.size == a.stat().st_size
        assert source(a) == (ha, a.read_bytes()) and reads == ["a.png", "b.png"]  # held
        assert source(b) == (hb, b.read_bytes()) and reads[-1] == "b.png"  # read again
        image_hash(a)  # memoized: not read, not held again
        assert HELD.size == 0
        write_png(a, 99, (40, 32, 3))  # rewritten after hashing: the bytes read now count
        sha, data = source(a)
        assert data == a.read_bytes() and sha == hashlib.sha256(data).hexdigest() != ha
    finally:
        HELD.scope.leave()
    assert (HELD.size, HELD.scope.depth) == (0, 0)


FITS = {"max_side": 64}
"""The 20x30 sources below fit it: sent as they are."""


def test_a_later_process_sends_a_kept_source_without_decoding_it_again(tmp_path, decodes):
    """The verdict that a source is sent as it is stays in the cache folder (0600, one line
    per source and encoder): a later process decodes none of those sources again and sends
    the same bytes; a new or changed source is decoded (and a broken one refused)."""
    from truthline.errors import TruthlineError

    folder = tmp_path / "cache"
    imgs = [write_png(tmp_path / f"{i}.png", 40 + i, (20, 30, 3)) for i in range(3)]
    cache = ImageCache(folder)
    urls = [cache.data_url(p, FITS) for p in imgs]
    assert [from_url(u) for u in urls] == [p.read_bytes() for p in imgs]
    assert decodes == imgs and cache.stats["kept"] == 3
    cache.flush()
    verdicts = folder / "kept-sources.txt"
    assert stat.S_IMODE(verdicts.stat().st_mode) == 0o600
    assert len(verdicts.read_text().split()) == 3

    _new_process()
    decodes.clear()
    again = ImageCache(folder)
    assert [again.data_url(p, FITS) for p in imgs] == urls
    assert decodes == [] and again.stats == {"memory": 0, "kept": 3, "disk": 0, "encoded": 0}
    # another policy's encoder is another verdict; a new source is decoded
    other = write_png(tmp_path / "new.png", 50, (20, 30, 3))
    again.data_url(imgs[0], {"max_side": 48})
    again.data_url(other, FITS)
    assert decodes == [imgs[0], other]
    # a source changed since (here: cut short) has other bytes: decoded, and refused
    imgs[1].write_bytes(imgs[1].read_bytes()[:-40])
    _new_process()
    with pytest.raises(TruthlineError, match=r"1\.png: cannot encode image"):
        ImageCache(folder).data_url(imgs[1], FITS)


def test_verdicts_are_written_in_batches_bounded_and_cleared(tmp_path, decodes, monkeypatch):
    from truthline.models import _image_cache

    folder = tmp_path / "cache"
    verdicts = folder / "kept-sources.txt"
    imgs = [write_png(tmp_path / f"{i}.png", 60 + i, (20, 30, 3)) for i in range(5)]
    monkeypatch.setattr(_image_cache, "VERDICTS_PER_WRITE", 2)
    cache = ImageCache(folder)
    cache.data_url(imgs[0], FITS)
    assert not verdicts.exists()  # held until a batch is full (or flush)
    cache.data_url(imgs[1], FITS)
    assert len(verdicts.read_text().split()) == 2
    for p in imgs[2:]:
        cache.data_url(p, FITS)
    cache.flush()
    assert len(verdicts.read_text().split()) == 5
    # a memory-only cache keeps no verdicts (and decodes each source it sees)
    _new_process()
    decodes.clear()
    ImageCache(None).data_url(imgs[0], FITS)
    assert decodes == [imgs[0]]
    # past its bound the file starts over: every source is decoded once more
    _new_process()
    decodes.clear()
    monkeypatch.setattr(_image_cache, "MAX_VERDICT_BYTES", 10)
    cache = ImageCache(folder)
    cache.data_url(imgs[0], FITS)
    assert decodes == [imgs[0]] and not verdicts.exists()
    cache.flush()
    assert len(verdicts.read_text().split()) == 1
    # clearing the cache clears the verdicts too (they are counted as what was removed)
    size = verdicts.stat().st_size
    assert clear_image_cache(folder) == (1, size) and not verdicts.exists()
    decodes.clear()
    ImageCache(folder).data_url(imgs[0], FITS)
    assert decodes == [imgs[0]]


def test_a_run_leaves_its_verdicts_in_the_workspace(tmp_path, tiny, store, decodes):
    """The backend writes what it found on closing: the next run (a new process) sends the
    same sources without decoding one."""
    imgs = [write_png(tmp_path / f"{i}.png", 70 + i, (20, 30, 3)) for i in range(3)]
    stub = StubServer(answer=lambda body: '{"label": "cat", "count": 1}').start()
    try:
        for variant in ("a", "b"):
            out = run_requests(
                store,
                f"openai:m@{stub.url}",
                image_requests(tiny, imgs, FITS, variant),
                progress=False,
            )
            assert [r.status for r in out] == ["parsed"] * 3
            assert len(decodes) == 3, "decoded in the first run only"
            _new_process()
    finally:
        stub.stop()
    assert len((tmp_path / "image-cache" / "kept-sources.txt").read_text().split()) == 3
