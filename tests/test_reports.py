import re
from html.parser import HTMLParser

import pytest

from router.reports import html_page, html_table, markdown_table, svg_heatmap, svg_line_chart


class Tags(HTMLParser):
    """Collects (tag, attrs) of every start tag and the text of each <title>."""

    def __init__(self):
        super().__init__()
        self.tags = []
        self.titles = []
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.titles.append(data)


def parse(text):
    parser = Tags()
    parser.feed(text)
    parser.close()
    return parser


def test_markdown_table_exact():
    text = markdown_table(["name", "score", "n"], [["bm25", 0.5, 3], ["a|b", None, "x\ny"]])
    assert text == (
        "| name | score | n |\n"
        "|---|---|---|\n"
        "| bm25 | 0.5000 | 3 |\n"
        "| a\\|b |  | x y |\n"
    )


def test_tables_reject_ragged_rows():
    with pytest.raises(ValueError, match=r"table row 0 has 1 cells for 2 headers: \['a'\]"):
        markdown_table(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="table row 1 has 3 cells"):
        html_table(["a", "b"], [["a", 1], [1, 2, 3]])


def test_html_table_escapes_and_right_aligns_numbers():
    text = html_table(["<skill>", "recall"], [["<b>x</b> & y", 0.25], ["z", True]])
    assert "<th>&lt;skill&gt;</th>" in text
    assert "<td>&lt;b&gt;x&lt;/b&gt; &amp; y</td>" in text
    assert '<td class="num">0.2500</td>' in text
    assert "<td>True</td>" in text
    assert "<b>" not in text


def test_html_page_is_self_contained_and_escapes_the_title():
    page = html_page("R&D <report>", "<p>body</p>")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>R&amp;D &lt;report&gt;</title>" in page
    assert "<p>body</p>" in page
    assert "http://" not in page and "https://" not in page
    assert "<style>" in page and "<link" not in page and "<script" not in page


def test_svg_line_chart_has_title_class_and_one_polyline_per_series():
    svg = svg_line_chart(
        {"bm25 <lex>": [(1, 0.3), (5, 0.5)], "dense": [(5, 0.8), (1, 0.6)]},
        title="Recall & k",
        x_label="k",
        y_label="recall",
    )
    doc = parse(svg)
    assert doc.tags[0] == ("svg", doc.tags[0][1])
    assert doc.tags[0][1]["class"] == "chart line-chart"
    assert doc.titles[0] == "Recall & k"
    assert [t for t, _ in doc.tags].count("polyline") == 2
    assert [t for t, _ in doc.tags].count("circle") == 4
    assert "bm25 &lt;lex&gt;" in svg and "<lex>" not in svg
    assert "http" not in svg


def test_svg_line_chart_maps_fractions_onto_the_unit_axis():
    # plot area: x from 60 to 470 (width 410), y from 40 (value 1) to 330 (value 0)
    svg = svg_line_chart({"s": [(1, 0.0), (3, 1.0)]}, title="t", x_label="x", y_label="y")
    assert 'points="60.0,330.0 470.0,40.0"' in svg


def test_svg_heatmap_cells_and_shading():
    svg = svg_heatmap(["pdf", "<xlsx>"], ["docx", "csv", "pptx"], [[0, 2, 4], [1, 0, 0]], title="Confusions")
    doc = parse(svg)
    assert doc.tags[0][1]["class"] == "chart heatmap"
    assert doc.titles[0] == "Confusions"
    rects = [attrs for tag, attrs in doc.tags if tag == "rect"]
    assert len(rects) == 6
    assert rects[0]["fill"] == "rgb(255,255,255)"  # the minimum (0) is white
    assert rects[2]["fill"] == "rgb(8,48,107)"  # the maximum (4) is the darkest blue
    assert "pdf / pptx: 4" in doc.titles
    assert "&lt;xlsx&gt;" in svg and "<xlsx>" not in svg


def test_svg_heatmap_rejects_a_misshapen_matrix():
    with pytest.raises(ValueError, match=r"heatmap values must be 2 rows of 2 cells, got rows of \[2, 1\]"):
        svg_heatmap(["a", "b"], ["c", "d"], [[1, 2], [3]], title="t")


def test_svg_line_chart_scales_its_axis_to_the_data():
    from router.reports import _data_range

    assert _data_range(0.88, 0.99, fraction=True) == (0.85, 1.0)  # padded by 0.011, out to steps of 0.05
    assert _data_range(0.5, 0.5, fraction=True) == (0.45, 0.55)  # a flat line: 0.05 either side
    assert _data_range(10.0, 30.0, fraction=False) == (5.0, 35.0)
    svg = svg_line_chart({"default": [(1, 0.88), (5, 0.99)], "bm25": [(1, 0.78), (5, 0.92)]}, title="t",
                         x_label="x", y_label="y")
    ticks = re.findall(r'text-anchor="end">([^<]*)<', svg)
    assert ticks == ["0.7", "0.8", "0.9", "1"]  # 0.78 to 0.99, padded and out to steps of 0.1: not 0 to 1


def test_svg_line_chart_and_heatmap_show_long_names_whole():
    name = "performance-testing-review-multi-agent-review"
    chart = svg_line_chart({name: [(1, 0.5), (3, 0.7)]}, title="t", x_label="x", y_label="y")
    assert f">{name}</text>" in chart
    heatmap = svg_heatmap([name], ["x"], [[1.0]], title="t")
    assert f">{name}<title>{name}</title></text>" in heatmap
