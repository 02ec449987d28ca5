"""Description-overlap analysis: scores, flagged pairs, words, clusters, confusions and the three renderings."""

from __future__ import annotations

import html
import json
import math
from html.parser import HTMLParser

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.errors import ConfigError
from router.overlap import OverlapReport, analyse_overlap, fails_above
from router.overlap import terms
from router.skill import Skill


class FakeEncoder:
    """Maps each text to a fixed vector: lets a pure test choose every cosine exactly."""

    model_id = "fake"

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def encode(self, texts):
        return np.array([self.vectors[t] for t in texts], dtype=np.float32)


def skill(name: str, description: str, body: str = "", path: str = "") -> Skill:
    return Skill(name=name, description=description, body=body, path=path)


def by_names(report: OverlapReport, a: str, b: str):
    return next(p for p in report.pairs if (p.a, p.b) == (a, b))


LIBRARY = [
    skill("weather", "Get the current weather forecast, temperature and rain for a city."),
    skill("git-commit", "Write a conventional git commit message from the staged diff."),
    skill("sql-query", "Write and optimise SQL queries against a PostgreSQL database."),
    skill("slides", "Create PowerPoint presentation decks with speaker notes."),
    skill("translate", "Translate text between English, French and German."),
]


# --- the word-level formulas -------------------------------------------------------------------------------------


def test_lucene_idf_matches_the_formula_and_stays_positive_in_a_two_document_library():
    idf = terms.lucene_idf([["alpha", "beta"], ["alpha"]])
    assert idf["alpha"] == pytest.approx(math.log(1 + 0.5 / 2.5))  # in both documents: small but not 0
    assert idf["beta"] == pytest.approx(math.log(1 + 1.5 / 1.5))


def test_lexical_similarity_is_the_cosine_of_sublinear_tfidf_vectors():
    docs = [["alpha", "alpha", "beta"], ["alpha"], []]
    idf = terms.lucene_idf(docs)
    sim = terms.lexical_similarity(docs, idf)
    a = (1 + math.log(2)) * idf["alpha"]
    expected = a / math.hypot(a, idf["beta"])
    assert sim[0, 1] == pytest.approx(expected)
    assert sim[1, 0] == pytest.approx(expected)
    assert sim[0, 0] == pytest.approx(1.0)
    assert sim[2].tolist() == [0.0, 0.0, 0.0]  # no content words: similar to nothing


def test_content_tokens_drop_stopwords_single_characters_and_numbers():
    tokens = terms.content_tokens("Use this when the user asks for a PDF in 2 steps, e.g. v2")
    assert "pdf" in tokens and "user" in tokens
    assert not {"use", "this", "when", "the", "for", "a", "in", "2", "e", "g", "v"} & set(tokens)


def test_surface_forms_show_the_commonest_word_behind_each_token():
    text = "Tables, tables and one table. Parsing"
    table = terms.tokenize("tables")[0]
    forms = terms.surface_forms([text], [table, "zz"])
    assert forms == {table: "tables", "zz": "zz"}  # "tables" twice beats "table" once; unknown tokens stay


def test_distinguishing_words_keep_only_words_the_other_skill_never_uses_and_not_yet_described():
    own = {"alpha": 0.6, "shared": 0.5, "said": 0.9, "ab": 0.9, "数据": 0.1, "gamma": 0.3, "already": 0.8}
    other = {"shared": 0.55, "alpha": 0.2}
    words = terms.distinguishing_words(own, other, described={"said"}, other_words={"gamma"})
    # alpha and shared: the other skill uses them too; gamma: in the other's text (its code, say); said: already
    # described; ab: too short; already: a general word
    assert words == ("数据",)


