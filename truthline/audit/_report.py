"""Audit reports in Markdown and HTML from ``AuditResult.as_dict()``.

The audit is built as a ``truthline.report.Report`` and rendered by the shared
templates, so both formats carry the same numbers. Every estimate is shown with its 95%
CI and design, every table row with its n, and every metric name in the glossary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from truthline.report import (
    CONTRAST,
    Figure,
    Paragraph,
    Report,
    Section,
    Table,
    render_html,
    render_markdown,
)
from truthline.stats import design_note, fmt_ci
from truthline.vocab import Direction


def _pct(ci: dict[str, Any] | None, pp: bool = False) -> str:
    """A share in percent (``pp``: a difference already in points), with its interval."""
    if pp:
        return fmt_ci(ci, digits=1, unit=" pp", missing="–")
    return fmt_ci(ci, digits=1, scale=100.0, unit="%", missing="–")


def _num(ci: dict[str, Any] | None, digits: int = 3) -> str:
    return fmt_ci(ci, digits=digits, missing="–")


def _n(ci: dict[str, Any] | None) -> int | None:
    """The units an interval resampled (``None`` when there is no interval)."""
    return None if not ci or ci.get("n") is None else int(ci["n"])


def _counts(d: Any) -> str:
    """``"blind 120, anchored 80"``: a count per key in prose (a Python dict printed as is
    read ``{'blind': 120, ...}`` in the report); ``"none"`` when empty."""
    if not isinstance(d, dict):
        return "none" if d in (None, "", [], {}) else str(d)
    parts = [f"{k} {v}" for k, v in d.items()]
    return ", ".join(parts) if parts else "none"


def _ns(*pairs: tuple[str, dict[str, Any] | None]) -> str:
    """``"139 anchored / 11 blind"``: the n of each interval in a row that mixes arms."""
    return " / ".join(f"{'–' if _n(ci) is None else _n(ci)} {what}" for what, ci in pairs)


DIRS = [(d, d.label) for d in Direction]


def _direction_rows(table: dict[str, Any]) -> list[str]:
    return [str(table["n"])] + [f"{table[k]['count']} · {_pct(table[k]['rate'])}" for k, _ in DIRS]


def _direction_table(rows: dict[str, Any], label: str, *extra: Any) -> Table:
    body = [[k, *_direction_rows(t)] for k, t in rows.items()]
    ns: list[int | str | None] = [t["n"] for t in rows.values()]
    return Table(
        [label, "n", *[n for _, n in DIRS]],
        body,
        ns,
        notes=[design_note((rows, *extra))],
        metrics=[k for k, _ in DIRS],
    )


def _intro(r: dict[str, Any]) -> list[str]:
    s, c = r["settings"], r["counts"]
    out = [
        f"{c['items']} items ({c['annotated_items']} annotated), annotations by arm "
        f"{_counts(c['annotations_by_arm'])}, {len(c['annotators'])} annotators, "
        f"{c['expert_reviewed_items']} expert-reviewed items, {c['decisions']} tier-1 "
        f"field decisions ({c['decisions_with_expert']} with an expert reference). "
        f"Prefill: `{s['model_version']}`. Every number is a point estimate with a 95% "
        f"percentile bootstrap CI ({s['resamples']} resamples, seed {s['seed']}, "
        f"{s['scheme']} resampling"
        + (f" over {s['clusters']} clusters" if s.get("clusters") else "")
        + "); an interval over clusters names how many it resampled, and with fewer than "
        "20 clusters it is a cluster jackknife-t, marked ⚠. Rates of counts are at least "
        "as wide as the (cluster-adjusted) Wilson interval"
        + ("; direction rates are inverse-probability weighted" if s["ipw_review_weights"] else "")
        + ". The n column of each table is the number of units its row rests on."
    ]
    if r["exclusions"]:
        out.append(
            "Excluded annotators: "
            + "; ".join(f"**{a}** ({why})" for a, why in r["exclusions"].items())
            + ". Numbers below are after exclusion unless marked."
        )
    out += [f"⚠ {w}" for w in r["warnings"]]
    return out


def _who(r: dict[str, Any], annotator: str) -> str:
    """An annotator's name as the per-annotator tables show it: "(SIMULATED)" beside the
    ones the store marks SIMULATED, so they are never read as real people."""
    from truthline.store import shown_name

    return shown_name(annotator, r.get("simulated_annotators") or ())


def _per_annotator(r: dict[str, Any]) -> Section:
    d, ov, cl, vk, fl = (
        r["direction"],
        r["override"],
        r["correct_label"],
        r["vlm_kappa"],
        r["flags"],
    )
    rows, ns = [], []
    for a, o in ov["by_annotator"].items():
        dt = d["by_annotator"].get(a, {})
        ns.append(o["annotations"])
        rows.append(
            [
                _who(r, a),
                str(o["annotations"]),
                _pct(o["override_rate"]),
                _num(o["edit_depth"], 2),
                _pct(cl["by_annotator"].get(a)),
                _pct(dt.get("productive_anchoring", {}).get("rate")),
                _pct(dt.get("harmful_anchoring", {}).get("rate")),
                str(dt.get("productive_override", {}).get("count", "–")),
                _num(vk["by_annotator"].get(a)),
                _pct(fl.get(a, {}).get("flag_rate")),
                _pct(fl.get(a, {}).get("skip_rate")),
            ]
        )
    table = Table(
        [
            "annotator",
            "anchored items",
            "override rate",
            "edit depth",
            "correct-label rate",
            "productive anchoring",
            "harmful anchoring",
            "productive overrides",
            "VLM κ",
            "flag rate",
            "skip rate",
        ],
        rows,
        ns,
        notes=[
            design_note(
                (ov["by_annotator"], cl["by_annotator"], vk["by_annotator"], fl, d["by_annotator"])
            )
        ],
        metrics=[
            "override_rate",
            "edit_depth",
            "correct_label_rate",
            "productive_anchoring",
            "harmful_anchoring",
            "productive_override",
            "vlm_kappa",
            "flag_rate",
            "skip_rate",
        ],
        n_column="anchored items",
    )
    team = (
        f"Team: override rate {_pct(ov['team']['override_rate'])}, edit depth "
        f"{_num(ov['team']['edit_depth'], 2)}, correct-label rate {_pct(cl['all'])}, "
        f"VLM κ ceiling (retained) {vk['ceiling']:.3f}."
        if vk.get("ceiling") is not None
        else ""
    )
    return Section("Per annotator", [table, Paragraph(team)])


def _signals(r: dict[str, Any]) -> Section:
    rows, ns = [], []
    annotations = {a: o["annotations"] for a, o in r["override"]["by_annotator"].items()}
    for a, sg in r["signals"].items():
        cells = [_who(r, a)]
        for k in ("override_low", "vlm_kappa_high", "zero_productive"):
            x = sg["signals"].get(k)
            if x is None:
                cells.append("–")
            elif k == "zero_productive":
                cells.append(
                    f"{'**FIRED** ' if x['fired'] else ''}{x['value']} productive over "
                    f"{x['vlm_errors']} VLM errors (team {x['team_range']}, min {x['min_vlm_errors']})"
                )
            else:
                lo, hi = x["team_range"]
                cells.append(
                    f"{'**FIRED** ' if x['fired'] else ''}{x['value']:.3f} vs team "
                    f"[{lo:.3f}, {hi:.3f}] (threshold {x['threshold']:.3f})"
                )
        status = ["**excluded**"] if sg.get("excluded") else []
        status += ["**flagged**"] if sg["flagged"] else []
        cells.append(", ".join(status))
        rows.append(cells)
        ns.append(annotations.get(a))
    return Section(
        "Exclusion signals",
        [
            Paragraph("n: the annotator's anchored items."),
            Table(
                [
                    "annotator",
                    "override rate below team range",
                    "VLM κ above team ceiling",
                    "zero productive overrides",
                    "",
                ],
                rows,
                ns,
                metrics=["override_low", "vlm_kappa_high", "zero_productive"],
            ),
        ],
    )


def _gold_standard(gs: dict[str, Any], simulated: Sequence[str] = ()) -> Section:
    """Each annotator's accuracy on the gold-standard items mixed into their queues."""
    from truthline.store import shown_name

    rows = [
        [
            shown_name(a, simulated),
            f"{x['accuracy']:.3f} [{x['low']:.3f}, {x['high']:.3f}]",
            x["correct"],
            x["scored"],
        ]
        for a, x in gs.items()
    ]
    return Section(
        "Gold-standard accuracy",
        [
            Paragraph(
                "Answers on items with known answers, mixed unmarked into tier-1 queues; "
                "n: the annotator's gold-standard items. Beside the exclusion signals, not "
                "one of them."
            ),
            Table(
                ["annotator", "accuracy (Wilson 95% CI)", "correct", "answers scored"],
                rows,
                [x["items"] for x in gs.values()],
                metrics=["gold_standard_accuracy"],
            ),
        ],
    )


