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


#: Which summary columns give way first on a narrow terminal (higher first; 0 never): hit@1, R@5 and MRR stay.
_DROP_ORDER = {"all@5": 9, "nDCG@5": 8, "R@10": 7, "R@3": 6, "p50 ms": 5, "abstain P/R": 4, "tokens (saving)": 3}


def render_table(result: EvalResult | Mapping[str, Any], width: int = 150):
    """A ``rich.table.Table`` with one row per retriever (headline metrics, abstention, tokens, latency).

    The headline hit@1 carries its 95 % interval on a second line; the whole table needs about 120 columns, and
    narrower it leaves out the least telling columns (see :data:`_DROP_ORDER`) rather than cut cells.
    """
    from rich import box
    from rich.markup import escape

    from router.tables import Column, fitted_table

    data = _data(result)
    headers, rows = _summary_rows(data, ci=())
    for r, row in zip(data["retrievers"], rows):
        if "hit@1" in r["ci"] and headers[1] == "hit@1":
            low, high = r["ci"]["hit@1"]
            row[1] += f"\n[{low:.3f}, {high:.3f}]"
    columns = [Column(h, justify="left" if i == 0 else "right", name=i == 0, drop=_DROP_ORDER.get(h, 0))
               for i, h in enumerate(headers)]
    return fitted_table(columns, [[escape(cell) for cell in row] for row in rows], width,
                        title="Routing evaluation", caption=_caption(data), box=box.SIMPLE_HEAD,
                        left_out_note="left out to fit the width: {} (see --markdown or --json)").table


def print_table(result: EvalResult | Mapping[str, Any], console=None) -> None:
    """Print :func:`render_table` to ``console`` (a ``rich.console.Console``), fitted to its width.

    The default console writes to stdout, at the terminal's width, or 150 columns when stdout is not a terminal
    (rich would otherwise assume 80 and leave columns out).
    """
    if console is None:
        from rich.console import Console

        console = Console()
        if not console.is_terminal:
            console = Console(width=150)
    console.print(render_table(result, console.width))


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
    """Gold skills (rows) against the skills wrongly ranked first (columns), the most confused first; a row or
    column with no count among those shown is left out rather than drawn empty."""
    gold_totals: dict[str, int] = {}
    predicted_totals: dict[str, int] = {}
    for c in confusions:
        gold_totals[c["gold"]] = gold_totals.get(c["gold"], 0) + c["count"]
        predicted_totals[c["predicted"]] = predicted_totals.get(c["predicted"], 0) + c["count"]
    cols = sorted(predicted_totals, key=lambda p: (-predicted_totals[p], p))[:_HEATMAP_SKILLS]
    counts = {(c["gold"], c["predicted"]): c["count"] for c in confusions}
    rows = [g for g in sorted(gold_totals, key=lambda g: (-gold_totals[g], g))
            if any(counts.get((g, p), 0) for p in cols)][:_HEATMAP_SKILLS]
    cols = [p for p in cols if any(counts.get((g, p), 0) for g in rows)]
    values = [[float(counts.get((g, p), 0)) for p in cols] for g in rows]
    return svg_heatmap(rows, cols, values, title=f"{name}: gold skill (rows) vs wrong top-1 (columns)")


_LEAD_METRICS = (("hit@1", "right skill first"), ("recall@5", "gold skills in the top 5"), ("mrr", "MRR"))


def _lead_name(data: Mapping[str, Any]) -> str | None:
    names = [r["name"] for r in data["retrievers"]]
    return "default" if "default" in names else (names[0] if names else None)


def _versus(data: Mapping[str, Any], lead: str) -> dict[str, dict[str, tuple[float, float, float, float]]]:
    """For each other retriever, each compared metric: (lead - other, low, high, p), whichever way it was run."""
    out: dict[str, dict[str, tuple[float, float, float, float]]] = {}
    for c in data["comparisons"]:
        if c["b"] == lead:
            out.setdefault(c["a"], {})[c["metric"]] = (c["mean_diff"], c["low"], c["high"], c["p_value"])
        elif c["a"] == lead:
            out.setdefault(c["b"], {})[c["metric"]] = (-c["mean_diff"], -c["high"], -c["low"], c["p_value"])
    return out


def _verdict(low: float, high: float) -> tuple[str, str]:
    if low > 0:
        return "better", "better"
    if high < 0:
        return "worse", "worse"
    return "same", "no clear difference"