def test_prose_drops_code_urls_hosts_mentions_quotes_and_contractions():
    body = ("Resolve the place (I'll ask) via `curl https://geo.example.com/x?name=Portland`, see api.weather.gov "
            "or docs/a/b.md; ping @Tom. Say \"Right now in Portland: 12 C\". Ad-hoc runs.\n"
            "```json\n{\"station\": \"KPDX\"}\n```\nUser: what about Lyon?\nRead config.yaml then CI/CD and Next.js.")
    assert terms.prose(body) == ("Resolve the place (I ask) , see or ping . Say . runs. Read then CI/CD and "
                                 "Next.js.")


def test_capitalised_only_finds_names_written_capitalised_mid_sentence():
    body = "Ask when ambiguous (Portland, Oregon vs Maine). Kotlin apps and kotlin scripts. Weather now."
    assert terms.capitalised_only("current-weather", body) == frozenset(
        terms.tokenize("Portland") + terms.tokenize("Oregon") + terms.tokenize("Maine"))


def test_distinguishing_words_drop_placeholders_numbers_names_rare_words_and_fragments():
    own = {"yourdomain": 0.9, "kpdx2": 0.9, "portland": 0.8, "kotlin": 0.7, "purely": 0.7, "hoc": 0.6,
           "shfmt": 0.5, "bats": 0.4, "oncer": 0.3, "der": 0.9}
    counts = {"yourdomain": 4, "kpdx2": 3, "portland": 3, "kotlin": 3, "purely": 2, "hoc": 2, "shfmt": 4,
              "bats": 2, "oncer": 1, "der": 5}
    words = terms.distinguishing_words(
        own, {}, described=(), counts=counts, names={"portland", "kotlin"}, min_count=2,
        df={"portland": 1, "kotlin": 7}, standalone=lambda t: t != "hoc")
    # yourdomain: placeholder; kpdx2: has a digit; portland: a capitalised name no other skill uses (kotlin is
    # used by 7); purely: general; hoc: only part of "ad-hoc"; oncer: once in a long body; der: German stop word
    assert words == ("kotlin", "shfmt", "bats")


# --- analyse_overlap with the real model ---------------------------------------------------------------------------


def test_planted_near_duplicate_is_the_first_pair(encoder):
    planted = [
        skill("pdf-extract", "Extract text and tables from PDF files and save them as CSV."),
        skill("pdf-tables", "Extract the text and the tables of PDF documents and save them as CSV files."),
    ]
    report = analyse_overlap(LIBRARY + planted, encoder=encoder, top=3)
    first = report.pairs[0]
    assert (first.a, first.b) == ("pdf-extract", "pdf-tables")
    assert first.score > report.pairs[1].score
    assert first.score == pytest.approx(0.7 * first.cosine + 0.3 * first.lexical, abs=2e-4)
    assert report.model_id == encoder.model_id
    assert report.n_skills == 7


def test_exact_duplicates_rank_first_with_a_merge_suggestion(encoder):
    library = LIBRARY + [
        skill("pdf-extract", "Extract text and tables from PDF files and save them as CSV."),
        skill("pdf-tables", "Extract text and tables from PDF files and save them as CSV files."),
        skill("zz-copy", "Translate text between  English, French\nand German."),  # same as translate up to spacing
    ]
    report = analyse_overlap(library, encoder=encoder, top=2)
    exact, near = report.pairs
    assert (exact.a, exact.b) == ("translate", "zz-copy")
    assert (exact.score, exact.cosine, exact.lexical) == (1.0, 1.0, 1.0)
    assert exact.suggestion == (
        "descriptions are identical: merge the two skills, or rewrite one to say what only it does "
        "(zz-copy could mention copy (from its name/body) that translate lacks)"
    )
    assert (near.a, near.b) == ("pdf-extract", "pdf-tables")
    assert near.cosine >= 0.95
    assert near.suggestion.startswith(f"descriptions are near-identical (cosine {near.cosine:.2f}): merge them")


