"""The plot of ``trtrace bench`` (matplotlib, no display needed): per-phase distributions of the
measured runs per variant, and each variant's ratio to the first with its 95% interval. ``.png``
writes the figure; ``.html`` a self-contained page (the figure inline, and the table)."""

from __future__ import annotations

import base64
import html
import io
import os
from typing import Any

from . import bench_report as report


def figure_png(doc: dict[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    phases = [
        f for f in report.TIMES if any(r["figures"][f].get("n") and r["figures"][f]["max"] > 0 for r in doc["results"])
    ]
    ncols = 3
    nrows = (len(phases) + ncols - 1) // ncols + (1 if doc["comparisons"] else 0)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5 * ncols, 3.2 * nrows), squeeze=False)
    for ax, f in zip(axes.flat, phases):
        _distribution(ax, doc, f)
    for ax in axes.flat[len(phases) :]:
        ax.axis("off")
    if doc["comparisons"]:
        ax = fig.add_subplot(nrows, 1, nrows)
        _ratios(ax, doc)
    fig.suptitle("; ".join(f"{_letter(v['index'])}: {v['label']}" for v in doc["variants"]), fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def _letter(v: int) -> str:
    return chr(ord("A") + v) if v < 26 else f"V{v}"


def _label(doc: dict[str, Any], res: dict[str, Any]) -> str:
    """A short tick label: the variant's letter (the figure's title names each), after the trace when several."""
    name = os.path.basename(res["trace"])
    return f"{name[:16]}\n{_letter(res['variant'])}" if len(doc["traces"]) > 1 else _letter(res["variant"])


def _distribution(ax: Any, doc: dict[str, Any], f: str) -> None:
    groups, labels = [], []
    for res in doc["results"]:
        xs = [
            (r["wall"] if f == "wall" else r["phases"].get(f, 0.0)) * 1e3
            for r in doc["runs"]
            if r["trace"] == res["trace"] and r["variant"] == res["variant"] and not r["warmup"] and r["status"] == "ok"
        ]
        groups.append(xs)
        labels.append(_label(doc, res))
    ax.boxplot(groups, tick_labels=labels, showfliers=False)
    for i, xs in enumerate(groups, 1):
        ax.plot([i] * len(xs), xs, "o", alpha=0.5, markersize=3)
    ax.set_title(f"{f} (ms)")
    ax.tick_params(axis="x", labelsize=7)


def _ratios(ax: Any, doc: dict[str, Any]) -> None:
    rows = [c for c in doc["comparisons"] if c["ratio"] is not None]
    ys = list(range(len(rows)))
    for y, c in zip(ys, rows):
        lo, hi = c["ci95"] or [c["ratio"], c["ratio"]]
        color = {"slower": "tab:red", "faster": "tab:green"}.get(c["verdict"], "tab:gray")
        ax.errorbar(
            c["ratio"],
            y,
            xerr=[[c["ratio"] - (lo or c["ratio"])], [(hi or c["ratio"]) - c["ratio"]]],
            fmt="o",
            color=color,
        )
    ax.set_yticks(
        ys, [f"{os.path.basename(c['trace'])[:24]} {_letter(c['variant'])}/A {c['figure']}" for c in rows], fontsize=7
    )
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("ratio to the first variant (median; 95% bootstrap interval)")


def write(path: str, doc: dict[str, Any]) -> bytes:
    png = figure_png(doc)
    if path.endswith(".png"):
        return png
    rows = report.table_rows(doc)
    table = (
        "<table>"
        + "".join(
            "<tr>"
            + "".join(f"<{'th' if i == 0 else 'td'}>{html.escape(c)}</{'th' if i == 0 else 'td'}>" for c in r)
            + "</tr>"
            for i, r in enumerate(rows)
        )
        + "</table>"
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report._notes(doc))
    page = (
        f"<!doctype html><meta charset='utf-8'><title>trtrace bench</title><style>body{{font-family:sans-serif}}"
        f"td,th{{padding:2px 8px;font-size:12px}}</style><h1>trtrace bench</h1>"
        f"<img alt='per-phase distributions and ratios' src='data:image/png;base64,{base64.b64encode(png).decode()}'>"
        f"{table}<ul>{notes}</ul>"
    )
    return page.encode()
