"""Present an evaluation: a terminal table (rich), Markdown, and a self-contained HTML page with charts.

Every function takes an :class:`~router.evaluation.runner.EvalResult` or its ``to_json()`` dict (for instance read
back from a saved JSON file), and reads only the documented ``skill-router.eval/1`` schema.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from router.evaluation.runner import HEADLINE, SCHEMA, EvalResult
from router.reports import html_page, html_table, markdown_table, svg_heatmap, svg_line_chart

_HEATMAP_SKILLS = 12
_PER_SKILL_ROWS = 50


def _data(result: EvalResult | Mapping[str, Any]) -> Mapping[str, Any]:
    data = result.to_json() if isinstance(result, EvalResult) else result
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not an evaluation result of schema {SCHEMA!r}: got schema {data.get('schema')!r}")
    return data


def _columns(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(header, metric key) for the summary table, keeping only metrics that were computed."""
    wanted = [
        ("hit@1", "hit@1"), ("R@3", "recall@3"), ("R@5", "recall@5"), ("R@10", "recall@10"),
        ("all@5", "all@5"), ("nDCG@5", "ndcg@5"), ("MRR", "mrr"),
    ]
    present = data["retrievers"][0]["metrics"] if data["retrievers"] else {}
    return [(header, key) for header, key in wanted if key in present]


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _summary_rows(
    data: Mapping[str, Any], ci: tuple[str, ...] = HEADLINE, sep: str = " "
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the summary; metrics named in ``ci`` get their interval after ``sep``."""
    columns = _columns(data)
    headers = ["retriever"] + [h for h, _ in columns] + ["abstain P/R", "tokens (saving)", "p50 ms"]
    rows = []
    for r in data["retrievers"]:
        row = [r["name"]]
        for _, key in columns:
            cell = _fmt(r["metrics"][key])
            if key in ci and key in r["ci"]:
                low, high = r["ci"][key]
                cell += f"{sep}[{low:.3f}, {high:.3f}]"
            row.append(cell)
        a = r["abstention"]
        row.append(f"{a['precision']:.2f}/{a['recall']:.2f} @ {a['threshold']:.3g}" if a else "-")
        t = r["tokens"]
        row.append(f"{t['routed_mean']:.0f}/{t['full']} ({t['saving']:.0%})" if t else "-")
        row.append(f"{r['latency_ms']['p50']:.2f}")
        rows.append(row)
    return headers, rows


def _caption(data: Mapping[str, Any]) -> str:
    text = (
        f"{data['requests']} requests ({data['no_gold_requests']} with no gold skill); "
        "metrics over requests with gold; [95% bootstrap CI]"
    )
    if data.get("tokenizer"):
        text += f"; tokens: {data['tokenizer']}, top {data['route_k']} vs the full catalogue"
    return text


def render_table(result: EvalResult | Mapping[str, Any]):
    """A ``rich.table.Table`` with one row per retriever (headline metrics, abstention, tokens, latency).

    The headline hit@1 carries its 95 % interval on a second line; the table needs about 120 columns.
    """
    from rich import box
    from rich.table import Table

    data = _data(result)
    headers, rows = _summary_rows(data, ci=())
    table = Table(title="Routing evaluation", caption=_caption(data), box=box.SIMPLE_HEAD)
    for i, header in enumerate(headers):
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True)
    for r, row in zip(data["retrievers"], rows):
        if "hit@1" in r["ci"] and headers[1] == "hit@1":
            low, high = r["ci"]["hit@1"]
            row[1] += f"\n[{low:.3f}, {high:.3f}]"
        table.add_row(*row)
    return table


def print_table(result: EvalResult | Mapping[str, Any], console=None) -> None:
    """Print :func:`render_table` to ``console`` (a ``rich.console.Console``).

    The default console writes to stdout, at the terminal's width, or 150 columns when stdout is not a terminal
    (rich would otherwise assume 80 and cut cells).
    """
    if console is None:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:
            console = Console(width=150)
    console.print(render_table(result))


def _comparison_rows(data: Mapping[str, Any]) -> tuple[list[str], list[list[object]]]:
    headers = ["a", "b", "metric", "b - a", "95% CI", "p", "wins/losses/ties"]
    rows: list[list[object]] = [
        [c["a"], c["b"], c["metric"], f"{c['mean_diff']:+.4f}", f"[{c['low']:+.4f}, {c['high']:+.4f}]",
         f"{c['p_value']:.4f}", f"{c['wins']}/{c['losses']}/{c['ties']}"]
        for c in data["comparisons"]
    ]
    return headers, rows


def to_markdown(result: EvalResult | Mapping[str, Any]) -> str:
    """A Markdown report: the summary table, paired comparisons and each retriever's top confusions."""
    data = _data(result)
    parts = ["# Routing evaluation\n", _caption(data) + "\n", markdown_table(*_summary_rows(data))]
    if data["comparisons"]:
        parts += ["## Paired comparisons\n", markdown_table(*_comparison_rows(data))]
    for r in data["retrievers"]:
        if r["confusions"]:
            parts.append(f"## Top confusions: {r['name']}\n")
            parts.append(markdown_table(
                ["gold", "predicted top-1", "count"],
                [[c["gold"], c["predicted"], c["count"]] for c in r["confusions"][:10]],
            ))
    return "\n".join(parts)


def _recall_curves(data: Mapping[str, Any]) -> str:
    series = {
        r["name"]: [(k, r["metrics"][f"recall@{k}"]) for k in data["ks"] if r["metrics"][f"recall@{k}"] is not None]
        for r in data["retrievers"]
    }
    return svg_line_chart(series, title="Recall@k", x_label="k (skills routed)", y_label="recall@k")


def _confusion_heatmap(name: str, confusions: list[Mapping[str, Any]]) -> str:
    gold_totals: dict[str, int] = {}
    predicted_totals: dict[str, int] = {}
    for c in confusions:
        gold_totals[c["gold"]] = gold_totals.get(c["gold"], 0) + c["count"]
        predicted_totals[c["predicted"]] = predicted_totals.get(c["predicted"], 0) + c["count"]
    rows = sorted(gold_totals, key=lambda g: (-gold_totals[g], g))[:_HEATMAP_SKILLS]
    cols = sorted(predicted_totals, key=lambda p: (-predicted_totals[p], p))[:_HEATMAP_SKILLS]
    counts = {(c["gold"], c["predicted"]): c["count"] for c in confusions}
    values = [[float(counts.get((g, p), 0)) for p in cols] for g in rows]
    return svg_heatmap(rows, cols, values, title=f"{name}: gold skill (rows) vs wrong top-1 (columns)")


def to_html(result: EvalResult | Mapping[str, Any]) -> str:
    """A self-contained HTML report (inline CSS and SVG, no external reference): summary, comparisons, recall@k
    curves, a confusion heatmap and a per-skill recall table for each retriever."""
    data = _data(result)
    body = [f'<p class="note">{_caption_html(data)}</p>', html_table(*_summary_rows(data))]
    if data["comparisons"]:
        body += ["<h2>Paired comparisons</h2>", html_table(*_comparison_rows(data))]
    body += ["<h2>Recall at k</h2>", _recall_curves(data)]
    for r in data["retrievers"]:
        body.append(f"<h2>{_escape(r['name'])}</h2>")
        if r["confusions"]:
            body.append(_confusion_heatmap(r["name"], r["confusions"]))
        per_skill = r["per_skill"]
        if per_skill:
            shown = per_skill[:_PER_SKILL_ROWS]
            body.append(
                f'<h3>Per-skill recall@{data["route_k"]}</h3><p class="note">worst first; '
                f"{len(shown)} of {len(per_skill)} skills</p>"
            )
            rows = [[s["id"], s["support"], s["recall"]] for s in shown]
            body.append(html_table(["skill", "requests", "recall"], rows))
    return html_page("Routing evaluation", "\n".join(body))



def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def _caption_html(data: Mapping[str, Any]) -> str:
    return _escape(_caption(data))
