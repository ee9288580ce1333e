"""Ratings tables from files (CSV or Parquet, wide or long), typed once, checked cell by cell.

Why a module of its own: a ratings file is user input, and every way it can be wrong
(not UTF-8, an unbalanced quote swallowing the rest of the file into one cell, a corrupt
Parquet file, no ratings, the same unit twice, a design column taken for a rater) must end
in one line naming the file, row and column, never in a traceback or a silently wrong
coefficient.

Typing: the rater cells of the WHOLE table get one type: numbers when every non-blank
cell is a number, else text (so "1" in a column that also holds "x" still equals 1 in
the next column). With ``--level masi`` a cell is a set of labels separated by ``;``
(``helmet;vest``; blank = missing; order and spaces do not matter).

Rater columns: ``--raters A,B`` names them; otherwise every column not used as the unit,
cluster or strata column. A column whose name says it is part of the design (``cluster``,
``parent``, ``site``, ...) is never taken for a rater silently: the user must either use it
(``--cluster NAME``) or list the raters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from truthline.stats._ratings import AgreementError, Ratings, as_ratings, from_long

MAX_CELL = 131_072
"""Longest cell accepted (Python's csv field limit): a longer one is an unbalanced quote."""

DESIGN_NAMES = frozenset(
    {
        "cluster",
        "clusters",
        "parent",
        "stratum",
        "strata",
        "site",
        "video",
        "clip",
        "item",
        "id",
        "unit_id",
        "group",
        "split",
        "weight",
    }
)
"""Column names that describe the design, not a rater: refused as implicit raters."""

SET_SEPARATOR = ";"


def read_table(path: Path) -> Any:
    """A CSV or Parquet file as a DataFrame of stripped strings (blank = NaN)."""

    if not path.exists():
        raise AgreementError(f"{path}: no such file")
    if path.is_dir():
        raise AgreementError(f"{path}: is a folder; give a CSV or Parquet file")
    if path.suffix.lower() in (".parquet", ".pq"):
        df = _read_parquet(path)
    else:
        df = _read_csv(path)
    df.columns = [str(c).strip() for c in df.columns]
    if df.columns.duplicated().any():
        dup = df.columns[df.columns.duplicated()][0]
        raise AgreementError(f"{path}: column {dup!r} appears twice in the header")
    if len(df) == 0:
        raise AgreementError(f"{path}: no ratings (a header and no rows)")
    return df


def _read_csv(path: Path) -> Any:
    import pandas as pd

    raw = path.read_bytes()
    if not raw.strip():
        raise AgreementError(f"{path}: empty file; expected a header row, then one row per unit")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise AgreementError(
            f"{path}: line {line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
            f"{exc.start}); save the file as UTF-8"
        ) from None
    try:
        df = pd.read_csv(
            path,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding="utf-8",
            skipinitialspace=True,
        )
    except pd.errors.EmptyDataError:
        raise AgreementError(
            f"{path}: empty file; expected a header row, then one row per unit"
        ) from None
    except pd.errors.ParserError as exc:
        raise AgreementError(f"{path}: not a readable CSV table: {exc}") from None
    _check_cells(df, path)
    return df


def _read_parquet(path: Path) -> Any:
    import pandas as pd

    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise AgreementError(f"{path}: not a readable Parquet file ({first})") from None
    out = df.astype(object).where(df.notna(), None)
    for c in out.columns:
        out[c] = [None if v is None else str(v).strip() or None for v in out[c]]
    _check_cells(out, path)
    return out


def _check_cells(df: Any, path: Path) -> None:
    """Refuse a cell longer than ``MAX_CELL``: an unbalanced quote, not a rating."""
    for col in df.columns:
        lengths = df[col].map(lambda v: len(v) if isinstance(v, str) else 0)
        if len(lengths) and int(lengths.max()) > MAX_CELL:
            row = int(lengths.to_numpy().argmax())
            raise AgreementError(
                f"{path}: row {row + 1}, column {col!r}: a cell of {int(lengths.max())} "
                f"characters (limit {MAX_CELL}); check the file's quoting (an unbalanced "
                '" swallows the rest of the file into one cell)'
            )


def need_columns(df: Any, path: Path, *cols: str | None) -> None:
    """Refuse a named column (``--cluster`` and the like) that the file does not have."""
    for col in cols:
        if col and col not in df.columns:
            raise AgreementError(f"{path}: no column {col!r} (columns: {', '.join(df.columns)})")


def rater_columns(
    df: Any, path: Path, raters: Sequence[str] | None, used: Sequence[str | None]
) -> list[str]:
    """The rater columns: ``raters`` when given, else every column not in ``used``, refusing
    a design-named column (see the module docstring)."""
    if raters:
        need_columns(df, path, *raters)
        clash = [c for c in raters if c in used]
        if clash:
            raise AgreementError(f"{path}: column {clash[0]!r} is both a rater and a design column")
        return list(raters)
    cols = [c for c in df.columns if c not in set(used)]
    design = [c for c in cols if c.strip().lower() in DESIGN_NAMES]
    if design:
        raise AgreementError(
            f"{path}: column {design[0]!r} looks like a design column, not a rater; use it "
            f"(e.g. --cluster {design[0]}) or name the rater columns with --raters"
        )
    if not cols:
        raise AgreementError(f"{path}: no rater columns")
    return cols


def unique_units(units: Sequence[Any], path: Path, column: str) -> None:
    """A wide table has one row per unit: a repeated id is an error, never last-wins."""
    first: dict[Any, int] = {}
    for i, u in enumerate(units):
        if u is None:
            raise AgreementError(f"{path}: row {i + 1}, column {column!r}: blank unit id")
        if u in first:
            raise AgreementError(
                f"{path}: rows {first[u] + 1} and {i + 1}: unit {u!r} appears twice in column "
                f"{column!r}; a wide table has one row per unit (use --format long for one "
                "row per rating)"
            )
        first[u] = i


def typed_table(df: Any, columns: Sequence[str], level: str | None) -> list[list[Any]]:
    """The cells of ``columns`` with ONE type for the whole table (see module docstring):
    one list per column; blank cells are None."""
    import pandas as pd

    if level == "masi":
        return [[None if v is None or pd.isna(v) else as_set(v) for v in df[c]] for c in columns]
    block = df[list(columns)]
    present = block.notna()
    nums = block.apply(pd.to_numeric, errors="coerce")
    if int(nums.notna().to_numpy().sum()) == int(present.to_numpy().sum()):
        return [[None if pd.isna(x) else float(x) for x in nums[c]] for c in columns]
    return [[None if pd.isna(x) else str(x).strip() for x in block[c]] for c in columns]


def as_set(cell: Any) -> frozenset[str] | None:
    """A set-valued cell: labels separated by ``;`` (blank labels dropped)."""
    parts = frozenset(p.strip() for p in str(cell).split(SET_SEPARATOR) if p.strip())
    return parts or None


def load_ratings(
    path: Path,
    fmt: str,
    *,
    unit_col: str | None = None,
    cluster: str | None = None,
    strata: str | None = None,
    level: str = "nominal",
    categories: list[str] | None = None,
    raters: Sequence[str] | None = None,
) -> Ratings:
    """A ratings file (wide: one row per unit; long: unit, rater, value) as ``Ratings`` with
    clusters/strata attached."""
    df = read_table(path)
    need_columns(df, path, cluster, strata, unit_col)
    cats: list[Any] | None = categories
    if fmt == "long":
        need = ["unit", "rater", "value"]
        missing = [c for c in need if c not in df.columns]
        if missing:
            raise AgreementError(f"{path}: long format needs columns {need}; missing {missing}")
        (values,) = typed_table(df, ["value"], level)
        if cats is not None and all(isinstance(v, float) or v is None for v in values):
            cats = [float(c) for c in cats]
        for col in ("unit", "rater"):
            blank = df[col].isna().to_numpy()
            if blank.any():
                row = int(blank.argmax()) + 1
                raise AgreementError(f"{path}: row {row}, column {col!r}: blank {col} id")
        try:
            return from_long(
                list(df["unit"]),
                list(df["rater"]),
                values,
                cluster=list(df[cluster]) if cluster else None,
                stratum=list(df[strata]) if strata else None,
                categories=cats,
                level=level,
            )
        except AgreementError as exc:
            raise AgreementError(f"{path}: {exc}") from None
    ucol = unit_col or ("unit" if "unit" in df.columns else None)
    names = rater_columns(df, path, raters, [ucol, cluster, strata])
    cols = typed_table(df, names, level)
    if cats is not None and all(isinstance(v, float) or v is None for c in cols for v in c):
        cats = [float(c) for c in cats]
    if all(v is None for c in cols for v in c):
        raise AgreementError(
            f"{path}: no ratings (every cell of the rater columns {', '.join(names)} is blank)"
        )
    rows = [list(x) for x in zip(*cols, strict=True)]
    if ucol:
        units = list(df[ucol])
        unique_units(units, path, ucol)
    else:
        units = [str(i + 1) for i in range(len(df))]
    try:
        r = as_ratings(rows, categories=cats, units=units, raters=names, level=level)
    except AgreementError as exc:
        raise AgreementError(f"{path}: {exc}") from None
    r.clusters = list(df[cluster]) if cluster else None
    r.strata = list(df[strata]) if strata else None
    return r
