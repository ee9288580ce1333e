"""Plot builders shared by pages: CI forest plots, CI bars, heatmaps (plotly figures only).

They draw numbers computed elsewhere; they compute none.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go


def ci_row(ci: Any, prefix: str = "") -> dict[str, Any]:
    """``{point, low, high}`` columns from a ``CI`` (object or its plain dict); NaN when absent."""
    if ci is None:
        vals = {"point": None, "low": None, "high": None}
    elif isinstance(ci, dict):
        vals = {k: ci.get(k) for k in ("point", "low", "high")}
    else:
        vals = {k: getattr(ci, k, None) for k in ("point", "low", "high")}
    p = f"{prefix}_" if prefix else ""
    out: dict[str, Any] = {
        f"{p}{k}": (float(v) if v is not None else float("nan")) for k, v in vals.items()
    }
    # the design beside the interval: how many clusters it resampled (issue 13)
    clusters = ci.get("clusters") if isinstance(ci, dict) else getattr(ci, "clusters", None)
    if clusters is not None:
        out[f"{p}clusters"] = int(clusters)
    return out


def _err(df: pd.DataFrame, p: str) -> dict[str, Any]:
    return dict(
        type="data",
        symmetric=False,
        array=(df[f"{p}high"] - df[f"{p}point"]).clip(lower=0),
        arrayminus=(df[f"{p}point"] - df[f"{p}low"]).clip(lower=0),
    )


def forest(
    df: pd.DataFrame,
    label: str,
    *,
    color: str | None = None,
    prefix: str = "",
    x_title: str = "",
    ref: float | None = None,
) -> go.Figure:
    """Points with horizontal CI bars, one row per ``label`` (grouped by ``color``)."""
    p = f"{prefix}_" if prefix else ""
    fig = go.Figure()
    groups = [(None, df)] if color is None else list(df.groupby(color, sort=False))
    for name, sub in groups:
        fig.add_trace(
            go.Scatter(
                x=sub[f"{p}point"],
                y=sub[label].astype(str),
                mode="markers",
                name=str(name) if name is not None else x_title,
                error_x=_err(sub, p),
                marker=dict(size=9),
            )
        )
    if ref is not None:
        fig.add_vline(x=ref, line_dash="dot", line_color="gray")
    fig.update_layout(
        height=120 + 28 * max(1, df[label].nunique()),
        xaxis_title=x_title,
        yaxis=dict(autorange="reversed"),
        margin=dict(l=10, r=10, t=30, b=40),
    )
    return fig


def ci_bars(
    df: pd.DataFrame, x: str, *, color: str | None = None, prefix: str = "", y_title: str = ""
) -> go.Figure:
    """Bars with vertical CI whiskers."""
    p = f"{prefix}_" if prefix else ""
    fig = go.Figure()
    groups = [(None, df)] if color is None else list(df.groupby(color, sort=False))
    for name, sub in groups:
        fig.add_trace(
            go.Bar(
                x=sub[x].astype(str),
                y=sub[f"{p}point"],
                name=str(name) if name is not None else y_title,
                error_y=_err(sub, p),
            )
        )
    fig.update_layout(barmode="group", height=380, yaxis_title=y_title, margin=dict(t=30))
    return fig


def heatmap(matrix: Any, labels_x: list[str], labels_y: list[str], *, title: str = "") -> go.Figure:
    fig = go.Figure(
        go.Heatmap(z=matrix, x=labels_x, y=labels_y, colorscale="Blues", texttemplate="%{z}")
    )
    fig.update_layout(
        height=160 + 26 * len(labels_y), title=title, yaxis=dict(autorange="reversed")
    )
    return fig