def _summary_html(data: Mapping[str, Any]) -> str:
    """The answer first: how the router as configured does, with intervals, and against each baseline."""
    lead = _lead_name(data)
    if lead is None:
        return '<p class="note">no retriever was evaluated</p>'
    r = next(x for x in data["retrievers"] if x["name"] == lead)
    gold = data["requests"] - data["no_gold_requests"]
    parts = []
    for key, words in _LEAD_METRICS:
        value = r["metrics"].get(key)
        if value is None:
            continue
        interval = r["ci"].get(key)
        ci = f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""
        parts.append(f"{_escape(words)}: <b>{value:.3f}</b>{ci}")
    lines = [f'<section class="summary"><h2>The router as configured: <code>{_escape(lead)}</code></h2>',
             f'<p class="lead">On {gold} labelled requests ({data["requests"]} in all, {data["no_gold_requests"]} '
             f'that no skill should take): {"; ".join(parts)} <span class="note">(95% bootstrap CI)</span>.</p>']
    facts = []
    if r["tokens"]:
        t = r["tokens"]
        facts.append(f"A routed catalogue of {t['route_k']} skills costs {t['routed_mean']:,.0f} tokens instead of "
                     f"{t['full']:,} ({t['saving']:.0%} saved).")
    if r["abstention"]:
        a = r["abstention"]
        facts.append(f"Abstaining below {a['threshold']:.3g}: precision {a['precision']:.2f}, recall "
                     f"{a['recall']:.2f} on the requests no skill should take.")
    facts.append(f"Warm latency p50 {r['latency_ms']['p50']:.2f} ms, p95 {r['latency_ms']['p95']:.2f} ms.")
    lines.append(f'<p>{_escape(" ".join(facts))}</p>')
    versus = _versus(data, lead)
    if versus:
        metrics = [key for key, _ in _LEAD_METRICS if any(key in v for v in versus.values())]
        head = "".join(f"<th>{_escape(_HEADERS.get(m, m))}: {_escape(lead)} minus baseline [95% CI], p</th>"
                       for m in metrics)
        rows = []
        for other, diffs in versus.items():
            cells = []
            for m in metrics:
                if m not in diffs:
                    cells.append("<td></td>")
                    continue
                diff, low, high, p = diffs[m]
                css, word = _verdict(low, high)
                shown_p = f"p {p:.3f}" if p >= 0.001 else "p < 0.001"
                cells.append(f'<td class="{css}">{diff:+.3f} [{low:+.3f}, {high:+.3f}], {shown_p}: {word}</td>')
            rows.append(f"<tr><th>vs {_escape(other)}</th>{''.join(cells)}</tr>")
        lines.append(f"<table class=\"versus\"><thead><tr><th></th>{head}</tr></thead><tbody>"
                     + "".join(rows) + "</tbody></table>")
    worst = [s for s in r["per_skill"] if s["recall"] < 1][:5]
    if worst:
        items = ", ".join(f"{_escape(s['id'])} ({s['recall']:.2f} of {s['support']})" for s in worst)
        lines.append(f"<p>Skills it misses most (recall@{data['route_k']}): {items}.</p>")
    if r["confusions"]:
        items = ", ".join(f"{_escape(c['gold'])} &rarr; {_escape(c['predicted'])} ({c['count']})"
                          for c in r["confusions"][:5])
        lines.append(f"<p>Most frequent wrong first choices (gold &rarr; chosen): {items}.</p>")
    lines.append("</section>")
    return "\n".join(lines)


_HEADERS = {"hit@1": "hit@1", "recall@5": "recall@5", "mrr": "MRR"}


def _retriever_html(data: Mapping[str, Any], r: Mapping[str, Any]) -> str:
    body = []
    if r["confusions"]:
        body.append(_confusion_heatmap(r["name"], r["confusions"]))
    per_skill = r["per_skill"]
    if per_skill:
        missed = [s for s in per_skill if s["recall"] < 1]
        perfect = len(per_skill) - len(missed)
        shown = missed[:_PER_SKILL_ROWS]
        body.append(f'<h3>Per-skill recall@{data["route_k"]}</h3><p class="note">the {len(shown)} skills below '
                    f"1.0, worst first; the other {perfect} of {len(per_skill)} skills have recall 1.0</p>")
        if shown:
            body.append(html_table(["skill", "requests", "recall"],
                                   [[s["id"], s["support"], s["recall"]] for s in shown]))
    return "\n".join(body)


def to_html(result: EvalResult | Mapping[str, Any]) -> str:
    """A self-contained HTML report (inline CSS and SVG, no external reference) that leads with the answer: how
    the router as configured (``default``) does, with intervals and against each baseline; then the summary of
    every retriever, the paired comparisons, recall@k curves, and the router's confusions and per-skill recall;
    each baseline's details are collapsed at the end."""
    data = _data(result)
    lead = _lead_name(data)
    body = [_summary_html(data), "<h2>Every retriever</h2>", f'<p class="note">{_caption_html(data)}</p>',
            html_table(*_summary_rows(data))]
    if data["comparisons"]:
        body += ["<h2>Paired comparisons</h2>", html_table(*_comparison_rows(data))]
    body += ["<h2>Recall at k</h2>", _recall_curves(data)]
    for r in data["retrievers"]:
        if r["name"] == lead:
            body += [f"<h2>{_escape(r['name'])}: confusions and per-skill recall</h2>", _retriever_html(data, r)]
    for r in data["retrievers"]:
        if r["name"] != lead:
            m = r["metrics"]
            numbers = ", ".join(f"{_HEADERS[k]} {m[k]:.3f}" for k in _HEADERS if m.get(k) is not None)
            body.append(f"<details><summary>baseline <b>{_escape(r['name'])}</b> ({numbers}): confusions and "
                        f"per-skill recall</summary>\n{_retriever_html(data, r)}</details>")
    return html_page("Routing evaluation", "\n".join(body))



def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def _caption_html(data: Mapping[str, Any]) -> str:
    return _escape(_caption(data))
