"""`truthline stats`: rater-agreement statistics with confidence intervals.

Input is a CSV or Parquet file (wide: one row per unit, one column per rater, blanks =
missing; long: unit, rater, value; see ``_table`` for typing, set cells and rater
columns) or the store (``--project P --field PATH``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from truthline._cli_common import (
    JsonOpt,
    ProjectOpt,
    bounded_resamples,
    console,
    emit,
    workspace,
    ws_project,
)
from truthline._limits import input_file

if TYPE_CHECKING:
    from truthline.stats._bootstrap import CI
    from truthline.stats._ratings import Ratings
    from truthline.stats._store_design import StoreDesign

app = typer.Typer(
    help="Rater-agreement statistics (kappa, alpha, AC1 and more) with bootstrap confidence intervals.",
    no_args_is_help=True,
)


class Fmt(StrEnum):
    wide = "wide"
    long = "long"


class Coef(StrEnum):
    alpha = "alpha"
    cohen = "cohen"
    fleiss = "fleiss"
    ac1 = "ac1"
    scott = "scott"
    bp = "bp"
    pairwise = "pairwise"
    pairwise_pooled = "pairwise_pooled"
    all = "all"


class Level(StrEnum):
    nominal = "nominal"
    ordinal = "ordinal"
    interval = "interval"
    ratio = "ratio"
    masi = "masi"


class Weights(StrEnum):
    none = "none"
    linear = "linear"
    quadratic = "quadratic"


class CIMethod(StrEnum):
    bootstrap = "bootstrap"
    none = "none"
    krippendorff = "krippendorff"


FileArg = Annotated[
    Path | None,
    typer.Argument(help="CSV of ratings (omit with --project/--field to read the store)."),
]
FormatOpt = Annotated[
    Fmt, typer.Option("--format", help="wide: units x raters; long: unit, rater, value.")
]
UnitOpt = Annotated[
    str | None,
    typer.Option("--unit-col", help="Wide CSV: column holding unit ids (default: 'unit' if any)."),
]
ClusterOpt = Annotated[
    str | None,
    typer.Option("--cluster", help="Column of parent ids: resample clusters (store: 'parent')."),
]
StrataOpt = Annotated[str | None, typer.Option("--strata", help="Column of strata labels.")]
CatOpt = Annotated[
    str | None,
    typer.Option("--categories", help="Comma-separated category order (ordinal / weights)."),
]
FieldOpt = Annotated[
    str | None, typer.Option("--field", help="Store mode: field path, e.g. workers.action.")
]
ArmOpt = Annotated[
    str | None, typer.Option("--arm", help="Store mode: blind | anchored | review | import.")
]
TierOpt = Annotated[int | None, typer.Option("--tier", help="Store mode: 1 annotators, 2 experts.")]
ResamplesOpt = Annotated[
    int,
    typer.Option(
        "--resamples",
        min=0,
        callback=bounded_resamples,
        help="Bootstrap resamples (at most 100000, raised by TRUTHLINE_MAX_RESAMPLES).",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Bootstrap seed (recorded with the CI).")]
RatersOpt = Annotated[
    str | None,
    typer.Option(
        "--raters",
        help="Wide file: comma-separated rater columns (default: every column not used by "
        "--unit-col/--cluster/--strata; a column named like cluster/parent/site is refused).",
    ),
]


def _source(
    ctx: typer.Context,
    file: Path | None,
    fmt: Fmt,
    *,
    unit_col: str | None,
    project: str | None,
    field: str | None,
    arm: str | None,
    tier: int | None,
    cluster: str | None = None,
    strata: str | None = None,
    level: str | None = None,
    categories: str | None = None,
    raters: str | None = None,
) -> tuple[Ratings, str, str]:
    """Ratings from a CSV ``file``, else from the store (``--field``); with their level and a
    label of where they came from."""
    from truthline.stats._ratings import AgreementError
    from truthline.stats._table import load_ratings

    cats = [c.strip() for c in categories.split(",")] if categories else None
    if file is not None:
        lvl = level or "nominal"
        input_file(file, "ratings")  # /dev/zero or a pipe would be read forever
        r = load_ratings(
            file,
            fmt.value,
            unit_col=unit_col,
            cluster=cluster,
            strata=strata,
            level=lvl,
            categories=cats,
            raters=[c.strip() for c in raters.split(",") if c.strip()] if raters else None,
        )
        return r, lvl, str(file)
    if not field:
        raise typer.BadParameter("give a CSV FILE, or --field (with --project) to read the store")
    from truthline.stats._store import ratings_from_store

    ws, proj = ws_project(ctx, project)
    r, ft = ratings_from_store(ws.store, proj, field, arm=arm, tier=tier)
    if cluster:
        if cluster != "parent":
            raise AgreementError("store mode clusters by item parent: use --cluster parent")
        parents = r.meta["parents"]
        if any(p is None for p in parents):
            raise AgreementError("some items have no parent; cannot cluster by parent")
        r.clusters = parents
    lvl = level or str(ft.level)
    what = (
        f"{proj.name}:{field}"
        + (f" arm={arm}" if arm else "")
        + (f" tier={tier}" if tier is not None else "")
    )
    return r, lvl, what


def _warn(cis: Iterable[CI]) -> None:
    """Print each distinct thin-design warning of these intervals once (issue 13)."""
    for ci in dict.fromkeys((c.design(), c.warning) for c in cis if c.warning):
        where, text = ci
        console.print(
            f"[bold yellow]warning:[/] {where + ': ' if where else ''}{text}",
            highlight=False,
            soft_wrap=True,
        )


def _fmt(x: float | None) -> str:
    """A plain number (a NaN bound of a ``CI`` object prints as ``nan``, as it always has)."""
    return "—" if x is None else f"{x:.3f}"


# -- the declared resampling design (store mode): one definition in ``_store_design`` ------
def _declared_design(
    ctx: typer.Context,
    project: str | None,
    r: Ratings,
    cluster: str | None,
    strata: str | None,
    ci: CIMethod,
) -> StoreDesign:
    """``declared_design`` on the command's workspace project (the dashboard's agreement
    page calls the same function)."""
    from truthline.stats._store_design import declared_design

    ws, proj = ws_project(ctx, project)
    return declared_design(
        ws.store, proj, r, cluster, strata, krippendorff=ci == CIMethod.krippendorff
    )


@app.command("agreement")
def agreement_cmd(
    ctx: typer.Context,
    file: FileArg = None,
    fmt: FormatOpt = Fmt.wide,
    coef: Annotated[
        list[Coef] | None, typer.Option("--coef", help="Coefficient(s); repeatable; 'all'.")
    ] = None,
    level: Annotated[
        Level | None,
        typer.Option("--level", help="Alpha's level (store mode: the field type's level)."),
    ] = None,
    weights: Annotated[
        Weights, typer.Option("--weights", help="Kappa-family agreement weights.")
    ] = Weights.none,
    ci: Annotated[
        CIMethod,
        typer.Option(
            "--ci",
            help="bootstrap: units (clusters/strata); krippendorff: alpha's pair bootstrap "
            "(compatibility with KALPHA, narrower).",
        ),
    ] = (CIMethod.bootstrap),
    resamples: ResamplesOpt = 2000,
    seed: SeedOpt = 0,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            help="Column of parent ids: resample clusters. Store mode: the project's declared "
            "cluster by default; 'parent' requires one on every item, 'none' bootstraps items.",
        ),
    ] = None,
    strata: Annotated[
        str | None,
        typer.Option(
            "--strata",
            help="Column of strata labels. Store mode: the project's declared strata by "
            "default; item metadata columns (comma-separated), or 'none'.",
        ),
    ] = None,
    unit_col: UnitOpt = None,
    raters: RatersOpt = None,
    categories: CatOpt = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            "--tolerance",
            min=0,
            help="Numbers agree when |x - y| <= this, for observed and chance agreement alike "
            "(kappa family; store mode: the field's declared tolerance).",
        ),
    ] = None,
    project: ProjectOpt = None,
    field: FieldOpt = None,
    arm: ArmOpt = None,
    tier: TierOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Agreement coefficients with bootstrap CIs (units, clusters, strata)."""
    from truthline.stats._ci import agreement
    from truthline.stats._format import fmt_ci
    from truthline.stats._ratings import AgreementError

    store_mode = file is None
    r, lvl, what = _source(
        ctx,
        file,
        fmt,
        unit_col=unit_col,
        cluster=None if store_mode else cluster,
        strata=None if store_mode else strata,
        level=level.value if level else None,
        categories=categories,
        raters=raters,
        project=project,
        field=field,
        arm=arm,
        tier=tier,
    )
    if tolerance is not None:
        r.meta["tolerance"] = tolerance
    used = _declared_design(ctx, project, r, cluster, strata, ci) if store_mode else None
    names = [c.value for c in (coef or [Coef.alpha])]
    try:
        results = agreement(
            r, names, level=lvl, weights=weights.value, ci=ci.value, resamples=resamples, seed=seed
        )
    except AgreementError as exc:
        raise AgreementError(f"{what}: {exc}") from None
    data = {
        "source": what,
        "units": r.n_units,
        "raters": len(r.raters),
        "results": [x.as_dict() for x in results],
    }
    if used is not None:
        data["design"] = used.as_dict()

    def render() -> None:
        t = Table(
            "coefficient",
            "point",
            "95% CI",
            "units",
            "pairable",
            "raters",
            "note",
            title=f"agreement: {what} ({r.n_units} units, {len(r.raters)} raters)",
        )
        for x in results:
            d = x.as_dict()
            label = (
                x.title
                + (f" ({x.level})" if x.level else "")
                + (f" [{x.weights}]" if x.weights not in (None, "none") else "")
            )
            interval = fmt_ci(d, point=False, design=False)
            t.add_row(
                label,
                _fmt(d["point"]),
                interval,
                str(x.units),
                str(x.pairable),
                str(x.raters),
                x.note or "",
            )
        console.print(t)
        if ci == CIMethod.bootstrap and resamples:
            first = results[0].ci if results else None
            scheme = first.scheme if first else "item"
            method = first.method if first else "percentile"
            design = f", {first.design()}" if first and first.design() else ""
            console.print(
                f"CI: {method}, {resamples} bootstrap resamples ({scheme}{design}), seed {seed}",
                soft_wrap=True,
            )
            _warn(x.ci for x in results)
        if used is not None and ci != CIMethod.none and resamples:
            console.print(used.words(), highlight=False, soft_wrap=True)
        if ci == CIMethod.krippendorff and resamples:
            console.print(
                f"Krippendorff's pair bootstrap (compatibility mode, narrower than the unit "
                f"bootstrap), {resamples} resamples, seed {seed}"
            )

    emit(data, as_json, render)


