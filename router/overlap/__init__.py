"""Description-overlap analysis: which skills of a library are too alike to tell apart.

A router (and a model reading the catalogue) chooses a skill from its description. Two skills whose
descriptions say the same thing split the requests meant for either between them. :func:`analyse_overlap`
scores every pair of descriptions with an embedding cosine and a lexical (tf-idf) cosine, flags the most similar
pairs, groups mutually similar skills into clusters, and says for each pair what to change: merge the two, or
add to each description the words from its own name and body that set it apart. Given the confusions of an
evaluation, it also reports which pairs actually steal each other's requests.

    report = analyse_overlap(skills, encoder=Encoder())
    print(report.to_markdown())
    if fails_above(report, 0.9): ...  # a CI gate

Modules: :mod:`~router.overlap.terms` (tokens, idf, lexical similarity, shared and distinguishing words),
:mod:`~router.overlap.analysis` (scoring, selection, clusters, suggestions), :mod:`~router.overlap.report`
(value objects and their JSON, Markdown and HTML).
"""

from router.overlap.analysis import analyse_overlap, fails_above
from router.overlap.report import Confusion, OverlapPair, OverlapReport

__all__ = ["Confusion", "OverlapPair", "OverlapReport", "analyse_overlap", "fails_above"]
