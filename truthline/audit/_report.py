"""Audit reports in Markdown and HTML from ``AuditResult.as_dict()``.

One small document model (headings, paragraphs, tables) rendered two ways, so both
formats always carry the same numbers. Every estimate is shown with its 95% CI.
"""

from __future__ import annotations

import html
from typing import Any

from truthline.audit._cifmt import design_note, with_design

Block = tuple[str, Any, Any]


def _note(*sources: Any) -> Block:
    """The thin-design note under a table ("" -> not rendered)."""
    return ("p", None, design_note(sources))


def _pct(ci: dict[str, Any] | None, pp: bool = False) -> str:
    if not ci or ci.get("point") is None:
        return "–"
    k = 1.0 if pp else 100.0
    unit = " pp" if pp else "%"
    p = ci["point"] * k
    if ci.get("low") is None:
        return f"{p:.1f}{unit}"
    return with_design(f"{p:.1f}{unit} [{ci['low'] * k:.1f}, {ci['high'] * k:.1f}]", ci)


def _num(ci: dict[str, Any] | None, digits: int = 3) -> str:
    if not ci or ci.get("point") is None:
        return "–"
    if ci.get("low") is None:
        return f"{ci['point']:.{digits}f}"
    return with_design(
        f"{ci['point']:.{digits}f} [{ci['low']:.{digits}f}, {ci['high']:.{digits}f}]", ci
    )


DIRS = [
    ("productive_anchoring", "productive anchoring"),
    ("harmful_anchoring", "harmful anchoring"),
    ("harmful_override", "harmful override"),
    ("productive_override", "productive override"),
    ("wrong_override", "wrong override"),
]


def _direction_rows(table: dict[str, Any]) -> list[str]:
    return [str(table["n"])] + [f"{table[k]['count']} · {_pct(table[k]['rate'])}" for k, _ in DIRS]


