"""JSON text exactly as ``json.dumps`` writes it, from one C encoder built once.

Why: ``json.dumps`` builds a new C encoder on every call (``JSONEncoder.iterencode``), and
with any option (``sort_keys``, ``default``) a new ``JSONEncoder`` too. On the runner's hot
path (two cache keys, a journal line and six JSON cells per answer, most of them small)
that setup cost as much as the encoding. ``make_dumps`` builds the encoder once for a set
of options and reuses it; the text is ``json.dumps``'s byte for byte (cache keys hash it,
so it must never change; ``NaN`` stays ``NaN``), which ``make_dumps`` checks on a probe and,
failing that (a Python without the C encoder or with another signature), uses
``json.dumps`` itself. What differs: a structure that contains itself is not detected
(``RecursionError``, not ``ValueError``: these are plain data); the encoder is reentrant,
so the event loop and the writer thread share one.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any

Dumps = Callable[[Any], str]

_PROBE: Any = {
    "b": [1, 2.5, float("nan"), None, True, 'é\n"', {"z": 1, "a": [()]}],
    "a": {3: "x"},
    "c": {"k": -0.0, "j": 1e300, "i": 2**70},
}


def _unencodable(obj: Any) -> Any:
    """``JSONEncoder.default``: what ``json.dumps`` raises without a ``default``."""
    raise TypeError(f"Object of type {obj.__class__.__name__} is not JSON serializable")


def _c_dumps(
    sort_keys: bool, default: Callable[[Any], Any] | None, separators: tuple[str, str]
) -> Dumps | None:
    make = getattr(_encoder, "c_make_encoder", None)
    string = getattr(_encoder, "c_encode_basestring_ascii", None)
    if make is None or string is None:
        return None
    item_sep, key_sep = separators
    try:
        # (markers, default, encoder, indent, key_separator, item_separator, sort_keys,
        #  skipkeys, allow_nan): what JSONEncoder.iterencode passes for a one-shot encode
        encode = make(
            None, default or _unencodable, string, None, key_sep, item_sep, sort_keys, False, True
        )
    except TypeError:
        return None

    def dumps(obj: Any) -> str:
        if isinstance(obj, str):
            return string(obj)
        return "".join(encode(obj, 0))

    return dumps


def make_dumps(
    *,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
    separators: tuple[str, str] = (", ", ": "),
) -> Dumps:
    """``json.dumps(obj, sort_keys=..., default=..., separators=...)`` (ASCII, NaN
    allowed), built once."""
    plain = functools.partial(
        json.dumps, sort_keys=sort_keys, default=default, separators=separators
    )
    fast = _c_dumps(sort_keys, default, separators)
    if fast is not None:
        with contextlib.suppress(TypeError, ValueError):
            if fast(_PROBE) == plain(_PROBE):
                return fast
    return plain


dumps = make_dumps()
"""``json.dumps(obj)``: the store's JSON columns (the engine's ``json_serializer``)."""

__all__ = ["Dumps", "dumps", "make_dumps"]
