"""Score every pair of skill descriptions, pick the pairs to flag, cluster them and say what to change."""

from __future__ import annotations

import math
import os
import re
from collections import Counter, defaultdict
from typing import Callable, Protocol, Sequence

import numpy as np

from router import progress as steps
from router.errors import ConfigError, ModelError
from router.overlap import terms
from router.overlap.report import Confusion, OverlapPair, OverlapReport
from router.skill import Skill

EMBEDDING_WEIGHT = 0.7
"""Share of the embedding cosine in the combined score; the lexical cosine has the rest."""

MERGE_COSINE = 0.95
"""From this embedding cosine on, two descriptions say the same thing and the suggestion is to merge."""

MAX_HEATMAP = 20
"""Skills shown in the HTML heatmap (those of the top flagged pairs)."""

LONG_BODY_TOKENS = 200
"""From this many content tokens on, a body's word must occur twice to be suggested."""

_ROUND = 4
# Scores are rounded before ranking so that ties, and therefore the order, do not depend on the last bits of a
# BLAS product (which vary with the thread count).


class Encoder(Protocol):
    """What overlap analysis needs of an encoder (:class:`indexes.encoder.Encoder` is one)."""

    model_id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def analyse_overlap(
    skills: Sequence[Skill],
    *,
    encoder: Encoder,
    top: int = 20,
    threshold: float | None = None,
    confusions: Sequence[tuple[str, str, int]] = (),
) -> OverlapReport:
    """Find the skills whose descriptions are too alike for a router, or a model, to tell apart.

    Each skill's text is its ``description`` plus its ``index_description`` when that is non-empty. For every
    pair of skills::

        score = 0.7 * cosine + 0.3 * lexical

    where ``cosine`` is the cosine of the two sentence embeddings (what a dense router sees) and ``lexical`` the
    cosine of their sublinear tf-idf vectors with the Lucene BM25 idf (how much *distinctive* vocabulary they
    share, what a BM25 router sees; see :mod:`router.overlap.terms`). Both lie in [0, 1] for real descriptions,
    so a weighted mean is meaningful, where raw BM25 scores would not be. Texts equal after collapsing whitespace
    and case are exact duplicates: their cosine, lexical and score are 1 and they rank before every other pair.

    Parameters
    ----------
    skills:
        The library. Two skills may share an id (copies in different folders): they are then labelled
        ``id (folder)`` with the folder relative to their common parent.
    encoder:
        Produces L2-normalised embeddings; its ``model_id`` is recorded in the report.
    top:
        Number of pairs to flag, best first, when ``threshold`` is None.
    threshold:
        When given, flag every pair whose rounded score is at least this, however many.
    confusions:
        ``(gold, predicted, count)`` triples from an evaluation: ``count`` requests labelled ``gold`` were routed
        to ``predicted``. Rows with ``gold == predicted`` are correct routes and ignored. The counts of both
        directions of a pair become its ``stolen``, and every confused pair is listed in ``confusions``.

    Clusters are average-link agglomerative clusters (Sokal and Michener 1958, UPGMA) of the skills in flagged
    pairs, cut at the lowest flagged score: every cluster's members are, on average, at least as alike as the
    least alike flagged pair. Average link rather than connected components, so that a chain A~B~C does not
    join A and C unless they are alike too.

    Cost: one encoder pass over the descriptions, one (n, n) matrix product, and tokenising every body once
    (for the distinguishing words). About 700 skills take seconds.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigError(f"top must be a positive integer, got {top!r}: pass top=20 for example")
    if threshold is not None and not (isinstance(threshold, (int, float)) and math.isfinite(threshold)):
        raise ConfigError(f"threshold must be a finite number, got {threshold!r}: pass threshold=0.8 for example")
    skills, labels = _sorted_and_labelled(skills)
    n = len(skills)
    confused = _confusion_counts(skills, confusions)
    if n < 2:
        return OverlapReport(pairs=[], clusters=[], model_id=encoder.model_id, n_skills=n)

    texts = [s.description + ("\n" + s.index_description if s.index_description else "") for s in skills]
    desc_tokens = [terms.content_tokens(t) for t in texts]
    idf = terms.lucene_idf(desc_tokens)
    with steps.step(f"embedding {n:,} descriptions", total=n) as advance:
        cosine = _cosines(encoder, texts, advance if steps.active() else None)
    lexical = terms.lexical_similarity(desc_tokens, idf)
    keys = [" ".join(t.split()).casefold() for t in texts]
    exact = _equal_matrix(keys)
    cosine[exact] = 1.0
    lexical[exact] = 1.0
    score = EMBEDDING_WEIGHT * cosine + (1.0 - EMBEDDING_WEIGHT) * lexical

    i_all, j_all = np.triu_indices(n, 1)
    rounded = np.round(score[i_all, j_all], _ROUND)
    order = np.lexsort((j_all, i_all, -rounded, ~exact[i_all, j_all]))
    order = order[rounded[order] >= threshold] if threshold is not None else order[:top]
    flagged = [(int(i_all[k]), int(j_all[k])) for k in order]

    chunk_tokens: dict[str, tuple[str, ...]] = {}
    counts = [terms.name_body_counts(s.name, s.body, chunk_tokens)
              for s in steps.track(skills, f"reading the bodies of {n:,} skills")]
    vocabularies = [set(c) | set(d) for c, d in zip(counts, desc_tokens)]
    body_idf = terms.lucene_idf(vocabularies)
    df = Counter(t for words in vocabularies for t in words)
    profiles: dict[int, dict[str, float]] = {}
    names: dict[int, frozenset[str]] = {}
    whole_words: dict[int, set[str]] = {}

    def lacks(own: int, other: int, described: set[str]) -> tuple[str, ...]:
        if own not in names:
            names[own] = terms.capitalised_only(skills[own].name, skills[own].body)
        # In a long body a word used once is incidental; in a few lines every word counts.
        min_count = 2 if sum(counts[own].values()) >= LONG_BODY_TOKENS else 1
        if other not in whole_words:  # the other skill's every word, its code and examples included
            whole_words[other] = set(terms.name_body_counts(skills[other].name, skills[other].body, chunk_tokens,
                                                            whole=True)) | set(desc_tokens[other])
        words = terms.distinguishing_words(profiles[own], profiles[other], described, other_words=whole_words[other],
                                           counts=counts[own], names=names[own], min_count=min_count, df=df,
                                           standalone=terms.standalone_words((re.sub(r"[-_]", " ", skills[own].name),
                                                                              terms.prose(skills[own].body))))
        return _shown(words, skills[own])

    def make_pair(i: int, j: int) -> OverlapPair:
        for k in (i, j):
            if k not in profiles:
                profiles[k] = terms.profile(counts[k], body_idf)
        described = set(desc_tokens[i]) | set(desc_tokens[j])
        a_lacks = lacks(i, j, described)
        b_lacks = lacks(j, i, described)
        shared = terms.shared_terms(desc_tokens[i], desc_tokens[j], idf)
        shared_words = terms.surface_forms((texts[i], texts[j]), shared)
        a_to_b, b_to_a = confused.get((i, j), (0, 0))
        return OverlapPair(
            a=labels[i],
            b=labels[j],
            score=round(float(score[i, j]), _ROUND),
            cosine=round(float(cosine[i, j]), _ROUND),
            lexical=round(float(lexical[i, j]), _ROUND),
            shared_terms=tuple(shared_words[t] for t in shared),
            suggestion=_suggestion(skills[i], skills[j], labels[i], labels[j], float(cosine[i, j]),
                                   bool(exact[i, j]), not keys[i], a_lacks, b_lacks),
            a_lacks=a_lacks,
            b_lacks=b_lacks,
            stolen=a_to_b + b_to_a,
        )

    pairs = [make_pair(i, j) for i, j in steps.track(flagged, f"finding distinguishing words for {len(flagged)} pairs")]
    confusion_list = sorted(
        (Confusion(pair=make_pair(i, j), a_to_b=ab, b_to_a=ba) for (i, j), (ab, ba) in confused.items()),
        key=lambda c: (-c.pair.stolen, -c.pair.score, c.pair.a, c.pair.b),
    )
    cut = min((float(score[i, j]) for i, j in flagged), default=None)
    shown = list(dict.fromkeys(k for pair in flagged for k in pair))[:MAX_HEATMAP]
    return OverlapReport(
        pairs=pairs,
        clusters=_clusters(score, sorted({k for pair in flagged for k in pair}), cut, labels),
        model_id=encoder.model_id,
        n_skills=n,
        confusions=confusion_list,
        cluster_threshold=None if cut is None else round(cut, _ROUND),
        heatmap_labels=tuple(labels[k] for k in shown),
        heatmap=tuple(
            tuple(1.0 if r == c else round(float(score[r, c]), 3) for c in shown) for r in shown
        ),
    )


def fails_above(report: OverlapReport, score: float) -> list[OverlapPair]:
    """The flagged pairs whose score is strictly above ``score``: a CI gate fails when this is non-empty.

    Only ``report.pairs`` are checked; run :func:`analyse_overlap` with ``threshold=score`` for a gate that
    sees every pair rather than the top ones.
    """
    return [p for p in report.pairs if p.score > score]


def _sorted_and_labelled(skills: Sequence[Skill]) -> tuple[list[Skill], list[str]]:
    """Skills sorted by label, and labels: the id, or ``id (folder)`` for ids that several skills share."""
    groups: dict[str, list[Skill]] = defaultdict(list)
    for s in skills:
        groups[s.id].append(s)
    labelled: list[tuple[str, Skill]] = []
    for skill_id, group in groups.items():
        if len(group) == 1:
            labelled.append((skill_id, group[0]))
            continue
        folders = _relative_folders([s.path for s in group])
        for k, (folder, s) in enumerate(zip(folders, group), 1):
            labelled.append((f"{skill_id} ({folder})" if folder else f"{skill_id} #{k}", s))
    labelled.sort(key=lambda ls: ls[0])
    return [s for _, s in labelled], [label for label, _ in labelled]


def _relative_folders(paths: list[str]) -> list[str]:
    """Each SKILL.md's folder relative to the folders' common parent, or all "" when that cannot tell them apart."""
    folders = [os.path.dirname(p) for p in paths]
    if not all(folders) or len(set(folders)) < len(folders):
        return [""] * len(paths)
    try:
        base = os.path.commonpath(folders)
    except ValueError:  # absolute and relative paths mixed: keep the paths as given
        return folders
    if base in folders:  # one skill nested in the other's folder: step up so that neither label is "."
        base = os.path.dirname(base)
    return [os.path.relpath(f, base) for f in folders]


def _confusion_counts(
    skills: list[Skill], confusions: Sequence[tuple[str, str, int]]
) -> dict[tuple[int, int], tuple[int, int]]:
    """Map (i, j), i < j, to (requests of i routed to j, requests of j routed to i)."""
    index: dict[str, int] = {}
    shared: set[str] = set()
    for k, s in enumerate(skills):
        if s.id in index:
            shared.add(s.id)
        index[s.id] = k
    directed: dict[tuple[int, int], int] = defaultdict(int)
    for row in confusions:
        gold, predicted, count = row
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ConfigError(f"confusion {row!r} has count {count!r}: counts are non-negative integers")
        for skill_id in (gold, predicted):
            if skill_id not in index:
                raise ConfigError(
                    f"confusion {row!r} names skill {skill_id!r}, which is not in the library: "
                    "drop requests whose gold or predicted skill is not one of the analysed skills"
                )
            if skill_id in shared:
                raise ConfigError(f"confusion {row!r} names skill {skill_id!r}, an id several skills share: "
                                  "give the skills distinct ids")
        if gold != predicted and count:
            directed[(index[gold], index[predicted])] += count
    result: dict[tuple[int, int], tuple[int, int]] = {}
    for g, p in directed:
        i, j = min(g, p), max(g, p)
        result[(i, j)] = (directed.get((i, j), 0), directed.get((j, i), 0))
    return result


def _cosines(encoder: Encoder, texts: list[str], advance: Callable[[int], None] | None = None) -> np.ndarray:
    # Only a watched run passes ``progress`` (the package's encoders take it; a caller's own may not).
    embedded = encoder.encode(texts) if advance is None else encoder.encode(texts, progress=advance)  # type: ignore[call-arg]
    vectors = np.asarray(embedded, dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ModelError(
            f"encoder {encoder.model_id!r} returned an array of shape {vectors.shape} for {len(texts)} texts: "
            "it must return one row per text"
        )
    # Normalised again so that an encoder that skips normalisation still yields cosines.
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return np.clip(vectors @ vectors.T, -1.0, 1.0)


def _equal_matrix(keys: list[str]) -> np.ndarray:
    """Boolean (n, n) matrix: True where two keys are equal (the diagonal included)."""
    codes = np.unique(np.array(keys, dtype=object), return_inverse=True)[1]
    return codes[:, None] == codes[None, :]


def _clusters(score: np.ndarray, members: list[int], cut: float | None, labels: list[str]) -> list[tuple[str, ...]]:
    if cut is None or len(members) < 2:
        return []
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import squareform

    distance = np.clip(1.0 - score[np.ix_(members, members)], 0.0, None)
    np.fill_diagonal(distance, 0.0)
    distance = (distance + distance.T) / 2  # squareform requires exact symmetry
    tree = linkage(squareform(distance, checks=False), method="average")
    # The tolerance keeps a pair whose distance is exactly 1 - cut inside its cluster despite rounding.
    assignment = fcluster(tree, t=max(1.0 - cut, 0.0) + 1e-9, criterion="distance")
    groups: dict[int, list[str]] = defaultdict(list)
    for member, cluster in zip(members, assignment):
        groups[int(cluster)].append(labels[member])
    found = [tuple(sorted(g)) for g in groups.values() if len(g) >= 2]
    return sorted(found, key=lambda c: (-len(c), c))


def _shown(tokens: tuple[str, ...], skill: Skill) -> tuple[str, ...]:
    """``tokens`` as the words ``skill``'s name and body write them (tokens may be stems)."""
    words = terms.surface_forms((skill.name, skill.body), tokens)
    return tuple(words[t] for t in tokens)