def blocks(r: dict[str, Any]) -> list[Block]:
    """The report as a list of blocks (``h``, ``p``, ``table``)."""
    s = r["settings"]
    c = r["counts"]
    out: list[Block] = [
        ("h", 1, f"Provenance audit — {r['project']}"),
        (
            "p",
            None,
            f"{c['items']} items ({c['annotated_items']} annotated), annotations by arm "
            f"{c['annotations_by_arm']}, {len(c['annotators'])} annotators, "
            f"{c['expert_reviewed_items']} expert-reviewed items, {c['decisions']} tier-1 "
            f"field decisions ({c['decisions_with_expert']} with an expert reference). "
            f"Prefill: `{s['model_version']}`. Every number is a point estimate with a 95% "
            f"percentile bootstrap CI ({s['resamples']} resamples, seed {s['seed']}, "
            f"{s['scheme']} resampling"
            + (f" over {s['clusters']} clusters" if s.get("clusters") else "")
            + "); an interval over clusters names how many it resampled, and with fewer than "
            "20 clusters it is a cluster jackknife-t, marked ⚠. Rates of counts are at least "
            "as wide as the (cluster-adjusted) Wilson interval"
            + (
                "; direction rates are inverse-probability weighted"
                if s["ipw_review_weights"]
                else ""
            )
            + ".",
        ),
    ]
    if r["exclusions"]:
        out.append(
            (
                "p",
                None,
                "Excluded annotators: "
                + "; ".join(f"**{a}** ({why})" for a, why in r["exclusions"].items())
                + ". Numbers below are after exclusion unless marked.",
            )
        )
    for w in r["warnings"]:
        out.append(("p", None, f"⚠ {w}"))

    d = r["direction"]
    head = ["field", "n", *[n for _, n in DIRS]]
    rows = [[f, *_direction_rows(t)] for f, t in d["by_field"].items()]
    rows.append(["**all fields**", *_direction_rows(d["all"])])
    out += [
        ("h", 2, "Direction of VLM influence per field"),
        (
            "p",
            None,
            "Anchored-arm decisions with an expert reference. Harmful anchoring: the VLM "
            "was wrong and the annotator kept it.",
        ),
        ("table", head, rows),
        _note(d["by_field"], d["all"]),
    ]
    ov, cl, vk, fl = r["override"], r["correct_label"], r["vlm_kappa"], r["flags"]
    rows = []
    for a, o in ov["by_annotator"].items():
        dt = d["by_annotator"].get(a, {})
        rows.append(
            [
                a,
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
    out += [
        ("h", 2, "Per annotator"),
        (
            "table",
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
        ),
        _note(ov["by_annotator"], cl["by_annotator"], vk["by_annotator"], fl, d["by_annotator"]),
        (
            "p",
            None,
            f"Team: override rate {_pct(ov['team']['override_rate'])}, edit depth "
            f"{_num(ov['team']['edit_depth'], 2)}, correct-label rate {_pct(cl['all'])}, "
            f"VLM κ ceiling (retained) {vk['ceiling']:.3f}."
            if vk.get("ceiling") is not None
            else "",
        ),
    ]
    rows = [
        [f, _pct(b["anchored"]), _pct(b["blind"]), _pct(b["bias_pp"], pp=True)]
        for f, b in r["anchoring_bias"].items()
    ]
    out += [
        ("h", 2, "Anchoring bias"),
        ("p", None, "Agreement with the VLM in the anchored arm minus the blind arm."),
        ("table", ["field", "VLM agreement anchored", "VLM agreement blind", "bias"], rows),
        _note(r["anchoring_bias"]),
    ]
    rows = [
        [
            f,
            f"{x['blind_pairs']}",
            _num(x["blind"]),
            f"{x['anchored_pairs']}",
            _num(x["anchored"]),
            _num(x["diff"]),
        ]
        for f, x in r["iaa"].items()
    ]
    out += [
        ("h", 2, "Inter-annotator agreement: blind vs anchored"),
        (
            "table",
            ["field", "blind pairs", "κ blind", "anchored pairs", "κ anchored", "anchored − blind"],
            rows,
        ),
        _note(r["iaa"]),
    ]
    out.append(("h", 2, "Exclusion signals"))
    rows = []
    for a, sg in r["signals"].items():
        cells = [a]
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
        cells.append("**flagged**" if sg["flagged"] else "")
        rows.append(cells)
    out.append(
        (
            "table",
            [
                "annotator",
                "override rate below team range",
                "VLM κ above team ceiling",
                "zero productive overrides",
                "",
            ],
            rows,
        )
    )
    ba = r.get("before_after")
    if ba:
        out += [
            ("h", 2, f"Before / after exclusion ({ba['kind']}: {', '.join(ba['annotators'])})"),
            (
                "table",
                ["aggregate", "before", "after", "change"],
                [
                    [k, _num(v["before"]), _num(v["after"]), _num(v["change"])]
                    for k, v in ba["rows"].items()
                ],
            ),
            _note(ba["rows"]),
        ]
    tm = r["time"]["all"]
    out += [
        ("h", 2, "Annotation time"),
        (
            "p",
            None,
            f"Mean lead time when every prefill was kept: {_num(tm['kept'], 0)} s; when at "
            f"least one was overridden: {_num(tm['overridden'], 0)} s (difference "
            f"{_num(tm['diff'], 0)} s).",
        ),
        (
            "table",
            ["field", "kept (s)", "overridden (s)", "difference (s)"],
            [
                [f, _num(x["kept"], 0), _num(x["overridden"], 0), _num(x["diff"], 0)]
                for f, x in r["time"]["by_field"].items()
            ],
        ),
        _note(r["time"]),
    ]
    if r["safety"]:
        rows = [
            [
                f,
                str(x["n"]),
                f"{x['vlm_false_alarm']['count']} · {_pct(x['vlm_false_alarm']['rate'])}",
                f"{x['vlm_miss']['count']} · {_pct(x['vlm_miss']['rate'])}",
                f"{x['expert_only_catch']['count']} · {_pct(x['expert_only_catch']['rate'])}",
            ]
            for f, x in r["safety"].items()
        ]
        out += [
            ("h", 2, "Safety-violation direction"),
            (
                "table",
                ["field", "comparisons", "VLM false alarms", "VLM misses", "caught only by expert"],
                rows,
            ),
            _note(r["safety"]),
        ]
    rr = r["residual_risk"]
    ub = rr.get("upper_bound_items")
    out += [
        ("h", 2, "Residual risk"),
        (
            "p",
            None,
            f"{rr['items_without_review']} anchored items were finalized without expert review. "
            f"Among the {rr['reviewed_items']} expert-reviewed anchored items, "
            f"{rr['reviewed_items_with_harmful_anchor']} carry at least one harmful anchor "
            f"(per-item rate {_pct(rr['item_harmful_rate'])}), so an estimated "
            f"{rr['expected_items']:.1f} of the unreviewed items carry at least one uncorrected "
            "harmful anchor, and at most "
            + ("–" if ub is None else f"{ub:.1f}")
            + " at 95% confidence (the per-item rate's upper confidence limit × the items "
            "without review; worst case: no self-correction). For context, the per-decision "
            f"harmful anchoring rate is {_pct(rr['harmful_anchoring_rate'])}.",
        ),
        _note(rr),
    ]
    g = r["gradient"]
    out += [
        ("h", 2, "Provenance gradient"),
        (
            "p",
            None,
            f"The same predictions (`{g['predictions']}`) scored against three references: "
            f"blind-arm labels {_pct(g['blind'])} → anchored-arm labels {_pct(g['anchored'])} "
            f"→ VLM-sourced gold {_pct(g['vlm_sourced'])}. Inflation blind → VLM-sourced: "
            f"{_pct(g['inflation_pp'], pp=True)}.",
        ),
        _note(g),
    ]
    groups = d.get("by_group", {})
    for f, by in groups.items():
        out += [
            ("h", 3, f"Direction by taxonomy group — {f}"),
            (
                "table",
                ["group", "n", *[n for _, n in DIRS]],
                [[k, *_direction_rows(t)] for k, t in by.items()],
            ),
            _note(by),
        ]
    gp = r["gold_preview"]
    out += [
        ("h", 2, "Gold preview"),
        (
            "p",
            None,
            f"Finalizing now would give {gp['values']} gold values over {gp['items']} items "
            f"(by provenance {gp['by_provenance']}), {gp['pending']} pending; snapshot "
            f"`{gp['hash'][:12]}`.",
        ),
    ]
    return out


def to_markdown(r: dict[str, Any]) -> str:
    lines: list[str] = []
    for kind, a, b in blocks(r):
        if kind == "h":
            lines += ["#" * a + " " + b, ""]
        elif kind == "p":
            if b:
                lines += [b, ""]
        else:
            lines.append("| " + " | ".join(a) + " |")
            lines.append("|" + "|".join("---" for _ in a) + "|")
            lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in b]
            lines.append("")
    return "\n".join(lines)


def _inline(text: str) -> str:
    import re

    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", t)


def to_html(r: dict[str, Any]) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>Provenance audit — {html.escape(r['project'])}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;"
        "padding:0 1em}table{border-collapse:collapse;margin:1em 0;font-size:.9em}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}"
        "th{background:#f4f4f4}</style></head><body>",
    ]
    for kind, a, b in blocks(r):
        if kind == "h":
            parts.append(f"<h{a}>{_inline(b)}</h{a}>")
        elif kind == "p":
            if b:
                parts.append(f"<p>{_inline(b)}</p>")
        else:
            parts.append("<table><thead><tr>")
            parts += [f"<th>{_inline(h)}</th>" for h in a]
            parts.append("</tr></thead><tbody>")
            for row in b:
                parts.append("<tr>" + "".join(f"<td>{_inline(str(x))}</td>" for x in row) + "</tr>")
            parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)