def _before_after(ba: dict[str, Any]) -> Section:
    rows = ba["rows"]
    return Section(
        f"Before / after exclusion ({ba['kind']}: {', '.join(ba['annotators'])})",
        [
            Table(
                ["aggregate", "before", "after", "change"],
                [
                    [k, _num(v["before"]), _num(v["after"]), _num(v["change"])]
                    for k, v in rows.items()
                ],
                [_ns(("before", v["before"]), ("after", v["after"])) for v in rows.values()],
                notes=[design_note((rows,))],
                metrics=["before_after", *dict.fromkeys(k.split("[")[0] for k in rows)],
            )
        ],
    )


def _time(r: dict[str, Any]) -> Section:
    tm = r["time"]["all"]
    by = r["time"]["by_field"]
    return Section(
        "Annotation time",
        [
            Paragraph(
                f"Mean lead time when every prefill was kept: {_num(tm['kept'], 0)} s; when at "
                f"least one was overridden: {_num(tm['overridden'], 0)} s (difference "
                f"{_num(tm['diff'], 0)} s)."
            ),
            Table(
                ["field", "kept (s)", "overridden (s)", "difference (s)"],
                [
                    [f, _num(x["kept"], 0), _num(x["overridden"], 0), _num(x["diff"], 0)]
                    for f, x in by.items()
                ],
                [_ns(("kept", x["kept"]), ("overridden", x["overridden"])) for x in by.values()],
                notes=[design_note((r["time"],))],
                metrics=["lead_time"],
            ),
        ],
        metrics=["lead_time"],
    )