def _suggestion(
    a: Skill, b: Skill, a_label: str, b_label: str, cosine: float, exact: bool, empty: bool,
    a_lacks: tuple[str, ...], b_lacks: tuple[str, ...],
) -> str:
    """The concrete change to make, most drastic first."""
    prefix = f"both skills have the id {a.id!r}: give them distinct names; " if a.id == b.id else ""
    hints = "; ".join(
        f"{own} could mention {', '.join(words)} (from its name/body) that {other} lacks"
        for own, other, words in ((a_label, b_label, a_lacks), (b_label, a_label, b_lacks))
        if words
    )
    if exact and empty:
        return prefix + "both descriptions are empty: write one for each that says what the skill does"
    if exact:
        text = "descriptions are identical: merge the two skills, or rewrite one to say what only it does"
        return prefix + text + (f" ({hints})" if hints else "")
    if not hints and a.body.strip() and " ".join(a.body.split()) == " ".join(b.body.split()):
        return (prefix + "the two SKILL.md bodies are identical (only the names and descriptions differ): merge "
                "the two skills, or keep one")
    merge = f"descriptions are near-identical (cosine {cosine:.2f}): merge them, or " if cosine >= MERGE_COSINE else ""
    if hints:
        return f"{prefix}{merge}add distinguishing words: {hints}"
    return (
        f"{prefix}{merge}say in each description what the other does not do "
        "(their names and bodies offer no distinguishing words)"
    )
