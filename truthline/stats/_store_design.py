"""The resampling design of a store-mode agreement: the project's declared cluster and
strata by default (METRICS.md §2), an explicit option overriding either. One definition
for ``truthline stats agreement --project`` and the dashboard's agreement page, so both
show the same interval on the same ratings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from truthline.project import Project
from truthline.stats._ratings import AgreementError, Ratings
from truthline.store import Store

NONE_WORDS = ("none", "item", "items")
"""``--cluster none`` / ``--strata none``: override the project's declared design."""


@dataclass(frozen=True)
class StoreDesign:
    """The resampling design a store-mode agreement used, and where each part came from:
    the project's declaration is the default (METRICS §2), an option overrides it."""

    cluster: str | None
    """Item column the units are clustered by ("parent"), or None for the item bootstrap."""
    cluster_from: str
    strata: tuple[str, ...]
    strata_from: str
    notes: tuple[str, ...] = ()

    def words(self) -> str:
        """One line for the table: which design, and why."""
        cl = (
            f"clusters = items' {self.cluster} ({self.cluster_from})"
            if self.cluster
            else f"items ({self.cluster_from})"
        )
        st = f"; strata = {' x '.join(self.strata)} ({self.strata_from})" if self.strata else ""
        notes = "".join(f"; {n}" for n in self.notes)
        return f"design: {cl}{st}{notes}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"strata": list(self.strata), "notes": list(self.notes)}


def _item_of(unit: Any, keys: set[str]) -> str | None:
    """The item key of a store unit: the key itself, or ``key[entity]`` for an entity
    subfield (the longest key before a ``[``, since keys may contain brackets)."""
    s = str(unit)
    if s in keys:
        return s
    cut = s.rfind("[")
    while cut > 0:
        if s[:cut] in keys:
            return s[:cut]
        cut = s.rfind("[", 0, cut)
    return None


def _item_meta(store: Any, project: str) -> dict[str, dict[str, Any]]:
    from sqlalchemy import select

    from truthline.store import tables

    it = tables.items
    with store.begin() as conn:
        rows = conn.execute(select(it.c.key, it.c.meta).where(it.c.project == project))
        return {str(k): dict(m or {}) for k, m in rows}


def _cluster_labels(
    r: Ratings, items: list[str | None], declared: str | None, option: str | None
) -> tuple[list[Any] | None, str, str]:
    """(cluster label per unit or None, column, where it came from). Under the declared
    cluster an item without a parent is a cluster of its own, as in the audit."""
    parents = r.meta["parents"]
    if option is not None and option.lower() in NONE_WORDS:
        return None, "", "--cluster none"
    if option is not None:
        if option != "parent":
            raise AgreementError("store mode clusters by item parent: use --cluster parent or none")
        if any(p is None for p in parents):
            raise AgreementError("some items have no parent; cannot cluster by parent")
        return list(parents), "parent", "--cluster parent"
    if not declared:
        return None, "", "the project declares no cluster"
    if all(p is None for p in parents):
        return None, "", f"the project declares cluster {declared!r} but no item has a parent"
    labels = [p if p is not None else f"item:{k}" for p, k in zip(parents, items, strict=True)]
    return labels, "parent", f"the project's declared cluster {declared!r}"


def _strata_labels(
    rows: list[dict[str, Any]],
    clusters: list[Any] | None,
    columns: list[str],
    explicit: bool,
) -> tuple[list[Any] | None, tuple[str, ...], list[str]]:
    """(stratum label per unit or None, columns used, notes). A declared column missing on
    some items, or varying within a cluster, is left out with a note; an explicit one is an
    error."""
    used: list[str] = []
    notes: list[str] = []
    for col in columns:
        why = _stratum_problem([m.get(col) for m in rows], clusters)
        if why and explicit:
            raise AgreementError(f"--strata {col}: {why}")
        if why:
            notes.append(f"declared stratum {col!r} not used ({why})")
        else:
            used.append(col)
    if not used:
        return None, (), notes
    return ["|".join(str(m.get(c)) for c in used) for m in rows], tuple(used), notes


def _stratum_problem(values: list[Any], clusters: list[Any] | None) -> str:
    """Why a metadata column cannot stratify these units ("" when it can): a stratum must
    be known for every unit and constant within a cluster (``stats.design``)."""
    missing = sum(1 for v in values if v in (None, ""))
    if missing:
        return f"missing on {missing} of {len(values)} units"
    seen: dict[Any, str] = {}
    for c, v in zip(clusters or [], values, strict=False):
        if seen.setdefault(c, str(v)) != str(v):
            return "varies within a cluster"
    return ""


def declared_design(
    store: Store,
    proj: Project,
    r: Ratings,
    cluster: str | None = None,
    strata: str | None = None,
    *,
    krippendorff: bool = False,
) -> StoreDesign:
    """Set ``r``'s clusters and strata to the project's declared design unless an option
    overrides it (``cluster``/``strata``: ``parent``, item metadata columns, or ``none``);
    ``krippendorff``: alpha's pair bootstrap, which has no design (issue 24: the store's
    agreement bootstrapped items of clustered videos, alpha [0.514, 0.795] where the
    clusters give [0.449, 0.877])."""
    if krippendorff and cluster is None and strata is None:
        note = "Krippendorff's pair bootstrap has no cluster or strata scheme"
        return StoreDesign(None, "--ci krippendorff", (), "", (note,) if proj.cluster else ())
    meta = _item_meta(store, proj.name)
    keys = set(meta)
    items = [_item_of(u, keys) for u in r.units]
    labels, col, cl_from = _cluster_labels(r, items, proj.cluster, cluster)
    r.clusters = labels
    if strata is not None and strata.lower() in NONE_WORDS:
        return StoreDesign(col or None, cl_from, (), "--strata none")
    explicit = strata is not None
    columns = [c.strip() for c in strata.split(",") if c.strip()] if strata else list(proj.strata)
    if not columns:
        return StoreDesign(col or None, cl_from, (), "")
    rows = [meta.get(k, {}) if k is not None else {} for k in items]
    st, used, notes = _strata_labels(rows, labels, columns, explicit)
    r.strata = st
    where = "--strata" if explicit else "the project's declared strata"
    return StoreDesign(col or None, cl_from, used, where if used else "", tuple(notes))