def _safety(r: dict[str, Any]) -> Section:
    sf = r["safety"]
    rows = [
        [
            f,
            str(x["n"]),
            f"{x['vlm_false_alarm']['count']} · {_pct(x['vlm_false_alarm']['rate'])}",
            f"{x['vlm_miss']['count']} · {_pct(x['vlm_miss']['rate'])}",
            f"{x['expert_only_catch']['count']} · {_pct(x['expert_only_catch']['rate'])}",
        ]
        for f, x in sf.items()
    ]
    return Section(
        "Safety-violation direction",
        [
            Table(
                ["field", "comparisons", "VLM false alarms", "VLM misses", "caught only by expert"],
                rows,
                [x["n"] for x in sf.values()],
                notes=[design_note((sf,))],
                metrics=["vlm_false_alarm", "vlm_miss", "expert_only_catch"],
                n_column="comparisons",
            )
        ],
    )


def _residual(rr: dict[str, Any]) -> Section:
    ub = rr.get("upper_bound_items")
    exp = rr.get("expected_items")
    if exp is None or rr.get("reviewed_items") in (None, 0):
        return Section(
            "Residual risk",
            [
                Paragraph(
                    f"{rr.get('items_without_review', 0)} anchored items were finalized "
                    "without expert review, and no expert-reviewed anchored item exists to "
                    "estimate how many of them carry an uncorrected harmful anchor: push a "
                    "review arm (`truthline annotate push --arm review`) to bound it."
                )
            ],
        )
    return Section(
        "Residual risk",
        [
            Paragraph(
                f"{rr['items_without_review']} anchored items were finalized without expert "
                f"review. Among the {rr['reviewed_items']} expert-reviewed anchored items, "
                f"{rr['reviewed_items_with_harmful_anchor']} carry at least one harmful anchor "
                f"(per-item rate {_pct(rr['item_harmful_rate'])}), so an estimated "
                f"{rr['expected_items']:.1f} of the unreviewed items carry at least one "
                "uncorrected harmful anchor, and at most "
                + ("–" if ub is None or ub != ub else f"{ub:.0f}")
                + " (one-sided 95% upper prediction bound: BetaBinomial over the per-item "
                "rate's uncertainty and the unreviewed items' own spread"
                + (
                    f", design effect {rr['design_effect']:.2f}"
                    if (rr.get("design_effect") or 1.0) > 1
                    else ""
                )
                + "; it assumes the reviewed items are a random share of the anchored items; "
                "worst case: no self-correction). For context, the "
                f"per-decision harmful anchoring rate is {_pct(rr['harmful_anchoring_rate'])}."
            ),
            Paragraph(design_note((rr,))),
        ],
        metrics=["residual_risk", "harmful_anchoring"],
    )


