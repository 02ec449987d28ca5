"""Full-body evidence (router.passages): sections and windows, MaxP from the BM25 formula, the cache by content,
and a word deep in a long body reaching the router."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from indexes.bm25 import BM25Index
from router import Router
from router import passages as module
from router.config import RouterConfig
from router.passages import MAX_PASSAGES, PassageIndex, for_skills, passages, sections
from serve_support import write_skill


def test_sections_follow_headings_but_not_inside_code_fences() -> None:
    body = "intro line\n\n# Setup\nstep one\n```bash\n# not a heading\n```\n## Bisect ##\nfind the commit\n"
    assert sections(body) == [("", "intro line"), ("Setup", "step one ```bash # not a heading ```"),
                              ("Bisect", "find the commit")]


def test_long_sections_become_overlapping_windows_carrying_their_heading() -> None:
    words = " ".join(f"w{i}" for i in range(320))
    found = passages(f"# Long\n{words}\n# Short\nfew words here")
    assert len(found) == 4
    assert found[0] == "Long " + " ".join(f"w{i}" for i in range(150))
    assert found[1] == "Long " + " ".join(f"w{i}" for i in range(100, 250))
    assert found[2] == "Long " + " ".join(f"w{i}" for i in range(200, 320))
    assert found[3] == "Short few words here"
    assert len(passages("\n".join(f"# H{i}\ntext {i}" for i in range(100)))) == MAX_PASSAGES == 64


def test_a_skill_scores_its_best_passage() -> None:
    bodies = ["# A\nthe kiln glaze cone\n# B\nfiring schedule bisque", "", "# C\nloom heddle twill"]
    index = PassageIndex.build(["kiln", "empty", "loom"], bodies)
    texts = ["A the kiln glaze cone", "B firing schedule bisque", "C loom heddle twill"]
    plain = BM25Index.from_texts(["kiln#0", "kiln#1", "loom#0"], texts).scores("bisque firing of the kiln")
    assert index.scores("bisque firing of the kiln").tolist() == [max(plain[0], plain[1]), 0.0, plain[2]]
    assert index.scores_many([]).shape == (0, 3)


def test_built_once_per_content_then_read_from_the_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(module, "_MEMO", {})
    ids, bodies = ["a", "b"], ["# A\nalpha words", "# B\nbeta words"]
    first = for_skills(ids, bodies, str(tmp_path))
    assert first is not None
    [key] = [p.name for p in (tmp_path / "passages").iterdir()]
    assert key == module.content_key(ids, bodies)
    monkeypatch.setattr(module, "_MEMO", {})

    def no_build(*args, **kwargs):
        raise AssertionError("built again although the folder holds it")

    monkeypatch.setattr(PassageIndex, "build", no_build)
    again = for_skills(ids, bodies, str(tmp_path))
    assert again is not None and np.array_equal(again.scores("beta"), first.scores("beta"))
    monkeypatch.undo()
    monkeypatch.setattr(module, "_MEMO", {})
    for n in range(3):  # each edit: a new key; the folder keeps the newest two
        for_skills(ids, ["# A\nalpha words", f"# B\nbeta words {n}"], str(tmp_path))
    assert len(list((tmp_path / "passages").iterdir())) == 2
    assert for_skills(ids, ["", " "], str(tmp_path)) is None  # no body: no signal


def test_a_word_deep_in_a_long_body_reaches_the_router(tmp_path, encoder) -> None:
    filler = " ".join(["general notes about handling version control history safely"] * 40)
    write_skill(tmp_path / "skills", "git-history", "Work with version control history.",
                body=f"# Overview\n{filler}\n\n## Bisect\nUse git bisect to find the commit behind a regression.\n")
    write_skill(tmp_path / "skills", "git-commits", "Write commit messages for version control.",
                body="# Commits\nSummaries, bodies and trailers of a commit message.\n")
    for n in range(3):
        write_skill(tmp_path / "skills", f"other-{n}", f"Unrelated helper number {n} for cooking recipes.")
    # the passages signal beside the description's: passage_dense, whose head of git-history holds only the
    # filler, would rank git-commits first (router/signals/passage_dense.py embeds the first passages only)
    router = Router.from_skills([str(tmp_path / "skills")], "agentskills",
                                RouterConfig(route_above=0, weights={"passage_dense": 0.0}),
                                index_folder=str(tmp_path / "idx"), encoder=encoder)
    request = "bisect the regression"
    with_passages = router.rank(request, 2)
    assert with_passages[0].name == "git-history" and with_passages[0].scores["passages"] > 0
    lead_only = router.with_config(weights={"passages": 0.0, "body_bm25": 0.5}).rank(request, 2)
    assert "passages" not in lead_only[0].scores
    assert (tmp_path / "idx" / "passages").is_dir()


@pytest.mark.parametrize("weights", [{"passages": 0.0}])
def test_no_passage_weight_builds_no_passages(tmp_path, encoder, weights) -> None:
    write_skill(tmp_path / "skills", "one", "First skill.", body="# One\nbody text\n")
    Router.from_skills([str(tmp_path / "skills")], "agentskills", RouterConfig(route_above=0, weights=weights),
                       index_folder=str(tmp_path / "idx"), encoder=encoder)
    assert not (tmp_path / "idx" / "passages").exists()


def test_over_max_skills_the_lead_stands_in(tmp_path, encoder, monkeypatch) -> None:
    for n in range(4):
        write_skill(tmp_path / "skills", f"s{n}", f"Skill number {n}.", body=f"# S{n}\nbody words {n} kiln\n")
    monkeypatch.setattr(module, "MAX_SKILLS", 3)
    big = Router.from_skills([str(tmp_path / "skills")], "agentskills", RouterConfig(route_above=0),
                             index_folder=str(tmp_path / "idx"), encoder=encoder)
    assert "passages" not in big.index.signals.indexes
    lead = big.with_config(weights={"passages": 0.0, "body_bm25": 0.5})
    scored = big.score_many(["kiln body words 2"])
    assert "passages" not in scored.signals
    assert np.array_equal(big.fuse(scored), lead.fuse(lead.score_many(["kiln body words 2"])))
    assert module.weights_without({"passages": 0.8, "body_bm25": 0.0}) == {"passages": 0.8, "body_bm25": 0.5}
    assert module.weights_without({"passages": 0.8, "body_bm25": 0.2}) == {"passages": 0.8, "body_bm25": 0.2}


def test_a_rebuild_after_one_edit_cuts_only_that_body_and_equals_a_build_from_scratch(tmp_path, monkeypatch) -> None:
    ids = ["kiln", "loom", "lathe"]
    bodies = ["# A\nthe kiln glaze cone\n# B\nfiring schedule bisque", "# C\nloom heddle twill",
              "# D\nlathe chuck spindle"]
    monkeypatch.setattr(module, "_MEMO", {})
    monkeypatch.setattr(module, "_CUT", {})
    first = for_skills(ids, bodies, str(tmp_path))
    assert first is not None and first.bodies is not None and first.bodies.shape == (3, 16)
    cut: list[str] = []
    real = module.passages
    monkeypatch.setattr(module, "passages", lambda body, **options: cut.append(body) or real(body, **options))
    edited = [bodies[0], "# C\nloom heddle twill warp weft", bodies[2]]
    for memo in ({}, module._MEMO):  # a new process (the index from the folder), then the same one (from memory)
        monkeypatch.setattr(module, "_MEMO", dict(memo))
        monkeypatch.setattr(module, "_CUT", {})
        cut.clear()
        again = for_skills(ids, edited, str(tmp_path))
        assert cut == [edited[1]]
        assert again is not None
        scratch = PassageIndex.build(ids, edited)
        assert again.index.ids == scratch.index.ids and again.index.vocabulary == scratch.index.vocabulary
        assert again.owners.tolist() == scratch.owners.tolist() == [0, 0, 1, 2]
        for query in ("warp weft of the loom", "kiln firing", "spindle"):
            assert np.array_equal(again.scores(query), scratch.scores(query))
        shutil.rmtree(tmp_path / "passages" / module.content_key(ids, edited))
    renamed = PassageIndex.build(["kiln2", "loom", "lathe"], bodies, reuse=first)  # same bodies, new ids: kept
    assert renamed.index.ids[:2] == ("kiln2#0", "kiln2#1")
    assert np.array_equal(renamed.scores("bisque"), first.scores("bisque"))


def test_bodies_cut_for_one_index_folder_are_kept_in_a_second_one_too(tmp_path) -> None:
    """A process that cut these bodies for one folder (kept in memory) still saves them in a second folder, so
    the next process reading that folder loads them instead of cutting every body again."""
    ids, bodies = ["a", "b"], ["# Alpha\nsplit the invoice lines", "# Beta\nmerge two ledgers"]
    key = module.content_key(ids, bodies)
    first = for_skills(ids, bodies, str(tmp_path / "one"))
    assert for_skills(ids, bodies, str(tmp_path / "two")) is first
    assert (tmp_path / "two" / "passages" / key).is_dir()
    module._MEMO.clear()  # a new process
    again = for_skills(ids, bodies, str(tmp_path / "two"))
    assert again is not None and again is not first
    assert np.array_equal(again.scores("invoice lines"), first.scores("invoice lines"))
