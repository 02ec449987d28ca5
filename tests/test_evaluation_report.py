import json
from html.parser import HTMLParser

import pytest
from rich.console import Console

from router.evaluation import Request, evaluate
from router.evaluation.report import print_table, to_html, to_markdown

REQUESTS = [
    Request("q1", "one", ("pdf",)),
    Request("q2", "two", ("xlsx", "<charts>")),
    Request("q3", "none", ()),
    Request("q4", "four", ("pdf",)),
]
GOOD = {"q1": [("pdf", 0.9)], "q2": [("xlsx", 0.8), ("<charts>", 0.7)], "q3": [("pdf", 0.1)], "q4": [("pdf", 0.7)]}
POOR = {"q1": [("docx", 0.7), ("pdf", 0.6)], "q2": [("pdf", 0.5)], "q3": [], "q4": [("docx", 0.9)]}


@pytest.fixture
def result():
    return evaluate(
        REQUESTS,
        {"baseline": lambda r: POOR[r.id], "default": lambda r: GOOD[r.id]},
        ks=(1, 3, 5),
        render="\n".join,
        catalogue=["pdf", "xlsx", "<charts>", "docx"],
        progress=False,
    )


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.starts = []
        self.svg_titles = {}
        self._svg = None
        self._title = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.starts.append((tag, attrs))
        if tag == "svg":
            self._svg = attrs.get("class")
            self.svg_titles[self._svg] = self.svg_titles.get(self._svg, [])
        self._title = tag == "title" and self._svg is not None

    def handle_endtag(self, tag):
        if tag == "svg":
            self._svg = None
        self._title = False

    def handle_data(self, data):
        if self._title:
            self.svg_titles[self._svg].append(data)


def test_html_is_self_contained_with_tables_and_both_charts(result):
    page = to_html(result)
    parser = Page()
    parser.feed(page)
    parser.close()
    tags = [tag for tag, _ in parser.starts]
    assert tags.count("table") == 4  # summary, comparisons, per-skill recall for each retriever
    assert set(parser.svg_titles) == {"chart line-chart", "chart heatmap"}
    assert parser.svg_titles["chart line-chart"][0] == "Recall@k"
    assert parser.svg_titles["chart heatmap"][0] == "baseline: gold skill (rows) vs wrong top-1 (columns)"
    assert tags.count("polyline") == 2  # one recall@k curve per retriever
    assert "http://" not in page and "https://" not in page
    assert not any(tag in ("script", "link", "img", "iframe") for tag in tags)
    assert not any("src" in attrs or "href" in attrs for _, attrs in parser.starts)
    assert "&lt;charts&gt;" in page and "<charts>" not in page


def test_html_accepts_the_saved_json(result):
    data = json.loads(json.dumps(result.to_json()))
    assert to_html(data) == to_html(result)


def test_reports_reject_other_json():
    with pytest.raises(ValueError, match="not an evaluation result of schema 'skill-router.eval/1': got schema None"):
        to_markdown({"requests": 3})


def test_markdown_summary_rows(result):
    text = to_markdown(result)
    lines = text.splitlines()
    header = "| retriever | hit@1 | R@3 | R@5 | all@5 | nDCG@5 | MRR | abstain P/R | tokens (saving) | p50 ms |"
    assert header in lines
    default_row = next(line for line in lines if line.startswith("| default |"))
    cells = [c.strip() for c in default_row.strip("|").split("|")]
    assert cells[1:7] == ["1.000 [1.000, 1.000]", "1.000", "1.000 [1.000, 1.000]", "1.000", "1.000",
                          "1.000 [1.000, 1.000]"]
    assert cells[7] == "1.00/1.00 @ 0.7"
    assert "## Paired comparisons" in lines
    assert "| baseline | default | hit@1 | +1.0000 | [+1.0000, +1.0000] | 0.0001 | 3/0/0 |" in lines
    assert "## Top confusions: baseline" in lines
    assert "| pdf | docx | 2 |" in lines


def test_terminal_table_lists_every_retriever(result):
    console = Console(record=True, width=150)
    print_table(result, console)
    text = console.export_text()
    assert "Routing evaluation" in text
    assert "baseline" in text and "default" in text
    assert "[1.000, 1.000]" in text  # the headline hit@1 interval


def test_html_leads_with_the_router_as_configured_and_collapses_the_baselines(result):
    page = to_html(result)
    summary = page.index('<section class="summary"><h2>The router as configured: <code>default</code></h2>')
    assert summary < page.index("<h2>Every retriever</h2>") < page.index("<h2>Recall at k</h2>")
    assert page.index("<h2>default: confusions and per-skill recall</h2>") < page.index("<details><summary>baseline "
                                                                                       "<b>baseline</b>")
    assert page.count("<details>") == 1  # one baseline, collapsed; the router's own details are open
    data = result.to_json()
    default = next(r for r in data["retrievers"] if r["name"] == "default")
    low, high = default["ci"]["hit@1"]
    assert f"right skill first: <b>{default['metrics']['hit@1']:.3f}</b> [{low:.3f}, {high:.3f}]" in page
    assert "<th>vs baseline</th>" in page  # each baseline compared with the router


def test_confusion_heatmap_leaves_out_rows_and_columns_with_no_count():
    from router.evaluation.report import _confusion_heatmap

    many = [{"gold": f"g{i:02d}", "predicted": f"p{i:02d}", "count": 5} for i in range(12)]
    # g99's only confusion is with a column outside the 12 shown: its row would be all zeros
    svg = _confusion_heatmap("default", many + [{"gold": "g99", "predicted": "p99", "count": 1}])
    assert ">g00<title>" in svg and ">g99<title>" not in svg and ">p99<title>" not in svg
    assert svg.count("<rect") == 144
