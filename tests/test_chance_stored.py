"""The no-skill chance level kept with a saved index (the file store): computed when the index is written, read by
every router over it, computed again when its recipe changes (router.abstain, router.signals.build)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from router import abstain
from tests.cli_support import run
from tests.serve_support import copy_bundled
from tests.signal_support import chance_by_formula

pytestmark = pytest.mark.model


def _sample_scorings(monkeypatch) -> list[int]:
    """Every time built signals score the everyday sample (what computing a chance level costs), counted."""
    from router.signals.build import Signals

    calls: list[int] = []
    score = Signals.score

    def spied(self, texts, vectors):
        if list(texts) == list(abstain.EVERYDAY[:abstain.CHANCE_SAMPLE]):
            calls.append(len(texts))
        return score(self, texts, vectors)

    monkeypatch.setattr(Signals, "score", spied)
    return calls


def _manifest(library: Path) -> dict:
    [path] = (library.parent / ".skill-router-index").glob("*/manifest.json")
    return json.loads(path.read_text(encoding="utf-8"))


def _router(library: Path, encoder):
    from router.index import LibraryIndex, LibrarySource
    from router.routing import Router
    from router.spec import LibrarySpec

    source = LibrarySource.read(LibrarySpec.create([str(library)], profile="genkit"), encoder=encoder)
    return Router(LibraryIndex.create(source, persist=True))


def test_index_saves_the_chance_level_a_first_route_computed_and_a_new_router_scores_no_sample(
        capsys, tmp_path, monkeypatch) -> None:
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    status, _, err = run(capsys, "index", "--skills", str(library), "--profile", "genkit")
    assert status == 0, err
    stored = _manifest(library)["chance"]
    assert sorted(stored) == ["means", "recipe"]
    # the default embeds the bodies' heads (passage_dense), so the level has their mean too
    assert sorted(stored["means"]) == ["best", "lexical", "matched", "passage"] and stored["means"]["passage"] > 0
    calls = _sample_scorings(monkeypatch)
    router = Router.from_skills([str(library)], profile="genkit")
    assert router.index.chance == abstain.Chance(**stored["means"])
    routing = router.route("thank you so much")
    assert routing.no_skill and calls == []  # the decision was made, and the everyday sample never scored
    # exactly the level the first route computed before it was kept with the index
    assert abstain.Chance(**stored["means"]) == chance_by_formula(router)
    from router.index import scored_names  # what the recipe names: the signals a score returns, without scoring

    assert scored_names(router.signals) == tuple(router.signals.score(["hello"], router.encode(["hello"])))


def test_a_changed_recipe_or_library_computes_the_level_again_once(tmp_path, monkeypatch, encoder) -> None:
    library = copy_bundled(tmp_path / "skills")
    first = _router(library, encoder)
    recipe = _manifest(library)["chance"]["recipe"]
    calls = _sample_scorings(monkeypatch)
    assert _router(library, encoder).index.chance == first.index.chance and calls == []

    monkeypatch.setattr(abstain, "CHANCE_RECIPE", abstain.CHANCE_RECIPE + 1)  # how the level is computed changed
    again = _router(library, encoder)
    assert calls == [54] and _manifest(library)["chance"]["recipe"] != recipe  # computed, kept in the manifest
    assert again.index.chance == first.index.chance  # the same library: the same means
    assert _router(library, encoder).index.chance == first.index.chance and calls == [54]  # read back

    # a body the manifest's signature does not cover (past the body_bm25 words): the passage index changes
    path = library / "pdf-form-filling" / "SKILL.md"
    path.write_text(path.read_text(encoding="utf-8") + "\n## Appendix\n\n" + "lighthouse tide gauge " * 400,
                    encoding="utf-8")
    edited = _router(library, encoder)
    assert calls == [54, 54]
    assert edited.index.chance == chance_by_formula(edited) != first.index.chance
    # an example request (nor does it cover these): the confidence reads it
    (library / "pdf-form-filling" / "routing-examples.txt").write_text("thank you so much\n", encoding="utf-8")
    calls.clear()
    with_example = _router(library, encoder)
    assert calls == [54] and with_example.index.chance == chance_by_formula(with_example)
    assert with_example.index.chance.best > edited.index.chance.best  # "thank you so much" is its own example now


def test_an_index_saved_before_the_level_was_kept_gets_it_from_its_first_build(tmp_path, monkeypatch,
                                                                               encoder) -> None:
    library = copy_bundled(tmp_path / "skills")
    first = _router(library, encoder)
    [path] = (library.parent / ".skill-router-index").glob("*/manifest.json")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    generation = manifest["generation"]
    del manifest["chance"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    calls = _sample_scorings(monkeypatch)
    router = _router(library, encoder)
    assert calls == [54] and router.index.chance == first.index.chance
    kept = _manifest(library)
    assert kept["generation"] == generation and kept["chance"]["means"] == dataclasses.asdict(first.index.chance)
    # a router that cannot store it (the index is in memory only) computes it on its first route, as before
    from router.index import LibraryIndex

    bare = type(router)(LibraryIndex(router.index.source, router.signals))
    assert bare.index.chance is None
    bare.route("thank you so much")
    assert calls == [54, 54]


def test_a_catalogue_without_bodies_keeps_the_level_of_its_description_bm25(tmp_path, monkeypatch, encoder) -> None:
    from router.config import RouterConfig
    from router.index import LibraryIndex, LibrarySource
    from router.routing import Router
    from router.spec import LibrarySpec

    catalog = tmp_path / "tools.jsonl"
    rows = [{"id": f"t{i}", "name": f"tool-{i}", "description": text} for i, text in enumerate(
        ["Convert currencies at today's rates", "Book a meeting room", "Translate a document into French",
         "Track a parcel by its number", "Summarise a long email thread", "Resize and crop images",
         "Query a SQL database", "Send an SMS message", "Look up the weather forecast", "Transcribe audio to text",
         "Create a calendar event", "Search flights between two cities", "Check a website's uptime",
         "Generate a QR code", "Scan a file for viruses", "Compress files into a zip archive"])]
    catalog.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = LibrarySpec.create(catalog=str(catalog))
    router = Router(LibraryIndex.create(LibrarySource.read(spec, encoder=encoder)))
    sample = list(abstain.EVERYDAY[:54])
    scores = router.signals.score(sample, abstain.everyday_vectors(encoder.model_id, router.encode, 384)[:54])
    assert "passages" not in scores and "body_bm25" not in scores
    expected = abstain.Chance(best=float(np.mean(scores["dense"].max(axis=1))),
                              lexical=float(np.mean(np.log1p(scores["bm25"].max(axis=1)))),
                              matched=float(np.mean(np.log1p((scores["bm25"] > 0).sum(axis=1)))))
    assert router.index.chance == expected
    assert json.loads(next(Path(str(catalog) + ".index").glob("*/manifest.json")).read_text())["chance"][
        "means"] == {"best": expected.best, "lexical": expected.lexical, "matched": expected.matched, "passage": None}
    # no bodies, so no embedded passages even when they weigh: the four numbers, decided by the fallback model
    weighted = Router(LibraryIndex.create(LibrarySource.read(spec, RouterConfig(weights={"passage_dense": 0.5}),
                                                             encoder=encoder)))
    assert weighted.index.chance.passage is None
    assert weighted.no_skill_features(weighted.score_many(["thank you so much"])).shape == (1, 4)
    assert weighted.route("thank you so much").no_skill



def test_a_library_with_embedded_passages_keeps_their_chance_level_and_its_recipe_names_them(
        tmp_path, monkeypatch, encoder) -> None:
    from router.config import RouterConfig
    from router.routing import Router

    library = copy_bundled(tmp_path / "skills")
    plain = Router.from_skills([str(library)], "genkit", RouterConfig(weights={"passage_dense": 0.0}), encoder=encoder)
    recipe = _manifest(library)["chance"]["recipe"]
    calls = _sample_scorings(monkeypatch)
    embedded = Router.from_skills([str(library)], "genkit", RouterConfig(weights={"passage_dense": 0.5}),
                                  encoder=encoder)
    assert calls == [54]  # another recipe: the passages' chance level is computed once, with the index
    [path] = [p for p in (library.parent / ".skill-router-index").glob("*/manifest.json")
              if json.loads(p.read_text(encoding="utf-8"))["chance"]["recipe"] != recipe]
    stored = json.loads(path.read_text(encoding="utf-8"))["chance"]["means"]
    assert embedded.route("thank you so much").no_skill and calls == [54]  # read from the index, not scored
    sample = list(abstain.EVERYDAY[:54])
    scores = embedded.signals.score(sample, abstain.everyday_vectors(encoder.model_id, embedded.encode, 384)[:54])
    assert stored["passage"] == pytest.approx(float(np.mean(scores[abstain.PASSAGE].max(axis=1))))
    assert embedded.index.chance == abstain.Chance(**stored) and plain.index.chance.passage is None
    # the other means do not read the passages' vectors
    assert dataclasses.replace(embedded.index.chance, passage=None) == plain.index.chance


def test_body_heads_cut_otherwise_compute_the_passage_chance_level_again(tmp_path, monkeypatch, encoder) -> None:
    from router.config import RouterConfig
    from router.routing import Router
    from router.signals import passage_dense

    library = copy_bundled(tmp_path / "skills")
    config = RouterConfig(weights={"passage_dense": 0.5})
    monkeypatch.setattr(passage_dense, "WORDS", None)  # the heads of an earlier version: whole passages
    whole = Router.from_skills([str(library)], "genkit", config, encoder=encoder).index.chance
    monkeypatch.setattr(passage_dense, "WORDS", 16)
    calls = _sample_scorings(monkeypatch)
    heads = Router.from_skills([str(library)], "genkit", config, encoder=encoder)
    assert calls == [54]  # the same bodies cut otherwise: the level kept from the whole passages is not read
    sample = list(abstain.EVERYDAY[:54])
    scores = heads.signals.score(sample, abstain.everyday_vectors(encoder.model_id, heads.encode, 384)[:54])
    assert heads.index.chance.passage == pytest.approx(float(np.mean(scores[abstain.PASSAGE].max(axis=1))))
    assert heads.index.chance.passage != pytest.approx(whole.passage)
    assert dataclasses.replace(heads.index.chance, passage=None) == dataclasses.replace(whole, passage=None)