def test_shared_terms_and_missing_words_follow_the_formulas(encoder):
    library = [
        skill("pdf-reader", "Extract tables from invoices.", "Parse pdf pages. Parse pdf forms. Invoices."),
        skill(
            "sheet-writer", "Extract tables from spreadsheets.", "Write xlsx workbooks. Write xlsx formulas. Extract."
        ),
        skill("weather", "Forecast rain tomorrow.", "Call the weather api."),
        skill("audio", "Extract audio from videos.", "Decode ogg streams."),
    ]
    report = analyse_overlap(library, encoder=encoder, threshold=-1.0)
    assert len(report.pairs) == 6
    pair = by_names(report, "pdf-reader", "sheet-writer")
    # "tables" is in 2 of 4 descriptions, "extract" in 3: the rarer shared word comes first; "from" is a stopword.
    assert pair.shared_terms == ("tables", "extract")
    # Every candidate word is in one skill only, so it ranks by 1 + ln(count), a name word counting 3 times:
    # pdf 3+2, reader 3, parse 2, then forms and pages once (alphabetical). "invoices" is already described.
    assert pair.a_lacks == ("pdf", "reader", "parse", "forms", "pages")
    # sheet 3, writer 3, xlsx 2, formulas 1, workbooks 1; "write" is a general word, "extract" in both descriptions.
    assert pair.b_lacks == ("sheet", "writer", "xlsx", "formulas", "workbooks")
    assert pair.suggestion.endswith(
        ": pdf-reader could mention pdf, reader, parse, forms, pages (from its name/body) that sheet-writer lacks; "
        "sheet-writer could mention sheet, writer, xlsx, formulas, workbooks (from its name/body) that pdf-reader lacks"
    )
    assert pair.lexical == pytest.approx(
        _tfidf_cosine(["extract", "tables", "invoices"], ["extract", "tables", "spreadsheets"], n=4,
                      df={"extract": 3, "tables": 2, "invoices": 1, "spreadsheets": 1}),
        abs=1e-4,
    )


def _tfidf_cosine(a: list[str], b: list[str], *, n: int, df: dict[str, int]) -> float:
    idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
    dot = sum(idf[t] ** 2 for t in set(a) & set(b))
    return dot / math.sqrt(sum(idf[t] ** 2 for t in a) * sum(idf[t] ** 2 for t in b))


def test_two_skill_library_still_shows_shared_words(encoder):
    report = analyse_overlap(
        [skill("a", "Resize and crop photos."), skill("b", "Crop photos for thumbnails.")], encoder=encoder
    )
    (pair,) = report.pairs
    assert pair.shared_terms == ("crop", "photos")
    assert pair.lexical > 0


def test_same_id_in_two_folders_is_labelled_by_folder(tmp_path, encoder):
    library = [
        skill("pdf", "Fill PDF forms.", path=str(tmp_path / "one" / "pdf" / "SKILL.md")),
        skill("pdf", "Fill PDF forms.", path=str(tmp_path / "two" / "pdf" / "SKILL.md")),
        LIBRARY[0],
    ]
    report = analyse_overlap(library, encoder=encoder, top=1)
    (pair,) = report.pairs
    assert (pair.a, pair.b) == ("pdf (one/pdf)", "pdf (two/pdf)")
    assert pair.suggestion.startswith(
        "both skills have the id 'pdf': give them distinct names; descriptions are identical"
    )


def test_fewer_than_two_skills_give_an_empty_report(encoder):
    report = analyse_overlap([LIBRARY[0]], encoder=encoder)
    assert (report.pairs, report.clusters, report.n_skills) == ([], [], 1)


# --- selection, clusters, confusions (chosen vectors) ---------------------------------------------------------------


def _chain_library() -> tuple[list[Skill], FakeEncoder]:
    # Descriptions share no word, so lexical = 0 and score = 0.7 * cosine.
    angle = {"alpha": 0.0, "bravo": 30.0, "charlie": 62.0}
    vectors = {w: [math.cos(math.radians(d)), math.sin(math.radians(d)), 0.0] for w, d in angle.items()}
    vectors |= {"echo": [0.0, 0.0, 1.0], "foxtrot": [0.0, 0.0, 1.0]}
    return [skill(w[0], w) for w in vectors], FakeEncoder(vectors)