def _gradient(g: dict[str, Any]) -> Section:
    return Section(
        "Provenance gradient",
        [
            Paragraph(
                f"The same predictions (`{g['predictions']}`) scored against three references: "
                f"blind-arm labels {_pct(g['blind'])} → anchored-arm labels "
                f"{_pct(g['anchored'])} → VLM-sourced gold {_pct(g['vlm_sourced'])}. "
                f"Inflation blind → VLM-sourced: {_pct(g['inflation_pp'], pp=True)}."
            ),
            Table(
                ["reference", "accuracy of the predictions"],
                [
                    ["blind-arm labels", _pct(g["blind"])],
                    ["anchored-arm labels", _pct(g["anchored"])],
                    ["VLM-sourced gold", _pct(g["vlm_sourced"])],
                    ["inflation blind → VLM-sourced", _pct(g["inflation_pp"], pp=True)],
                ],
                [
                    _n(g["blind"]),
                    _n(g["anchored"]),
                    _n(g["vlm_sourced"]),
                    _ns(("blind", g["blind"]), ("VLM-sourced", g["vlm_sourced"])),
                ],
                notes=[design_note((g,))],
                metrics=["provenance_gradient", "gold_slice_inflation"],
            ),
            *_figure(
                _plot_gradient, g, "Provenance gradient: the same predictions, three references"
            ),
        ],
    )


