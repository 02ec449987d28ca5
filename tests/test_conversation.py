"""The one rule for a conversation's text, as the router and the labelled-requests loader both apply it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from router.conversation import Conversation, conversation_text
from router.errors import ConfigError
from router.evaluation import load_requests

PARTS = [{"role": "user", "content": [{"type": "text", "text": "will it rain"}, {"text": "in Lyon"},
                                      {"type": "image", "source": {}}, {"type": "text", "text": 3}]}]


def test_parts_join_with_a_newline_and_untyped_text_parts_count() -> None:
    assert conversation_text(PARTS) == Conversation("will it rain\nin Lyon", "")


def test_last_non_blank_user_turn_is_the_request_and_earlier_ones_the_context() -> None:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "clean my CSV"},
                {"role": "assistant", "content": "done"}, {"role": "user", "content": "  will it rain?  "},
                {"role": "user", "content": [{"type": "image", "source": {}}]}, {"role": "user", "content": " "}]
    assert conversation_text(messages) == Conversation("will it rain?", "clean my CSV")


@pytest.mark.parametrize("messages", [[], [{"role": "assistant", "content": "hi"}],
                                      [{"role": "user", "content": "  "}], [{"role": "user", "content": None}]])
def test_no_user_text_is_a_config_error(messages) -> None:
    with pytest.raises(ConfigError, match="no user turn with text"):
        conversation_text(messages)


@pytest.mark.parametrize("bad", ["just a string", [{"role": "user", "content": "a"}, "not a message"]])
def test_what_is_not_a_list_of_messages_is_named(bad) -> None:
    with pytest.raises(ConfigError, match="conversation is a list of messages|every message must be an object"):
        conversation_text(bad)


def test_labels_route_a_conversation_on_the_same_text(tmp_path: Path) -> None:
    rows = [{"id": "c1", "messages": PARTS, "gold": []},
            {"id": "c2", "messages": [{"role": "user", "content": "first"}, {"role": "user", "content": ""}],
             "gold": []}]
    path = tmp_path / "labels.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    requests = load_requests(path)
    assert [r.query for r in requests] == ["will it rain\nin Lyon", "first"]
