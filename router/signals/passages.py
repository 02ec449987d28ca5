"""``passages``: the best BM25 passage of each skill's whole SKILL.md body (sections under headings and 150-word
windows; max-passage scoring). Its index is :mod:`router.passages`, built with the other signals (when it weighs
something) and cached by content in its own folder of the index folder (``passages/``): a build that may not write
yet leaves that save to :meth:`router.index.LibraryIndex.save`. Absent when no skill has a body or past
:data:`router.passages.MAX_SKILLS` skills, where ``body_bm25`` stands in for it
(:func:`router.passages.weights_without`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from router.signals.base import BodySignal

if TYPE_CHECKING:
    import numpy as np

    from router.signals.base import BuildJob


class PassagesSignal(BodySignal):
    name = "passages"
    lexical = True
    steady = False
    default_weight = 0.8  # with body_bm25 0, chosen on the pooled dev sets (benchmarks/passage_choice.py)
    position = 60
    build_rank = 60

    def build(self, job: BuildJob) -> Any | None:
        import os

        from router import passages

        ids, bodies = job.ids, list(job.texts[self.name])
        if job.persist or job.folder is None:
            return passages.for_skills(ids, bodies, job.folder)  # found in the folder, else built and saved there
        home = os.path.join(job.folder, "passages")
        key = passages.content_key(ids, bodies) if len(ids) <= passages.MAX_SKILLS else ""
        if key and os.path.isdir(os.path.join(home, key)):
            return passages.for_skills(ids, bodies, job.folder)  # saved already: loaded, nothing written
        found = passages.for_skills(ids, bodies, None)
        if found is not None:
            job.later.append(lambda: passages._save(home, key, found))
        return found

    def score(self, index: Any, texts: Sequence[str], vectors: np.ndarray,
              scores: Mapping[str, np.ndarray]) -> np.ndarray:
        return index.scores_many(texts)


SIGNAL = PassagesSignal()
