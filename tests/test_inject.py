"""Injecting the catalogue block into chat messages is idempotent (the genkit middleware's rule)."""

from __future__ import annotations

import copy

import pytest

from router.inject import MARKER, block_part, inject, is_block_part, strip_markers

BLOCK = "<skills>\nHere are the available skills:\n - a\n</skills>"
NEWER = "<skills>\nHere are the available skills:\n - a\n - b\n</skills>"
MARKED = {"type": "text", "text": BLOCK, "metadata": {"skills-instructions": True}}


def blocks(messages) -> list[tuple[int, int, str]]:
    """(message index, part index, text) of every marked part."""
    return [(i, j, part["text"]) for i, m in enumerate(messages) if isinstance(m.get("content"), list)
            for j, part in enumerate(m["content"]) if is_block_part(part)]


def test_the_marker_part():
    assert MARKER == "skills-instructions"
    assert block_part(BLOCK) == MARKED


def test_openai_string_system_content_gets_the_block_appended():
    messages = [{"role": "system", "content": "You are helpful."}, {"role": "user", "content": "hi"}]
    assert inject(messages, BLOCK) == [
        {"role": "system", "content": [{"type": "text", "text": "You are helpful."}, MARKED]},
        {"role": "user", "content": "hi"},
    ]


def test_empty_string_system_content_holds_only_the_block():
    assert inject([{"role": "system", "content": ""}], BLOCK) == [{"role": "system", "content": [MARKED]}]


def test_parts_system_content_gets_the_block_appended_to_the_first_system_message():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "system", "content": [{"type": "text", "text": "first"}]},
        {"role": "system", "content": [{"type": "text", "text": "second"}]},
    ]
    assert inject(messages, BLOCK) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "system", "content": [{"type": "text", "text": "first"}, MARKED]},
        {"role": "system", "content": [{"type": "text", "text": "second"}]},
    ]


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param([{"role": "user", "content": "hi"}], id="openai-string"),
        pytest.param([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                      {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}], id="anthropic-parts"),
        pytest.param([], id="empty-conversation"),
    ],
)
def test_no_system_message_puts_a_new_one_first(messages):
    out = inject(messages, BLOCK)
    assert out == [{"role": "system", "content": [MARKED]}] + messages


@pytest.mark.parametrize("times", [1, 2, 5])
@pytest.mark.parametrize(
    "conversation",
    [
        pytest.param([{"role": "system", "content": "sys"}, {"role": "user", "content": "q"}], id="openai"),
        pytest.param([{"role": "user", "content": [{"type": "text", "text": "q"}]}], id="anthropic-no-system"),
    ],
)
def test_replaying_leaves_exactly_one_block(conversation, times):
    messages = conversation
    for _ in range(times):
        messages = inject(messages, BLOCK)
        messages = messages + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "again"}]
    assert blocks(messages) == [(0, len(messages[0]["content"]) - 1, BLOCK)]
    assert sum(m["role"] == "system" for m in messages) == 1


def test_a_changed_block_replaces_the_old_one_in_place():
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "before"}, MARKED, {"type": "text", "text": "after"}]},
        {"role": "user", "content": "q"},
    ]
    out = inject(messages, NEWER)
    assert out[0]["content"] == [{"type": "text", "text": "before"}, block_part(NEWER),
                                 {"type": "text", "text": "after"}]
    assert out[1] == {"role": "user", "content": "q"}


def test_a_marked_part_outside_the_system_message_is_replaced_where_it_is():
    messages = [{"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "q"}, MARKED]}]
    out = inject(messages, NEWER)
    assert out == [{"role": "system", "content": "sys"},
                   {"role": "user", "content": [{"type": "text", "text": "q"}, block_part(NEWER)]}]


def test_an_equal_block_is_left_alone():
    part = dict(MARKED, metadata={"skills-instructions": True, "cache": "keep"})
    messages = [{"role": "system", "content": [part]}]
    assert inject(messages, BLOCK) == messages


def test_extra_marked_parts_are_dropped_so_one_remains():
    messages = [{"role": "system", "content": [MARKED]}, {"role": "user", "content": [MARKED]}]
    out = inject(messages, BLOCK)
    assert blocks(out) == [(0, 0, BLOCK)]
    assert out[1] == {"role": "user", "content": []}


def test_inputs_are_not_mutated():
    messages = [{"role": "system", "content": [{"type": "text", "text": "s"}, copy.deepcopy(MARKED)]},
                {"role": "user", "content": "q"}]
    snapshot = copy.deepcopy(messages)
    out = inject(messages, NEWER)
    assert messages == snapshot
    out[0]["content"].append({"type": "text", "text": "later"})
    assert messages == snapshot
    string_system = [{"role": "system", "content": "s"}]
    inject(string_system, BLOCK)
    assert string_system == [{"role": "system", "content": "s"}]


def test_empty_block_removes_a_stale_block_and_injects_nothing():
    messages = [{"role": "system", "content": [{"type": "text", "text": "s"}, MARKED]},
                {"role": "user", "content": "q"}]
    assert inject(messages, "") == [{"role": "system", "content": [{"type": "text", "text": "s"}]},
                                    {"role": "user", "content": "q"}]
    assert inject([{"role": "user", "content": "q"}], "") == [{"role": "user", "content": "q"}]


def test_unmarked_or_false_marked_parts_are_not_blocks():
    assert not is_block_part({"type": "text", "text": BLOCK})
    assert not is_block_part({"type": "text", "text": BLOCK, "metadata": {"skills-instructions": False}})
    assert not is_block_part("text")
    assert is_block_part(MARKED)


def test_strip_markers_removes_only_the_marker_metadata():
    messages = inject([{"role": "system", "content": "s"}], BLOCK)
    assert strip_markers(messages) == [{"role": "system", "content": [{"type": "text", "text": "s"},
                                                                       {"type": "text", "text": BLOCK}]}]
    assert blocks(messages) == [(0, 1, BLOCK)]   # the input keeps its marker