def test_clusters_are_average_link_so_a_chain_does_not_join_its_ends():
    library, fake = _chain_library()
    report = analyse_overlap(library, encoder=fake, threshold=0.55)
    # e-f: 0.7; a-b: 0.7 cos 30 = 0.6062; b-c: 0.7 cos 32 = 0.5936; a-c: 0.7 cos 62 = 0.3286 is not flagged.
    assert [(p.a, p.b, p.score) for p in report.pairs] == [
        ("e", "f", 0.7),
        ("a", "b", round(0.7 * math.cos(math.radians(30)), 4)),
        ("b", "c", round(0.7 * math.cos(math.radians(32)), 4)),
    ]
    # Cut at 0.5936: a+b merge at distance 0.394; c is on average (0.406 + 0.671) / 2 = 0.539 from them: apart.
    assert report.clusters == [("a", "b"), ("e", "f")]
    assert report.cluster_threshold == round(0.7 * math.cos(math.radians(32)), 4)


def test_top_keeps_the_best_pairs_and_ties_break_by_ids():
    vectors = {"alpha": [1.0, 0.0], "bravo": [1.0, 0.0], "charlie": [1.0, 0.0], "delta": [0.0, 1.0]}
    library = [skill(n, n) for n in ("delta", "charlie", "alpha", "bravo")]  # given out of order
    report = analyse_overlap(library, encoder=FakeEncoder(vectors), top=2)
    assert [(p.a, p.b, p.score) for p in report.pairs] == [("alpha", "bravo", 0.7), ("alpha", "charlie", 0.7)]


def test_confusions_are_counted_into_stolen_and_listed():
    library, fake = _chain_library()
    confusions = [("a", "b", 3), ("b", "a", 2), ("a", "a", 10), ("c", "a", 1), ("e", "f", 0)]
    report = analyse_overlap(library, encoder=fake, threshold=0.55, confusions=confusions)
    assert by_names(report, "a", "b").stolen == 5
    assert by_names(report, "e", "f").stolen == 0
    listed = [(c.pair.a, c.pair.b, c.a_to_b, c.b_to_a, c.pair.stolen) for c in report.confusions]
    # a-c is not similar enough to be flagged, yet it steals: the request-level view lists it.
    assert listed == [("a", "b", 3, 2, 5), ("a", "c", 0, 1, 1)]
    assert report.to_json()["confusions"][1] == {
        **by_names(analyse_overlap(library, encoder=fake, threshold=-1.0), "a", "c").to_json(),
        "stolen": 1,
        "a_to_b": 0,
        "b_to_a": 1,
    }


@pytest.mark.parametrize(
    ("confusions", "message"),
    [
        ([("a", "nobody", 1)], "'nobody', which is not in the library"),
        ([("a", "b", -1)], "count -1"),
        ([("a", "b", 1.5)], "count 1.5"),
    ],
)
def test_bad_confusions_are_refused_with_the_value(confusions, message):
    library, fake = _chain_library()
    with pytest.raises(ConfigError, match=message):
        analyse_overlap(library, encoder=fake, confusions=confusions)


@pytest.mark.parametrize("kwargs", [{"top": 0}, {"top": True}, {"threshold": float("nan")}])
def test_bad_options_are_refused(kwargs):
    library, fake = _chain_library()
    with pytest.raises(ConfigError):
        analyse_overlap(library, encoder=fake, **kwargs)


def test_fails_above_is_strict():
    library, fake = _chain_library()
    report = analyse_overlap(library, encoder=fake, threshold=0.55)
    assert [(p.a, p.b) for p in fails_above(report, 0.6)] == [("e", "f"), ("a", "b")]
    assert fails_above(report, 0.7) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(-3, 3), min_size=3, max_size=3), min_size=2, max_size=7), st.integers(1, 6))