@app.command("loo")
def loo_cmd(
    ctx: typer.Context,
    file: FileArg = None,
    fmt: FormatOpt = Fmt.wide,
    min_others: Annotated[
        int, typer.Option("--min-others", min=1, help="Other raters needed on a unit.")
    ] = 1,
    resamples: ResamplesOpt = 2000,
    seed: SeedOpt = 0,
    cluster: ClusterOpt = None,
    unit_col: UnitOpt = None,
    raters: RatersOpt = None,
    project: ProjectOpt = None,
    field: FieldOpt = None,
    arm: ArmOpt = None,
    tier: TierOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Each rater against the majority of the other raters (ties excluded), with CI (store
    mode: clustered by the project's declared cluster unless --cluster overrides it)."""
    from truthline.stats._structure import leave_one_out

    store_mode = file is None
    r, _, what = _source(
        ctx,
        file,
        fmt,
        unit_col=unit_col,
        raters=raters,
        cluster=None if store_mode else cluster,
        project=project,
        field=field,
        arm=arm,
        tier=tier,
    )
    used = (
        _declared_design(ctx, project, r, cluster, "none", CIMethod.bootstrap)
        if store_mode
        else None
    )
    rows = leave_one_out(r, min_others=min_others, resamples=resamples, seed=seed)
    data: dict[str, Any] = {"source": what, "raters": [x.as_dict() for x in rows]}
    if used is not None:
        data["design"] = used.as_dict()

    def render() -> None:
        t = Table(
            "rater",
            "agreement",
            "95% CI",
            "units",
            "ties excluded",
            title=f"each rater vs majority of the others: {what}",
        )
        for x in rows:
            t.add_row(
                str(x.rater),
                _fmt(x.agreement.point),
                f"[{_fmt(x.agreement.low)}, {_fmt(x.agreement.high)}]",
                str(x.units),
                str(x.ties_excluded),
            )
        console.print(t)
        if used is not None:
            console.print(used.words())
        _warn(x.agreement for x in rows)

    emit(data, as_json, render)


@app.command("scorer")
def scorer_cmd(
    file: Annotated[Path, typer.Argument(help="Wide CSV with rater columns and a scorer column.")],
    scorer: Annotated[str, typer.Option("--scorer", help="Column holding the scorer's value.")],
    tune_frac: Annotated[
        float, typer.Option("--tune-frac", help="Share of units for tuning (rest: report).")
    ] = 0.6,
    gray: Annotated[
        str | None, typer.Option("--gray", help="Column: non-empty/true marks a gray-zone unit.")
    ] = None,
    positive: Annotated[
        str | None, typer.Option("--positive", help="The 'accept' value (binary summary).")
    ] = None,
    resamples: ResamplesOpt = 2000,
    seed: SeedOpt = 0,
    cluster: ClusterOpt = None,
    unit_col: UnitOpt = None,
    raters: RatersOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A scorer column vs the rater majority on a held-out split (RealityBench protocol)."""
    from truthline.stats._structure import scorer_vs_majority
    from truthline.stats._table import need_columns, rater_columns, read_table, typed_table

    df = read_table(input_file(file, "ratings"))
    need_columns(df, file, scorer, gray, cluster, unit_col)
    ucol = unit_col or ("unit" if "unit" in df.columns else None)
    names = rater_columns(
        df,
        file,
        [c.strip() for c in raters.split(",") if c.strip()] if raters else None,
        [ucol, scorer, gray, cluster],
    )
    cols = typed_table(df, [*names, scorer], None)
    rows = [list(x) for x in zip(*cols, strict=True)]
    gray_mask = (
        [str(v).strip().lower() not in ("", "0", "false", "no", "nan") for v in df[gray]]
        if gray
        else None
    )
    pos: Any = positive
    if positive is not None and all(isinstance(v, float) or v is None for c in cols for v in c):
        pos = int(float(positive)) if float(positive).is_integer() else float(positive)
    rep = scorer_vs_majority(
        [row[:-1] for row in rows],
        [row[-1] for row in rows],
        tune_frac=tune_frac,
        seed=seed,
        gray=gray_mask,
        positive=pos,
        resamples=resamples,
        clusters=list(df[cluster]) if cluster else None,
    )
    data = rep.as_dict()

    def render() -> None:
        a = rep.agreement
        console.print(
            f"scorer {scorer!r} vs rater majority on {rep.held_out} held-out units "
            f"({rep.tuned} for tuning, seed {seed}): agreement {a.point:.3f} "
            f"[{_fmt(a.low)}, {_fmt(a.high)}]"
        )
        _warn([a])
        console.print(
            f"excluded: {rep.ties_excluded} ties, {rep.gray_excluded} gray-zone, "
            f"{rep.no_majority_or_score} without a majority or score"
        )
        labels = sorted({k for k in rep.confusion} | {k for v in rep.confusion.values() for k in v})
        t = Table("majority \\ scorer", *labels)
        for a_ in labels:
            t.add_row(a_, *[str(rep.confusion.get(a_, {}).get(b, 0)) for b in labels])
        console.print(t)
        if rep.summary():
            console.print(rep.summary())

    emit(data, as_json, render)


def _group_map(groups: Path | None, group: list[str] | None) -> dict[str, str]:
    """Category -> taxonomy group from ``--groups FILE`` (category,group rows) and ``--group``."""
    from truthline.stats._ratings import AgreementError
    from truthline.stats._table import read_table

    out: dict[str, str] = {}
    if groups is not None:
        df = read_table(input_file(groups, "--groups"))
        if len(df.columns) < 2:
            raise AgreementError(f"{groups}: needs two columns, category and group")
        for cat, grp in zip(df.iloc[:, 0], df.iloc[:, 1], strict=True):
            out[str(cat).strip()] = str(grp).strip()
    for spec in group or []:
        cat, sep, grp = spec.partition("=")
        if not sep or not cat.strip() or not grp.strip():
            raise AgreementError(f"--group {spec!r}: use CATEGORY=GROUP")
        out[cat.strip()] = grp.strip()
    return out


def _lookup(mapping: dict[str, str]) -> Any:
    def group_of(v: Any) -> str | None:
        key = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
        return mapping.get(key, mapping.get(str(v)))

    return group_of


def _taxonomy_groups(ctx: typer.Context, project: str | None, field: str) -> Any:
    """The field type's own taxonomy grouping (store mode), or None without a taxonomy."""
    ft = workspace(ctx).registered(project).field(re.sub(r"\[[^\]]*\]", "", field))
    if not getattr(getattr(ft, "spec", None), "taxonomy", None):
        return None
    return getattr(ft, "group_of", None)


@app.command("structure")
def structure_cmd(
    ctx: typer.Context,
    file: FileArg = None,
    fmt: FormatOpt = Fmt.wide,
    groups: Annotated[
        Path | None,
        typer.Option("--groups", help="CSV of category,group (store mode: the taxonomy)."),
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option("--group", help="CATEGORY=GROUP; repeatable (adds to / overrides --groups)."),
    ] = None,
    unit_col: UnitOpt = None,
    raters: RatersOpt = None,
    project: ProjectOpt = None,
    field: FieldOpt = None,
    arm: ArmOpt = None,
    tier: TierOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Disagreement structure: rater-vs-rater confusion by taxonomy group, share within a group."""
    from truthline.stats._ratings import AgreementError
    from truthline.stats._structure import disagreement_structure

    r, _, what = _source(
        ctx,
        file,
        fmt,
        unit_col=unit_col,
        raters=raters,
        project=project,
        field=field,
        arm=arm,
        tier=tier,
    )
    mapping = _group_map(groups, group)
    group_of: Any = _lookup(mapping) if mapping else None
    if group_of is None and file is None and field:
        group_of = _taxonomy_groups(ctx, project, field)
    if group_of is None:
        raise AgreementError(
            "no taxonomy groups: give --groups FILE (category,group) or --group CAT=GROUP"
            + ("" if file is not None else ", or pick a field that uses a taxonomy")
        )
    res = disagreement_structure(r, group_of)
    data = {"source": what, **res}

    def render() -> None:
        names = res["groups"]
        t = Table(
            "group \\ group",
            *names,
            title=f"disagreeing rater pairs by taxonomy group: {what}",
        )
        gd = res["group_disagreements"]
        for a in names:
            t.add_row(a, *[f"{gd[a][b] + (gd[b][a] if a != b else 0):g}" for b in names])
        console.print(t)
        share = res["share_within_group"]
        console.print(
            f"{res['disagreements']:g} of {res['pairs']:g} within-unit rater pairs disagree; "
            f"{res['within_group']:g} ({_fmt(None if share != share else share)}) "
            "fall inside one group"
        )
        by = res["within_group_share_by_group"]
        console.print(
            "share of within-group disagreements: "
            + ", ".join(f"{g} {_fmt(None if v != v else v)}" for g, v in by.items())
        )
        top = sorted(res["disagreement_pairs"].items(), key=lambda kv: -kv[1])[:10]
        if top:
            console.print(
                "most frequent disagreements: " + ", ".join(f"{k} ({v:g})" for k, v in top)
            )

    emit(data, as_json, render)
