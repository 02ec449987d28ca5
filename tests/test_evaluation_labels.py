import json
import re

import pytest

from router.errors import CatalogError
from router.evaluation.labels import LabelsError, Request, load_requests


def write_jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_loads_jsonl_in_order_skipping_blank_lines(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "q1", "query": "convert a pdf", "gold": ["pdf"]},
        "",
        {"id": "q2", "query": "weather?", "gold": []},
        {"id": "q3", "query": "chart it", "gold": ["xlsx", "charts", "xlsx"]},
    ])
    assert load_requests(path) == [
        Request("q1", "convert a pdf", ("pdf",)),
        Request("q2", "weather?", ()),
        Request("q3", "chart it", ("xlsx", "charts")),  # a repeated gold id is kept once
    ]


def test_conversation_routes_on_the_last_user_turn(tmp_path):
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "make a deck"}, {"type": "image"}]},
        {"role": "assistant", "content": "sure"},
    ]
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "c1", "messages": messages, "gold": ["pptx"]}])
    (request,) = load_requests(path)
    assert request.query == "make a deck"
    assert request.messages == tuple(messages)
    assert hash(request) == hash(Request("c1", "make a deck", ("pptx",)))  # messages are not hashed


def test_loads_yaml_list(tmp_path):
    path = tmp_path / "q.yaml"
    path.write_text("- id: q1\n  query: make a chart\n  gold: [xlsx]\n- id: q2\n  query: hi\n  gold: []\n")
    assert load_requests(path) == [Request("q1", "make a chart", ("xlsx",)), Request("q2", "hi", ())]


def test_yaml_errors_carry_the_item_line(tmp_path):
    path = tmp_path / "q.yml"
    path.write_text("- id: q1\n  query: a\n  gold: [x]\n- id: q2\n  query: ''\n  gold: []\n")
    with pytest.raises(LabelsError, match=re.escape(f"{path}:4: request 'q2' has an empty query")):
        load_requests(path)


def test_missing_gold_is_an_error_unless_allowed(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": "q1", "query": "a"}])
    with pytest.raises(LabelsError) as err:
        load_requests(path)
    assert str(err.value) == f"{path}:1: request 'q1' has no \"gold\"; label it ([] when no skill applies)"
    assert load_requests(path, require_gold=False) == [Request("q1", "a", None)]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (['{"id": "q1", "query": "a", "gold": []}', '{"id": "q2", "query": '],
         ":2: not valid JSON (Expecting value at column 23)"),
        ([[1, 2]], ':1: expected an object with "id", "query" and "gold", got [1, 2]'),
        ([{"query": "a", "gold": []}], ':1: "id" must be a non-empty string, got None'),
        ([{"id": 7, "query": "a", "gold": []}], ':1: "id" must be a non-empty string, got 7'),
        ([{"id": "q1", "gold": []}], ":1: request 'q1' has neither \"query\" nor \"messages\""),
        ([{"id": "q1", "query": "  ", "gold": []}], ":1: request 'q1' has an empty query"),
        ([{"id": "q1", "query": 3, "gold": []}], ":1: request 'q1': \"query\" must be a string, got 3"),
        ([{"id": "q1", "query": "a", "gold": "pdf"}],
         ":1: request 'q1': \"gold\" must be a list of skill ids, got 'pdf'"),
        ([{"id": "q1", "query": "a", "gold": ["pdf", 3]}],
         ":1: request 'q1': \"gold\" must be a list of skill ids, got ['pdf', 3]"),
        ([{"id": "q1", "messages": [{"role": "assistant", "content": "hi"}], "gold": []}],
         ":1: request 'q1': the conversation has no user turn with text: nothing to route"),
        ([{"id": "q1", "messages": [{"text": "hi"}], "gold": []}],
         ":1: request 'q1': message 0 must have \"role\" and \"content\", got {'text': 'hi'}"),
        ([{"id": "q1", "messages": [], "gold": []}], ":1: request 'q1': \"messages\" must be a non-empty list, got []"),
    ],
)
def test_row_errors_name_file_line_and_value(tmp_path, rows, message):
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    with pytest.raises(LabelsError) as err:
        load_requests(path)
    assert str(err.value) == f"{path}{message}"


def test_duplicate_ids_are_all_listed(tmp_path):
    path = write_jsonl(tmp_path / "q.jsonl", [
        {"id": "a", "query": "x", "gold": []},
        {"id": "b", "query": "x", "gold": []},
        {"id": "a", "query": "x", "gold": []},
        {"id": "b", "query": "x", "gold": []},
        {"id": "a", "query": "x", "gold": []},
    ])
    with pytest.raises(LabelsError) as err:
        load_requests(path)
    assert str(err.value) == f"{path}:3: duplicate request ids: 'a' (lines 1, 3, 5), 'b' (lines 2, 4)"


def test_unknown_gold_ids_list_ten_and_count_the_rest(tmp_path):
    rows = [{"id": f"q{i}", "query": "x", "gold": ["pdf", f"s{i:02d}"]} for i in range(12)]
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    with pytest.raises(LabelsError) as err:
        load_requests(path, known_ids={"pdf"})
    listed = ", ".join(f"'s{i:02d}' (line {i + 1})" for i in range(10))
    assert str(err.value) == (
        f"{path}:1: 12 gold ids are not in the catalogue: {listed} and 2 more; "
        "fix the labels or evaluate against the catalogue they were written for"
    )
    assert load_requests(path, known_ids={"pdf"} | {f"s{i:02d}" for i in range(12)})[0].gold == ("pdf", "s00")


def test_unreadable_and_empty_files(tmp_path):
    missing = tmp_path / "missing.jsonl"
    expected = f"labelled requests '{missing}' cannot be read: No such file or directory"
    with pytest.raises(LabelsError, match=f"^{re.escape(expected)}$"):
        load_requests(missing)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(LabelsError) as err:
        load_requests(empty)
    assert str(err.value) == f"{empty}: no labelled requests found; expected one JSON object per line"


def test_invalid_yaml_and_non_list_yaml(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- id: q1\n  query: [unclosed\n")
    with pytest.raises(LabelsError, match=re.escape(f"{bad}:3: invalid YAML:")):
        load_requests(bad)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("id: q1\n")
    with pytest.raises(LabelsError) as err:
        load_requests(mapping)
    assert str(err.value) == f"{mapping}:1: a YAML labels file must be a list of requests, got dict"


def test_labels_error_is_a_catalog_error_and_a_value_error():
    assert issubclass(LabelsError, CatalogError)
    assert issubclass(LabelsError, ValueError)
