"""Router parameters: one frozen object, parsed and checked once at the boundary, saved as JSON.

``skill-router tune`` writes a config file; ``route``, ``prompt``, ``serve`` and ``eval`` read it with
``--config FILE`` (default: ``skill-router.json`` in the working folder when it exists).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from numbers import Integral, Real
from typing import Any, Literal, Mapping

from router.errors import ConfigError
from router.texts import BODY_MODES, BodyMode

Fusion = Literal["rrf", "minmax", "zscore"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "minmax", "zscore")
OnAbstain = Literal["top-k", "empty"]
SIGNALS = ("bm25", "dense", "examples", "body_bm25", "body_dense")
DEFAULT_CONFIG_FILE = "skill-router.json"
# Chosen on the dev splits only. With z-score fusion, BM25 at half the dense weight beats the best single index on
# both MetaTool (dense) and Seal-Tools (BM25) (benchmarks/fusion_choice.py). The example weight trades off libraries
# with many examples against libraries with few (`skill-router tune`, dev requests as cross-validated examples; MRR):
# MetaTool dev (~17 per tool) 78.8 / 82.5 / 83.5 at weights 1 / 2 / 4, the bundled library's dev (2 per skill) 95.8 /
# 93.5 / 90.6. Weight 2 loses least on either; `tune` fits it to a library. The body signals (the first 150 words of
# the SKILL.md body, BM25 at 0.25 and dense at 0.5) were chosen on the union of the dev sets (real corpora, bundled,
# MetaTool, Seal-Tools; benchmarks/signal_choice.py): the best mean MRR with no dev set more than 0.5 below before.
DEFAULT_WEIGHTS = {"bm25": 0.5, "dense": 1.0, "examples": 2.0, "body_bm25": 0.25, "body_dense": 0.5}


@dataclass(frozen=True)
class RouterConfig:
    """Everything that decides a routing.

    Parameters
    ----------
    k: skills a routed catalogue shows (pinned and named skills come on top).
    route_above: a library with at most this many skills is shown whole, unrouted.
    fusion: how the signals combine: ``zscore`` (CombSUM of z-normalised scores; the default, chosen on the dev
        splits in benchmarks/README.md), ``minmax`` (convex combination of min-max scores), ``rrf`` (reciprocal
        rank fusion, Cormack et al. 2009).
    weights: per-signal weights (``bm25``, ``dense``, ``examples``).
    rrf_k: the RRF constant.
    threshold: abstain when the routing confidence (best cosine of the request with a description or an example)
        is below this; None never abstains.
    on_abstain: what an abstaining catalogue shows: the plain top-k (default) or nothing.
    body: which part of each SKILL.md body the ``body_bm25`` and ``body_dense`` signals index (``none``,
        ``headings``, ``lead``, ``both``); body_tokens: words of ``lead``.
    dense_name: embed the name words with the description (False: the description alone, chosen on dev).
    model: a sentence-transformers model path or name; None = the bundled all-MiniLM-L6-v2.
    context_weight: weight of earlier user turns when routing a conversation (the last turn weighs 1).
    """

    k: int = 5
    route_above: int = 15
    fusion: Fusion = "zscore"
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    rrf_k: int = 60
    threshold: float | None = None
    on_abstain: OnAbstain = "top-k"
    body: BodyMode = "lead"
    body_tokens: int = 150
    dense_name: bool = False
    model: str | None = None
    context_weight: float = 0.3

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"k must be a whole number >= 1, got {self.k!r}")
        if isinstance(self.route_above, bool) or not isinstance(self.route_above, int) or self.route_above < 0:
            raise ConfigError(f"route_above must be a whole number >= 0, got {self.route_above!r}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion '{self.fusion}': choose one of {', '.join(FUSIONS)}")
        if not isinstance(self.weights, Mapping):
            raise ConfigError(f"weights must map signal names to numbers, got {self.weights!r}")
        unknown = sorted(set(self.weights) - set(SIGNALS))
        if unknown:
            raise ConfigError(f"unknown signal weight(s) {', '.join(unknown)}: weights are for {', '.join(SIGNALS)}")
        # "not w >= 0" also refuses NaN, which compares false with everything and would poison every fused score
        if any(isinstance(w, bool) or not isinstance(w, Real) or not w >= 0 for w in self.weights.values()):
            raise ConfigError(f"weights must be numbers >= 0, got {dict(self.weights)}")
        object.__setattr__(self, "weights", {s: float(self.weights.get(s, DEFAULT_WEIGHTS[s])) for s in SIGNALS})
        if self.on_abstain not in ("top-k", "empty"):
            raise ConfigError(f"on_abstain must be 'top-k' or 'empty', got {self.on_abstain!r}")
        if self.body not in BODY_MODES:
            raise ConfigError(f"unknown body mode '{self.body}': choose one of {', '.join(BODY_MODES)}")
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, Real) or not self.rrf_k > 0:
            raise ConfigError(f"rrf_k must be a number > 0, got {self.rrf_k!r}")
        if isinstance(self.body_tokens, bool) or not isinstance(self.body_tokens, Integral) or self.body_tokens < 1:
            raise ConfigError(f"body_tokens must be a whole number >= 1, got {self.body_tokens!r}")
        if self.threshold is not None and (isinstance(self.threshold, bool) or
                                           not isinstance(self.threshold, Real) or self.threshold != self.threshold):
            raise ConfigError(f"threshold must be a number (a cosine, at most 1) or null, got {self.threshold!r}")
        if isinstance(self.context_weight, bool) or not isinstance(self.context_weight, Real) \
                or not self.context_weight >= 0:
            raise ConfigError(f"context_weight must be a number >= 0, got {self.context_weight!r}")
        if not isinstance(self.dense_name, bool):
            raise ConfigError(f"dense_name must be true or false, got {self.dense_name!r}")
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise ConfigError(f"model must be a model path or name, or null for the bundled model, got {self.model!r}")

    def with_(self, **changes: Any) -> "RouterConfig":
        """A copy with some parameters changed (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return {"schema": "skill-router.config/1", **asdict(self), "weights": dict(self.weights)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "config") -> "RouterConfig":
        known = set(cls.__dataclass_fields__)
        values = {k: v for k, v in data.items() if k != "schema" and not k.startswith("_")}
        unknown = sorted(set(values) - known - {"tuning"})
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}")
        values.pop("tuning", None)
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"{source}: {exc}") from None

    def save(self, path: str | os.PathLike[str], extra: Mapping[str, Any] | None = None) -> None:
        payload = self.to_json()
        if extra:
            payload["tuning"] = dict(extra)
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "RouterConfig":
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            raise ConfigError(f"config file '{path}' does not exist: run 'skill-router tune' to write one, or drop "
                              "--config") from None
        except (OSError, json.JSONDecodeError) as exc:
            raise ConfigError(f"config file '{path}' cannot be read: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file '{path}' must hold a JSON object")
        return cls.from_json(data, source=path)


def find_config(explicit: str | None) -> RouterConfig:
    """The config named on the command line, else ``skill-router.json`` here, else the defaults."""
    if explicit:
        return RouterConfig.load(explicit)
    if os.path.isfile(DEFAULT_CONFIG_FILE):
        return RouterConfig.load(DEFAULT_CONFIG_FILE)
    return RouterConfig()
