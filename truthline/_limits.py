"""Bounds on input sizes and on work, each raisable by an environment variable.

Why: a YAML alias bomb in a project file, a ratings "file" that never ends (``/dev/zero``)
or ``--resamples 1000000000`` would otherwise run until the machine gives out. Each limit
is checked where the input enters, and a refusal is one line naming the limit and the
variable that raises it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from truthline.errors import TruthlineError


@dataclass(frozen=True)
class Limit:
    """One bound: its environment variable, default and what it counts."""

    env: str
    default: int
    unit: str
    """What is counted, in the plural ("bootstrap resamples", "bytes")."""

    def value(self) -> int:
        """The limit in force (the environment variable, else the default)."""
        raw = os.environ.get(self.env, "").strip()
        if not raw:
            return self.default
        try:
            n = int(raw.replace("_", ""))
        except ValueError:
            n = 0
        if n < 1:
            raise TruthlineError(f"{self.env}={raw!r}: give a whole number of {self.unit} >= 1")
        return n

    def over(self, got: int | str) -> str:
        """Why ``got`` (of this limit's unit) is refused, and how to raise the limit."""
        return f"{got} {self.unit} is over the limit of {self.value()}; set {self.env} to raise it"

    def refusal(self, what: str, got: int | str) -> str:
        """The one line refusing ``what`` (which has ``got`` of this limit's unit)."""
        return f"{what}: {self.over(got)}"


MAX_RESAMPLES = Limit("TRUTHLINE_MAX_RESAMPLES", 100_000, "bootstrap resamples")
MAX_INPUT_BYTES = Limit("TRUTHLINE_MAX_INPUT_BYTES", 2 << 30, "bytes")
"""Tables read whole into memory (ratings, label tables, metadata CSVs): 2 GiB."""
MAX_DEFINITION_BYTES = Limit("TRUTHLINE_MAX_DEFINITION_BYTES", 8 << 20, "bytes")
"""A project definition (TOML/YAML) is settings, not data: 8 MiB."""
MAX_YAML_NODES = Limit("TRUTHLINE_MAX_YAML_NODES", 200_000, "YAML nodes")
"""Nodes of a YAML definition with every alias expanded (an alias bomb has billions)."""


def check_resamples(n: int, what: str = "--resamples") -> int:
    """``n`` when it is within MAX_RESAMPLES, else a TruthlineError naming ``what``."""
    if n > MAX_RESAMPLES.value():
        raise TruthlineError(MAX_RESAMPLES.refusal(what, n))
    return n


def input_file(path: Path, what: str = "input", limit: Limit = MAX_INPUT_BYTES) -> Path:
    """``path`` when it is a regular file within ``limit`` bytes. A device or a pipe
    (``/dev/zero``) has no size to check and may never end, so it is refused."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TruthlineError(f"{path}: no such file") from None
    except OSError as exc:
        raise TruthlineError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise TruthlineError(f"{path}: is a folder; give the {what} file")
    if not stat.S_ISREG(st.st_mode):
        raise TruthlineError(
            f"{path}: not a regular file (a device or a pipe may never end); "
            f"save the {what} to a file first"
        )
    if st.st_size > limit.value():
        raise TruthlineError(limit.refusal(f"{path}", st.st_size))
    return path


def read_capped(path: Path, limit: Limit, what: str = "input") -> bytes:
    """The bytes of ``path``, checked by :func:`input_file` and read no further than the
    limit (a file growing while it is read cannot run past it)."""
    input_file(path, what, limit)
    cap = limit.value()
    with path.open("rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise TruthlineError(limit.refusal(f"{path}", f"more than {cap}"))
    return data