def _figure(plot: Any, data: Any, title: str) -> list[Figure]:
    """A figure of ``plot(data)``, or none when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    fig = plot(data)
    return [] if fig is None else [Figure.from_matplotlib(fig, title)]


def _errbars(cis: list[dict[str, Any] | None], k: float) -> tuple[list[float], list[list[float]]]:
    pts, lo, hi = [], [], []
    for ci in cis:
        p = (ci or {}).get("point")
        p = 0.0 if p is None else p * k
        low, high = (ci or {}).get("low"), (ci or {}).get("high")
        pts.append(p)
        lo.append(0.0 if low is None else max(0.0, p - low * k))
        hi.append(0.0 if high is None else max(0.0, high * k - p))
    return pts, [lo, hi]


def _plot_bias(bias: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    if not bias:
        return None
    fields = list(bias)[::-1]
    pts, err = _errbars([bias[f]["bias_pp"] for f in fields], 1.0)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(fields) + 1.5))
    ax.barh(fields, pts, xerr=err, color="#c44e52", capsize=3)
    ax.axvline(0, color="grey", lw=1)
    ax.set_xlabel("anchoring bias (pp): VLM agreement anchored − blind, 95% CI")
    return fig


def _plot_gradient(g: dict[str, Any]) -> Any:
    import matplotlib.pyplot as plt

    refs = [
        ("blind-arm", g["blind"]),
        ("anchored-arm", g["anchored"]),
        ("VLM-sourced", g["vlm_sourced"]),
    ]
    if all(not ci or ci.get("point") is None for _, ci in refs):
        return None
    pts, err = _errbars([ci for _, ci in refs], 100.0)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([n for n, _ in refs], pts, yerr=err, color=["#4c72b0", "#dd8452", "#c44e52"], capsize=4)
    ax.set_ylim(0, 100)
    ax.set_ylabel("accuracy of the predictions (%), 95% CI")
    return fig


def audit_report(r: dict[str, Any]) -> Report:
    """The audit of ``AuditResult.as_dict()`` as a report model."""
    d = r["direction"]
    sections = [
        Section(
            "Direction of VLM influence per field",
            [
                Paragraph(
                    "Anchored-arm decisions with an expert reference. Harmful anchoring: the "
                    "VLM was wrong and the annotator kept it."
                ),
                _direction_table({**d["by_field"], "**all fields**": d["all"]}, "field"),
            ],
        ),
        _per_annotator(r),
    ]
    bias = r["anchoring_bias"]
    sections.append(
        Section(
            "Anchoring bias",
            [
                Paragraph("Agreement with the VLM in the anchored arm minus the blind arm."),
                Table(
                    ["field", "VLM agreement anchored", "VLM agreement blind", "bias"],
                    [
                        [f, _pct(b["anchored"]), _pct(b["blind"]), _pct(b["bias_pp"], pp=True)]
                        for f, b in bias.items()
                    ],
                    [
                        _ns(("anchored", b["anchored"]), ("blind", b["blind"]))
                        for b in bias.values()
                    ],
                    notes=[design_note((bias,))],
                    metrics=["anchoring_bias"],
                ),
                *_figure(_plot_bias, bias, "Anchoring bias per field"),
            ],
        )
    )
    iaa = r["iaa"]
    sections.append(
        Section(
            "Inter-annotator agreement: blind vs anchored",
            [
                Table(
                    [
                        "field",
                        "blind pairs",
                        "κ blind",
                        "anchored pairs",
                        "κ anchored",
                        "anchored − blind",
                    ],
                    [
                        [
                            f,
                            f"{x['blind_pairs']}",
                            _num(x["blind"]),
                            f"{x['anchored_pairs']}",
                            _num(x["anchored"]),
                            _num(x["diff"]),
                        ]
                        for f, x in iaa.items()
                    ],
                    [x["blind_pairs"] for x in iaa.values()],
                    notes=[design_note((iaa,))],
                    metrics=["iaa_kappa"],
                    n_column="blind pairs",
                )
            ],
        )
    )
    sections.append(_signals(r))
    if r.get("gold_standard"):
        sections.append(_gold_standard(r["gold_standard"], r.get("simulated_annotators") or ()))
    if r.get("before_after"):
        sections.append(_before_after(r["before_after"]))
    sections.append(_time(r))
    if r["safety"]:
        sections.append(_safety(r))
    sections += [_residual(r["residual_risk"]), _gradient(r["gradient"])]
    for f, by in d.get("by_group", {}).items():
        sections.append(
            Section(f"Direction by taxonomy group — {f}", [_direction_table(by, "group")], level=3)
        )
    gp = r["gold_preview"]
    sections += [
        Section(
            "Gold preview",
            [
                Paragraph(
                    f"Finalizing now would give {gp['values']} gold values over {gp['items']} "
                    f"items (by provenance: {_counts(gp['by_provenance'])}), {_counts(gp['pending'])} pending; "
                    f"{gp.get('unusable_items', 0)} clips left out as unusable (flagged, "
                    f"schema-invalid, abandoned: {_counts(gp.get('unusable_by_reason'))}); "
                    f"snapshot `{gp['hash'][:12]}`."
                )
            ],
            metrics=["gold_values"],
        ),
        Section(
            "How to read this",
            [Paragraph(CONTRAST)],
            metrics=["anchoring_bias", "gold_slice_inflation"],
        ),
    ]
    return Report(
        f"Provenance audit — {r['project']}",
        sections,
        simulated=str(r["settings"].get("model_version", "")).startswith("simulated:"),
        intro=_intro(r),
    )


def to_markdown(r: dict[str, Any]) -> str:
    return render_markdown(audit_report(r))


def to_html(r: dict[str, Any]) -> str:
    return render_html(audit_report(r))
