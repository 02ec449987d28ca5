"""Value objects of an overlap analysis and their JSON, Markdown and HTML renderings."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from router import reports

SCHEMA = "skill-router.overlap/1"
SUMMARY_PAIRS = 5
"""Pairs the HTML report's opening summary lists with their suggestion."""


@dataclass(frozen=True)
class OverlapPair:
    """Two skills whose descriptions a router (or a model reading the catalogue) may confuse.

    Parameters
    ----------
    a, b:
        Skill ids, ``a < b``. When two skills share an id, each is shown as ``id (path)``.
    score:
        Combined similarity (see :func:`router.overlap.analyse_overlap`), rounded to 4 decimals.
    cosine:
        Cosine of the two description embeddings.
    lexical:
        Cosine of the two descriptions' tf-idf vectors: how much distinctive vocabulary they share.
    shared_terms:
        Content words both descriptions contain, rarest in the library first.
    suggestion:
        What to change: merge the two, or add the words listed in ``a_lacks`` / ``b_lacks``.
    a_lacks, b_lacks:
        Words from a skill's name and body that set it apart from the other and that neither description
        mentions yet.
    stolen:
        Labelled requests of either skill that were routed to the other (0 without confusions).
    """

    a: str
    b: str
    score: float
    cosine: float
    lexical: float
    shared_terms: tuple[str, ...]
    suggestion: str
    a_lacks: tuple[str, ...]
    b_lacks: tuple[str, ...]
    stolen: int = 0

    def to_json(self) -> dict[str, Any]:
        """The pair as the JSON object of the ``pairs`` list."""
        return {
            "a": self.a,
            "b": self.b,
            "score": self.score,
            "cosine": self.cosine,
            "lexical": self.lexical,
            "shared_terms": list(self.shared_terms),
            "suggestion": self.suggestion,
            "a_lacks": list(self.a_lacks),
            "b_lacks": list(self.b_lacks),
            "stolen": self.stolen,
        }


@dataclass(frozen=True)
class Confusion:
    """Two skills that steal each other's labelled requests, whatever their description similarity.

    ``a_to_b`` counts requests labelled ``a`` that were routed to ``b``; ``b_to_a`` the reverse; ``pair`` is the
    pair's full analysis (its ``stolen`` is the sum of both).
    """

    pair: OverlapPair
    a_to_b: int
    b_to_a: int

    def to_json(self) -> dict[str, Any]:
        """The pair's JSON object with the two directed counts added."""
        return {**self.pair.to_json(), "a_to_b": self.a_to_b, "b_to_a": self.b_to_a}


