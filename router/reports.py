"""Report primitives shared by evaluation and overlap analysis: Markdown tables, self-contained HTML, inline SVG.

Everything here returns strings and escapes all text it is given. Pages open offline: CSS is inline, charts are
inline SVG, and nothing references a font, script, stylesheet or image elsewhere. The SVG fragments omit the
``xmlns`` attribute, which HTML5 does not need for inline SVG; they are meant to be embedded in a page from
:func:`html_page`, not saved as standalone ``.svg`` files.

Cells are formatted once, here: ``None`` is blank, a float shows four decimals, anything else is ``str()``.
"""

from __future__ import annotations

import html
import math
from typing import Mapping, Sequence

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
_CHAR_PX = 7.0  # approximate width of one 12px sans-serif character, for sizing label margins

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 72rem;
       padding: 0 1rem; color: #222; line-height: 1.4; }
h1, h2, h3 { font-weight: 600; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
svg.chart { display: block; margin: 0.5rem 0 1.5rem; font-family: sans-serif; font-size: 12px; }
svg.chart text { fill: #222; }
.note { color: #666; font-size: 0.85rem; }
section.summary { background: #f6f8fb; border: 1px solid #d5dde8; border-radius: 6px; padding: 0.5rem 1.2rem;
                  margin-bottom: 2rem; }
section.summary h2 { margin-top: 0.6rem; }
p.lead { font-size: 1.1rem; }
td.better { background: #e6f4ea; } td.worse { background: #fce8e6; } td.same { background: #f3f3f3; }
details { border: 1px solid #ddd; border-radius: 6px; padding: 0.4rem 0.8rem; margin: 0.6rem 0; }
details > summary { cursor: pointer; }
"""


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; ``|`` in cells is escaped and newlines become spaces.

    Raises ValueError when a row does not have one cell per header.
    """

    def md(value: object) -> str:
        return _cell(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")

    _check_widths(headers, rows)
    lines = ["| " + " | ".join(md(h) for h in headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def html_page(title: str, body_html: str) -> str:
    """A complete HTML5 page with inline CSS; ``title`` is escaped, ``body_html`` is inserted as is."""
    t = _esc(title)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{t}</title>\n"
        f"<style>{_CSS}</style>\n</head>\n<body>\n<h1>{t}</h1>\n{body_html}\n</body>\n</html>\n"
    )


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """An HTML table with escaped cells; numbers are right-aligned (``class="num"``)."""
    _check_widths(headers, rows)
    head = "".join(f"<th>{_esc(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for value in row:
            numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{_esc(_cell(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(body) + "\n</tbody>\n</table>\n"


def _check_widths(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    for i, row in enumerate(rows):
        if len(row) != len(headers):
            raise ValueError(f"table row {i} has {len(row)} cells for {len(headers)} headers: {list(row)!r}")


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (the 1-2-5 steps of Heckbert, Graphics Gems 1990)."""
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def svg_line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]], *, title: str, x_label: str, y_label: str
) -> str:
    """An inline SVG line chart, one polyline with point markers per series, and a legend.

    The y axis spans the data, padded by 10 % of its range and rounded out to a tick step (lines that differ
    by a few hundredths near 1.0 are told apart, not squashed into a 0-1 axis); fractions are never padded past
    [0, 1]. Each point carries a ``<title>`` tooltip with its exact value; legend names are shown whole.
    """
    longest = max((len(name) for name in series), default=0)
    right = int(max(170, 50 + _CHAR_PX * longest))
    width, height = 470 + right, 380
    left, top, bottom = 60, 40, 50
    plot_w, plot_h = width - left - right, height - top - bottom
    points = [p for values in series.values() for p in values]
    xs = [float(x) for x, _ in points] or [0.0, 1.0]
    ys = [float(y) for _, y in points] or [0.0, 1.0]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_lo, y_hi = _data_range(min(ys), max(ys), fraction=min(ys) >= 0 and max(ys) <= 1)

    def px(x: float) -> float:
        return left + (x - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return top + (1 - (y - y_lo) / (y_hi - y_lo)) * plot_h

    out = [
        f'<svg class="chart line-chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{_esc(title)}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="{width / 2 - right / 2:.1f}" y="20" text-anchor="middle" font-weight="600">{_esc(title)}</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
    ]
    distinct_x = sorted(set(xs))
    x_ticks = distinct_x if len(distinct_x) <= 12 else _nice_ticks(x_lo, x_hi)
    for x in x_ticks:
        out.append(f'<line x1="{px(x):.1f}" y1="{top + plot_h}" x2="{px(x):.1f}" y2="{top + plot_h + 4}" '
                   'stroke="#999"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + plot_h + 17}" text-anchor="middle">{_esc(f"{x:g}")}</text>')
    for y in _nice_ticks(y_lo, y_hi):
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + plot_w}" y2="{py(y):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{_esc(f"{y:g}")}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 10}" text-anchor="middle">{_esc(x_label)}</text>')
    out.append(f'<text transform="translate(16 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{_esc(y_label)}</text>")
    for i, (name, values) in enumerate(series.items()):
        colour = _PALETTE[i % len(_PALETTE)]
        pts = sorted((float(x), float(y)) for x, y in values)
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<g class="series"><polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{colour}">'
                       f"<title>{_esc(f'{name}: {x:g} → {y:.4f}')}</title></circle>")
        out.append("</g>")
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{left + plot_w + 15}" y1="{ly}" x2="{left + plot_w + 35}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="3"/>')
        out.append(f'<text x="{left + plot_w + 40}" y="{ly + 4}">{_esc(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _data_range(low: float, high: float, *, fraction: bool) -> tuple[float, float]:
    """An axis range around [low, high]: padded by 10 % of the span (0.05 for a flat line), widened to the tick
    step, and kept inside [0, 1] for fractions."""
    pad = (high - low) * 0.1 or (0.05 if fraction else abs(high) * 0.1 or 1.0)
    lo, hi = low - pad, high + pad
    ticks = _nice_ticks(lo, hi)
    step = ticks[1] - ticks[0] if len(ticks) > 1 else pad
    lo, hi = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
    if fraction:
        lo, hi = max(lo, 0.0), min(hi, 1.0)
    return round(lo, 10), round(hi, 10)


def svg_heatmap(
    row_labels: Sequence[str], col_labels: Sequence[str], values: Sequence[Sequence[float]], *, title: str
) -> str:
    """An inline SVG heatmap: cell shade grows with the value (white = the minimum, dark blue = the maximum).

    Raises ValueError when ``values`` is not ``len(row_labels)`` rows of ``len(col_labels)`` cells. Labels are
    shown whole (the margins grow with them); each label and cell also has a tooltip with the full text.
    """
    if len(values) != len(row_labels) or any(len(r) != len(col_labels) for r in values):
        raise ValueError(
            f"heatmap values must be {len(row_labels)} rows of {len(col_labels)} cells, "
            f"got rows of {[len(r) for r in values]}"
        )
    cell = 34
    rows = [str(label) for label in row_labels]
    cols = [str(label) for label in col_labels]
    left = 10 + _CHAR_PX * max((len(r) for r in rows), default=0)
    top = 40 + 0.72 * _CHAR_PX * max((len(c) for c in cols), default=0)  # labels slanted at 45 degrees
    width = max(left + cell * len(cols) + 20 + 0.72 * _CHAR_PX * len(cols[-1] if cols else ""),
                20 + _CHAR_PX * len(title))
    height = top + cell * len(rows) + 20
    flat = [float(v) for r in values for v in r]
    lo, hi = (min(flat), max(flat)) if flat else (0.0, 1.0)
    span = hi - lo or 1.0
    out = [
        f'<svg class="chart heatmap" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_esc(title)}">',
        f"<title>{_esc(title)}</title>",
        f'<text x="10" y="20" font-weight="600">{_esc(title)}</text>',
    ]
    for j, label in enumerate(cols):
        x = left + cell * j + cell / 2
        out.append(f'<text transform="translate({x:.1f} {top - 6:.1f}) rotate(-45)">{_esc(label)}'
                   f"<title>{_esc(label)}</title></text>")
    for i, label in enumerate(rows):
        y = top + cell * i + cell / 2
        out.append(f'<text x="{left - 6:.1f}" y="{y + 4:.1f}" text-anchor="end">{_esc(label)}'
                   f"<title>{_esc(label)}</title></text>")
        for j, raw in enumerate(values[i]):
            v = float(raw)
            shade = (v - lo) / span
            r, g, b = (round(255 + (c - 255) * shade) for c in (8, 48, 107))
            ink = "#fff" if shade > 0.55 else "#222"
            x = left + cell * j
            tip = f"{row_labels[i]} / {col_labels[j]}: {v:g}"
            out.append(
                f'<g><rect x="{x:.1f}" y="{top + cell * i:.1f}" width="{cell}" height="{cell}" '
                f'fill="rgb({r},{g},{b})" stroke="#fff"><title>{_esc(tip)}</title></rect>'
                f'<text x="{x + cell / 2:.1f}" y="{y + 4:.1f}" text-anchor="middle" fill="{ink}" '
                f'style="fill:{ink}">{_esc(f"{v:g}")}</text></g>'
            )
    out.append("</svg>")
    return "\n".join(out) + "\n"
