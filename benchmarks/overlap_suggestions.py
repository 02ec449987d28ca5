"""Are the words that overlap suggests adding really words that tell two skills apart?

    python benchmarks/overlap_suggestions.py [--top 30]

Runs the overlap analysis on the awesome-skills corpus folder (../shared/corpora) and, for each of the top pairs,
lists the words suggested for each side with two mechanical checks per word: it occurs in its own skill's text
(name, description or body, as a whole word, any case) and does not occur anywhere in the other skill's text.
Whether a word is "a real word of the domain" is a reader's judgement and is not made here: the table of
judgements is in benchmarks/README.md. Writes benchmarks/results/overlap_suggestions.json.
"""

from __future__ import annotations

import argparse
import re

from common import CORPORA, save
from router.index import LibrarySource
from router.overlap import analyse_overlap
from router.spec import LibrarySpec

FOLDER = CORPORA / "awesome-skills" / "skills"


def whole_text(skill) -> str:
    return "\n".join((skill.name, skill.description, skill.body))


def occurs(word: str, text: str) -> bool:
    return re.search(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", text, re.I) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    library = LibrarySource.read(LibrarySpec.create([str(FOLDER)], profile="agentskills")).chosen()  # no index
    skills = list(library.skills)
    by_id = {s.id: s for s in skills}
    report = analyse_overlap(skills, encoder=library.encoder, top=args.top)
    rows = []
    for rank, pair in enumerate(report.pairs, 1):
        a, b = by_id[pair.a], by_id[pair.b]
        checks = {}
        for side, own, other, words in (("a", a, b, pair.a_lacks), ("b", b, a, pair.b_lacks)):
            checks[side] = [{"word": w, "in_own": occurs(w, whole_text(own)), "in_other": occurs(w, whole_text(other))}
                            for w in words]
        distinct = all(c["in_own"] and not c["in_other"] for side in checks.values() for c in side)
        rows.append({"rank": rank, "a": pair.a, "b": pair.b, "score": pair.score, "a_words": checks["a"],
                     "b_words": checks["b"], "all_words_distinguish": distinct, "suggestion": pair.suggestion})
        words = "; ".join(f"{side}: {', '.join(c['word'] for c in checks[side]) or '-'}" for side in ("a", "b"))
        print(f"{rank:2d} {pair.a} ~ {pair.b} ({pair.score:.3f}) {words}"
              f"{'' if distinct else '  <- a word is not distinguishing'}")
    with_words = sum(1 for r in rows if r["a_words"] or r["b_words"])
    print(f"{with_words} of {len(rows)} pairs name at least one word; "
          f"{sum(r['all_words_distinguish'] for r in rows)} have only words found in one skill and not the other")
    path = save("overlap_suggestions", {"folder": "awesome-skills/skills", "skills": len(skills), "pairs": rows,
                                        "pairs_with_words": with_words})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
