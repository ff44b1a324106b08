"""Charts of a bench report as self-contained SVG, written by hand (no plotting library).

* view tokens sent per call, one line per strategy, the budget dashed (lines above three
  times the budget leave the plot; the legend gives their peak);
* cost per strategy, bars annotated with lost results and calls over budget;
* prepare time against history length (log-log).

``write_chart(report, path)`` writes an HTML page (``.html``) or one SVG (``.svg``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import cast

from .run import BenchReport, BenchRow
from .scaling import ScalingPoint

PALETTE = {
    "none": "#9e9e9e",
    "seed": "#e377c2",
    "default": "#1f77b4",
    "masking": "#ff7f0e",
    "openhands-summarizer": "#2ca02c",
    "anthropic-clearing": "#d62728",
    "codex": "#9467bd",
    "seed-loop": "#8c564b",
}
FONT = "font-family='system-ui, sans-serif' font-size='12'"


def color(name: str) -> str:
    return PALETTE.get(name, "#17becf")


def _svg(width: int, height: int, body: str) -> str:
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' {FONT}>"
        f"<rect width='{width}' height='{height}' fill='white'/>{body}</svg>"
    )


def _nice(value: float) -> float:
    if value <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * exp:
            return cast(float, step * exp)  # an int for exp >= 0: the axis reads 10, not 10.0
    return cast(float, 10 * exp)


def line_chart(
    title: str, series: dict[str, list[int]], budget: int, width: int = 960, height: int = 380
) -> str:
    left, right, top, bottom = 70, 280, 30, 40
    pw, ph = width - left - right, height - top - bottom
    longest = max((len(v) for v in series.values()), default=1)
    peak = max((max(v, default=0) for v in series.values()), default=1)
    ymax = _nice(min(peak, 3 * budget) * 1.05)
    xmax = max(1, longest - 1)

    def x(i: float) -> float:
        return left + pw * i / xmax

    def y(v: float) -> float:
        return top + ph * (1 - v / ymax)

    parts = [f"<text x='{left}' y='18' font-size='14' font-weight='bold'>{escape(title)}</text>"]
    clip = f"plot{zlib.crc32(title.encode()):08x}"
    parts.append(
        f"<clipPath id='{clip}'><rect x='{left}' y='{top}' width='{pw}' height='{ph}'/></clipPath>"
    )
    for k in range(6):
        v = ymax * k / 5
        parts.append(
            f"<line x1='{left}' x2='{left + pw}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#eee'/>"
            f"<text x='{left - 6}' y='{y(v) + 4:.1f}' text-anchor='end'>{v:,.0f}</text>"
        )
    for k in range(6):
        i = xmax * k / 5
        parts.append(
            f"<text x='{x(i):.1f}' y='{top + ph + 16}' text-anchor='middle'>{i:,.0f}</text>"
        )
    parts.append(
        f"<text x='{left + pw / 2}' y='{height - 6}' text-anchor='middle'>call (turn)</text>"
        f"<text x='14' y='{top + ph / 2}' transform='rotate(-90 14 {top + ph / 2})' "
        f"text-anchor='middle'>tokens sent</text>"
    )
    parts.append(
        f"<line x1='{left}' x2='{left + pw}' y1='{y(budget):.1f}' y2='{y(budget):.1f}' "
        f"stroke='black' stroke-dasharray='6 4'/>"
        f"<text x='{left + pw - 4}' y='{y(budget) - 4:.1f}' text-anchor='end'>budget "
        f"{budget:,}</text>"
    )
    for n, (name, values) in enumerate(series.items()):
        step = max(1, len(values) // 1500)
        points = " ".join(
            f"{x(i):.1f},{y(min(v, ymax * 1.2)):.1f}" for i, v in enumerate(values) if i % step == 0
        )
        parts.append(
            f"<polyline clip-path='url(#{clip})' fill='none' stroke='{color(name)}' "
            f"stroke-width='{2.2 if name == 'default' else 1.3}' points='{points}'/>"
        )
        ly = top + 14 + 18 * n
        top_value = max(values, default=0)
        parts.append(
            f"<line x1='{left + pw + 12}' x2='{left + pw + 32}' y1='{ly - 4}' y2='{ly - 4}' "
            f"stroke='{color(name)}' stroke-width='3'/>"
            f"<text x='{left + pw + 38}' y='{ly}'>{escape(name)} (peak {top_value:,})</text>"
        )
    parts.append(
        f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>"
    )
    return _svg(width, height, "".join(parts))


def bar_chart(title: str, rows: Sequence[BenchRow], width: int = 960, height: int = 320) -> str:
    left, right, top, bottom = 170, 300, 30, 30
    pw = width - left - right
    bar = (height - top - bottom) / max(1, len(rows))
    vmax = _nice(max((r.cost_usd for r in rows), default=1.0) or 1.0)
    parts = [f"<text x='10' y='18' font-size='14' font-weight='bold'>{escape(title)}</text>"]
    for i, r in enumerate(rows):
        y0 = top + i * bar
        w = pw * r.cost_usd / vmax
        notes = []
        if r.lost:
            notes.append(f"lost {r.lost:,}")
        if r.over_budget_calls:
            notes.append(
                f"{r.over_budget_calls:,} call{'s' if r.over_budget_calls > 1 else ''} over budget"
            )
        note = ", ".join(notes) or "nothing lost, within budget"
        parts.append(
            f"<text x='{left - 8}' y='{y0 + bar * 0.62:.1f}' text-anchor='end'>"
            f"{escape(r.strategy)}</text>"
            f"<rect x='{left}' y='{y0 + bar * 0.15:.1f}' width='{w:.1f}' height='{bar * 0.7:.1f}' "
            f"fill='{color(r.strategy)}'/>"
            f"<text x='{left + w + 6:.1f}' y='{y0 + bar * 0.62:.1f}'>${r.cost_usd:,.3f} "
            f"({escape(note)})</text>"
        )
    return _svg(width, height, "".join(parts))


def scaling_chart(points: Sequence[ScalingPoint], width: int = 960, height: int = 340) -> str:
    left, right, top, bottom = 70, 280, 30, 40
    pw, ph = width - left - right, height - top - bottom
    if not points:
        return _svg(width, height, "<text x='10' y='20'>no scaling data</text>")
    xs = [p.messages for p in points]
    ys = [max(p.p50_ms, 1e-3) for p in points]
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)

    def x(v: float) -> float:
        return left + pw * (math.log10(v) - x0) / (x1 - x0)

    def y(v: float) -> float:
        return top + ph * (1 - (math.log10(max(v, 1e-3)) - y0) / (y1 - y0))

    parts = [
        "<text x='10' y='18' font-size='14' font-weight='bold'>prepare() median time vs "
        "history length (log-log)</text>"
    ]
    for e in range(y0, y1 + 1):
        parts.append(
            f"<line x1='{left}' x2='{left + pw}' y1='{y(10**e):.1f}' y2='{y(10**e):.1f}' "
            f"stroke='#eee'/><text x='{left - 6}' y='{y(10**e) + 4:.1f}' text-anchor='end'>"
            f"{10**e:g} ms</text>"
        )
    for e in range(x0, x1 + 1):
        parts.append(
            f"<text x='{x(10**e):.1f}' y='{top + ph + 16}' text-anchor='middle'>{10**e:,}</text>"
        )
    parts.append(
        f"<text x='{left + pw / 2}' y='{height - 6}' text-anchor='middle'>messages of history"
        "</text>"
    )
    names = list(dict.fromkeys(p.strategy for p in points))
    for n, name in enumerate(names):
        mine = sorted((p for p in points if p.strategy == name), key=lambda p: p.messages)
        coords = " ".join(f"{x(p.messages):.1f},{y(p.p50_ms):.1f}" for p in mine)
        parts.append(
            f"<polyline fill='none' stroke='{color(name)}' stroke-width='2' points='{coords}'/>"
        )
        for p in mine:
            parts.append(
                f"<circle cx='{x(p.messages):.1f}' cy='{y(p.p50_ms):.1f}' r='3' "
                f"fill='{color(name)}'/>"
            )
        ly = top + 14 + 18 * n
        parts.append(
            f"<line x1='{left + pw + 12}' x2='{left + pw + 32}' y1='{ly - 4}' y2='{ly - 4}' "
            f"stroke='{color(name)}' stroke-width='3'/>"
            f"<text x='{left + pw + 38}' y='{ly}'>{escape(name)}</text>"
        )
    parts.append(
        f"<rect x='{left}' y='{top}' width='{pw}' height='{ph}' fill='none' stroke='#999'/>"
    )
    return _svg(width, height, "".join(parts))


def charts(report: BenchReport) -> list[str]:
    out = []
    synthetic = report.workloads("synthetic")
    real = report.workloads("real")
    if synthetic:
        first = synthetic[0]
        out.append(
            line_chart(f"Tokens sent per call: {first}", report.series[first], report.config.budget)
        )
        out.append(bar_chart(f"Cost per strategy: {first}", report.rows(first)))
    if real:
        largest = max(real, key=lambda w: report.rows(w)[0].turns)
        budget = report.config.real_budget or report.config.budget
        out.append(line_chart(f"Tokens sent per call: {largest}", report.series[largest], budget))
        out.append(
            bar_chart(f"Cost per strategy: all {len(real)} real sessions", report.aggregate("real"))
        )
    if report.scaling:
        out.append(scaling_chart(report.scaling))
    return out


def html_page(report: BenchReport) -> str:
    body = "\n".join(f"<figure>{svg}</figure>" for svg in charts(report))
    findings = "".join(f"<li>{escape(n)}</li>" for n in report.findings())
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<title>context-compact bench</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1000px}"
        "figure{margin:0 0 24px 0}</style></head><body>"
        f"<h1>context-compact bench</h1><p>budget {report.config.budget:,} tokens; "
        f"{escape(report.config.pricing.source)}; ran in {report.duration_s:.1f} s.</p>"
        f"{body}<h2>Findings</h2><ul>{findings or '<li>none</li>'}</ul></body></html>\n"
    )


def stacked_svg(report: BenchReport) -> str:
    svgs = charts(report)
    heights = [int(s.split("height='", 1)[1].split("'", 1)[0]) for s in svgs]
    total = sum(heights) or 20
    parts, offset = [], 0
    for svg, h in zip(svgs, heights, strict=True):
        inner = svg.replace("<svg ", f"<svg y='{offset}' ", 1)
        parts.append(inner)
        offset += h
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' width='960' height='{total}' "
        f"viewBox='0 0 960 {total}'>{''.join(parts)}</svg>\n"
    )


def write_chart(report: BenchReport, path: str | Path) -> Path:
    path = Path(path)
    text = stacked_svg(report) if path.suffix.lower() == ".svg" else html_page(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