def test_top_k_is_a_prefix_of_top_k_plus_one(rows, k):
    names = [f"word{chr(97 + i)}" for i in range(len(rows))]  # distinct single words: lexical is 0
    vectors = {n: [float(v) for v in r] if any(r) else [1.0, 0.0, 0.0] for n, r in zip(names, rows)}
    library = [skill(n, n) for n in names]
    small = analyse_overlap(library, encoder=FakeEncoder(vectors), top=k).pairs
    large = analyse_overlap(library, encoder=FakeEncoder(vectors), top=k + 1).pairs
    assert large[: len(small)] == small
    assert [p.score for p in large] == sorted((p.score for p in large), reverse=True)


# --- renderings -----------------------------------------------------------------------------------------------------


def test_json_has_the_schema_keys_and_pairs_in_order():
    library, fake = _chain_library()
    data = analyse_overlap(library, encoder=fake, threshold=0.55, confusions=[("a", "b", 1)]).to_json()
    assert json.loads(json.dumps(data)) == data
    assert list(data) == ["schema", "model", "skills", "pairs", "clusters", "confusions"]
    assert (data["schema"], data["model"], data["skills"]) == ("skill-router.overlap/1", "fake", 5)
    assert list(data["pairs"][0]) == [
        "a", "b", "score", "cosine", "lexical", "shared_terms", "suggestion", "a_lacks", "b_lacks", "stolen"
    ]
    assert [(p["a"], p["b"]) for p in data["pairs"]] == [("e", "f"), ("a", "b"), ("b", "c")]
    assert data["clusters"] == [["a", "b"], ["e", "f"]]
    assert data["pairs"][1]["stolen"] == 1


def test_markdown_has_the_pairs_table():
    library, fake = _chain_library()
    md = analyse_overlap(library, encoder=fake, threshold=0.55).to_markdown()
    assert "| # | a | b | score | cosine | lexical | stolen | shared terms | suggestion |" in md
    assert (
        "| 1 | e | f | 0.7000 | 1.0000 | 0.0000 | 0 |  | descriptions are near-identical (cosine 1.00): merge them, "
        "or say in each description what the other does not do (their names and bodies offer no distinguishing words) |"
    ) in md
    assert "| 3 | b | c | 0.5936 | 0.8480 | 0.0000 | 0 |  | say in each description" in md
    assert md.endswith("## Clusters\n\n- a, b\n- e, f\n")


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def test_html_parses_and_holds_the_heatmap_and_no_remote_reference():
    library, fake = _chain_library()
    page = analyse_overlap(library, encoder=fake, threshold=0.55, confusions=[("a", "c", 2)]).to_html()
    parser = _Collector()
    parser.feed(page)
    parser.close()
    svgs = [attrs for tag, attrs in parser.tags if tag == "svg"]
    assert [a["class"] for a in svgs] == ["chart heatmap"]
    assert sum(tag == "table" for tag, _ in parser.tags) == 2  # pairs and confused pairs
    assert "http://" not in page and "https://" not in page
    # Heatmap: the five skills of the flagged pairs, in order of appearance, 5 x 5 cells.
    assert sum(tag == "rect" for tag, _ in parser.tags) == 25
    assert page.index(">e<title>") < page.index(">f<title>") < page.index(">a<title>") < page.index(">c<title>")


def test_html_opens_with_what_to_change_first():
    library, fake = _chain_library()
    report = analyse_overlap(library, encoder=fake, threshold=0.55)
    page = report.to_html()
    first = report.pairs[0]
    start = page.index('<section class="summary"><h2>What to change first</h2>')
    assert start < page.index("<h2>Pairs</h2>")
    assert (f"<li><b>{first.a}</b> ~ <b>{first.b}</b> (score {first.score:.3f}): "
            f"{html.escape(first.suggestion)}</li>") in page[start:]