@dataclass(frozen=True)
class OverlapReport:
    """The result of :func:`router.overlap.analyse_overlap`.

    Parameters
    ----------
    pairs:
        Flagged pairs, highest score first (exact duplicates before everything else, then ties by ``a``, ``b``).
    clusters:
        Groups of two or more mutually similar skills, each sorted, largest group first.
    model_id:
        The embedding model that produced the cosines.
    n_skills:
        Number of skills analysed.
    confusions:
        Pairs with labelled requests routed from one to the other, most stolen first.
    cluster_threshold:
        Average-link similarity a cluster reaches at least.
    heatmap_labels, heatmap:
        The skills of the top flagged pairs and their pairwise combined scores (diagonal 1).
    """

    pairs: list[OverlapPair]
    clusters: list[tuple[str, ...]]
    model_id: str
    n_skills: int
    confusions: list[Confusion] = field(default_factory=list)
    cluster_threshold: float | None = None
    heatmap_labels: tuple[str, ...] = ()
    heatmap: tuple[tuple[float, ...], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict with schema ``skill-router.overlap/1``."""
        return {
            "schema": SCHEMA,
            "model": self.model_id,
            "skills": self.n_skills,
            "pairs": [p.to_json() for p in self.pairs],
            "clusters": [list(c) for c in self.clusters],
            "confusions": [c.to_json() for c in self.confusions],
        }

    def to_markdown(self) -> str:
        """A Markdown report: summary line, pairs table, clusters and (if any) confusions table."""
        parts = [
            "# Skill description overlap",
            "",
            f"{self.n_skills} skills, model `{self.model_id}`: {len(self.pairs)} flagged pairs, "
            f"{len(self.clusters)} clusters, {len(self.confusions)} confused pairs.",
            "",
            "## Pairs",
            "",
            reports.markdown_table(_PAIR_HEADERS, [_pair_row(k, p) for k, p in enumerate(self.pairs, 1)]).rstrip("\n"),
            "",
            "## Clusters",
            "",
        ]
        parts += [f"- {', '.join(c)}" for c in self.clusters] or ["None."]
        if self.confusions:
            table = reports.markdown_table(_CONFUSION_HEADERS, self._confusion_rows()).rstrip("\n")
            parts += ["", "## Confused pairs", "", table]
        return "\n".join(parts) + "\n"

    def to_html(self) -> str:
        """A self-contained HTML page: similarity heatmap of the top flagged skills, pairs, clusters, confusions."""
        body = [self._summary_html()]
        if self.heatmap_labels:
            labels = list(self.heatmap_labels)
            title = "Combined similarity of the top flagged skills"
            body.append(reports.svg_heatmap(labels, labels, [list(r) for r in self.heatmap], title=title))
        body += [
            "<h2>Pairs</h2>",
            reports.html_table(_PAIR_HEADERS, [_pair_row(k, p) for k, p in enumerate(self.pairs, 1)]),
            "<h2>Clusters</h2>",
        ]
        if self.clusters:
            items = "".join(f"<li>{html.escape(', '.join(c))}</li>" for c in self.clusters)
            body.append(f"<ul>{items}</ul>")
        else:
            body.append("<p>None.</p>")
        if self.confusions:
            body += ["<h2>Confused pairs</h2>", reports.html_table(_CONFUSION_HEADERS, self._confusion_rows())]
        return reports.html_page("Skill description overlap", "\n".join(body))

    def _summary_html(self) -> str:
        """The answer first: how many pairs are too alike, the worst ones and what to change in each."""
        esc = html.escape
        lines = ['<section class="summary"><h2>What to change first</h2>',
                 f'<p class="lead">{self.n_skills} skills (model <code>{esc(self.model_id)}</code>): '
                 f"{len(self.pairs)} pairs flagged, {len(self.clusters)} clusters of alike skills"
                 + (f", {len(self.confusions)} pairs that steal each other's requests" if self.confusions else "")
                 + ".</p>"]
        if self.pairs:
            items = "".join(f"<li><b>{esc(p.a)}</b> ~ <b>{esc(p.b)}</b> (score {p.score:.3f}): {esc(p.suggestion)}</li>"
                            for p in self.pairs[:SUMMARY_PAIRS])
            lines.append(f"<p>The {min(len(self.pairs), SUMMARY_PAIRS)} most alike pairs:</p><ol>{items}</ol>")
        if self.clusters:
            largest = self.clusters[0]
            lines.append(f"<p>Largest cluster ({len(largest)} skills): {esc(', '.join(largest))}.</p>")
        lines.append("</section>")
        return "\n".join(lines)

    def _confusion_rows(self) -> list[list[object]]:
        return [
            [c.pair.a, c.pair.b, c.a_to_b, c.b_to_a, c.pair.score, c.pair.suggestion]
            for c in self.confusions
        ]


_PAIR_HEADERS = ["#", "a", "b", "score", "cosine", "lexical", "stolen", "shared terms", "suggestion"]
_CONFUSION_HEADERS = ["a", "b", "a→b", "b→a", "score", "suggestion"]


def _pair_row(rank: int, p: OverlapPair) -> list[object]:
    return [
        rank,
        p.a,
        p.b,
        p.score,
        p.cosine,
        p.lexical,
        p.stolen,
        ", ".join(p.shared_terms),
        p.suggestion,
    ]
