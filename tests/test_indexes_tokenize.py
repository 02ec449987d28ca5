"""Tokenizer cases: identifiers, CJK bigrams, stop words, stemming, edge inputs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexes import tokenize
from indexes.tokenize import Tokenizer, light_stem, s_stem, split_identifier

RAW = Tokenizer(stopwords="none", stem="none")


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("getWeatherForecast", ["get", "weather", "forecast"]),
        ("HTTPServer", ["http", "server"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ("kebab-case-name", ["kebab", "case", "name"]),
        ("base64Encode", ["base", "64", "encode"]),
        ("IPv4 address", ["ipv", "4", "address"]),
        ("mp3 2024", ["mp", "3", "2024"]),
        ("don't", ["dont"]),
        ("the user's file", ["the", "user", "file"]),
        ("ＡＢＣ", ["abc"]),
    ],
)
def test_identifier_and_word_splitting(text: str, tokens: list[str]) -> None:
    assert RAW(text) == tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("今天天气", ["今天", "天天", "天气"]),
        ("中", ["中"]),
        ("查询天气 weather", ["查询", "询天", "天气", "weather"]),
        ("PDF文件", ["pdf", "文件"]),
        ("日本語テキスト", ["日本", "本語", "語テ", "テキ", "キス", "スト"]),
        ("한국어", ["한국", "국어"]),
    ],
)
def test_cjk_runs_become_bigrams(text: str, tokens: list[str]) -> None:
    assert RAW(text) == tokens


def test_chinese_request_shares_tokens_with_chinese_description() -> None:
    assert set(tokenize("帮我查询明天的天气")) & set(tokenize("查询城市天气预报"))


@pytest.mark.parametrize("text", ["", "   ", "---", "___", "!!! ???", "\n\t"])
def test_nothing_empty(text: str) -> None:
    assert tokenize(text) == []


def test_default_drops_english_stop_words_and_stems() -> None:
    assert tokenize("Can you help me find the latest papers?") == ["help", "find", "latest", "paper"]
    assert tokenize("creating") == tokenize("created") == tokenize("create") == ["creat"]


@pytest.mark.parametrize(
    ("word", "stem"),
    [("queries", "query"), ("files", "file"), ("tools", "tool"), ("status", "status"), ("class", "class"),
     ("is", "is"), ("toes", "toe")],
)
def test_s_stemmer(word: str, stem: str) -> None:
    assert s_stem(word) == stem


@pytest.mark.parametrize(
    ("word", "stem"),
    [("running", "run"), ("planned", "plan"), ("installing", "install"), ("processed", "process"),
     ("generating", "generat"), ("generate", "generat"), ("red", "red"), ("sing", "sing"), ("naïve", "naïve")],
)
def test_light_stemmer(word: str, stem: str) -> None:
    assert light_stem(word) == stem


def test_split_identifier_keeps_case_for_caller() -> None:
    assert split_identifier("parseJSONFile2") == ["parse", "JSON", "File", "2"]


def test_unknown_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown stemmer 'porter'"):
        Tokenizer(stem="porter")
    with pytest.raises(ValueError, match="unknown stop list 'french'"):
        Tokenizer(stopwords="french")


def test_round_trip_through_dict() -> None:
    tokenizer = Tokenizer(split_identifiers=False, stopwords="lucene", stem="s")
    assert Tokenizer.from_dict(tokenizer.to_dict()) == tokenizer


@given(st.text())
def test_tokens_are_nonempty_lowercase_and_stable(text: str) -> None:
    tokens = tokenize(text)
    assert all(token and token == token.lower() for token in tokens)
    assert tokenize(text) == tokens


def _split_by_the_rule(word: str) -> list[str]:
    """split_identifier's rule, character by character: a boundary before an upper-case letter after a lower-case
    one, between a digit and a non-digit, and before the last capital of an acronym a word follows."""
    kinds = ["D" if c.isdigit() else "U" if c.isupper() else "L" for c in word]
    parts, start = [], 0
    for i in range(1, len(word)):
        if (kinds[i - 1] == "L" and kinds[i] == "U") or (kinds[i - 1] == "D") != (kinds[i] == "D") \
                or (kinds[i - 1] == kinds[i] == "U" and kinds[i + 1:i + 3] == ["L", "L"]):
            parts.append(word[start:i])
            start = i
    return parts + [word[start:]]


def test_split_identifier_splits_every_word_by_the_rule_one_case_words_included() -> None:
    import random

    from indexes.tokenize import split_identifier

    alphabet = "aZ9ßÉéΣσǅ中ª²Ⅻ_" + "abcXYZ019"
    rng = random.Random(7)
    words = ["review", "PDF", "HTTPServer", "IPv4", "getWeatherForecast", "s00012", "straße", "ΣΊΣΥΦΟΣ", "中文",
             "ǅemal", "ªb", "x²", "Ⅻx"] + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
                                           for _ in range(5000)]
    for word in words:
        assert split_identifier(word) == _split_by_the_rule(word), word
