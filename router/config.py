"""Router parameters: one frozen object, parsed and checked once at the boundary, saved as JSON.

``skill-router tune`` writes a config file; the commands that route (``prompt``, ``index``, ``route``,
``learn``, ``eval``, ``overlap``, ``tune``) read it with ``--config FILE`` (default: :data:`DEFAULT_CONFIG_FILE`
in the working folder when it exists; the command then says so on stderr, with :func:`config_changes`). Every
number must be finite: JSON's ``Infinity`` and ``NaN`` and
overflowing literals such as ``1e999`` are refused.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields, replace
from numbers import Integral, Real
from typing import Any, Literal, Mapping

from router.errors import ConfigError, brief, clip
from router.files import read_user_text
from router.signals import names as signal_names
from router.signals import registry as signal_registry
from router.texts import BODY_MODES, BodyMode

Fusion = Literal["rrf", "minmax", "zscore"]
FUSIONS: tuple[Fusion, ...] = ("rrf", "minmax", "zscore")
OnAbstain = Literal["top-k", "empty"]
#: The signal names weights are for (:mod:`router.signals`, one module each).
SIGNALS = signal_names()
#: The config file read from the working folder when no --config is given, and the file ``tune`` writes.
DEFAULT_CONFIG_FILE = "skill-router.json"
# Chosen on the dev splits only. With z-score fusion BM25 and the embedding of the description beat the best single
# index on both MetaTool (dense) and Seal-Tools (BM25) (benchmarks/fusion_choice.py). The example weight trades off
# libraries with many examples against libraries with few (`skill-router tune`, dev requests as cross-validated
# examples; MRR): MetaTool dev (~17 per tool) 78.8 / 82.5 / 83.5 at weights 1 / 2 / 4, the bundled library's dev
# (2 per skill) 95.8 / 93.5 / 90.6. Weight 2 loses least on either; `tune` fits it to a library. BM25 at 0.3 and BM25
# over the first 150 words of the SKILL.md body at 0.5 (an embedding of the body adds nothing on top: weight 0, so
# bodies are not embedded) were chosen on the union of the dev sets (real corpora, bundled, MetaTool, Seal-Tools;
# benchmarks/signal_choice.py): the best mean MRR with no dev set more than 0.5 below the default before them.
# Each signal declares its default weight in its own module (router/signals/<name>.py).
DEFAULT_WEIGHTS = {name: signal.default_weight for name, signal in signal_registry().items()}


def default_weights() -> dict[str, float]:
    """Every registered signal's default weight, in the signals' order (what a config's weights are checked and
    completed against)."""
    return {name: signal.default_weight for name, signal in signal_registry().items()}


#: Field metadata marking what shapes the built index (the rest shapes ranking only): a change of one of these
#: rebuilds the index; the others reuse it.
INDEX = {"shapes": "index"}


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
    weights: per-signal weights (``bm25``, ``dense``, ``examples``, the body's ``body_bm25`` / ``body_dense``, and
        ``passages``, the best BM25 passage of the whole body, :mod:`router.passages`; 0.8 with body_bm25 0 chosen
        on the dev sets; ``name_dense``, the embedding of the name words alone: a weight above 0 counts it in every
        library; at 0, ``catalogue_names`` decides; ``centrality``, each skill's closeness to the library's mean
        description, the same for every request, 0.2 chosen on the dev sets, :mod:`router.signals.centrality`;
        ``passage_dense``, the request's mean cosine with the openings (16 words) of the first three passages of each
        body, embedded at build time: 0.5 chosen on the dev sets; 0 embeds nothing of a body,
        :mod:`router.signals.passage_dense`).
    catalogue_names: the weight of ``name_dense`` in a library without SKILL.md bodies whose names say something
        their descriptions do not (the rule of :mod:`router.signals.name_dense`; 0.3 chosen on the dev sets: MetaTool
        hit@1 / hit@5 +1.0 / +2.3, the other dev sets unchanged); 0 turns the rule off.
    rrf_k: the RRF constant.
    threshold: abstain when the routing confidence (best cosine of the request with a description or an example)
        is below this; None never abstains.
    on_abstain: what an abstaining catalogue shows: the plain top-k (default) or nothing.
    no_skill: let the surfaces in front of an agent (hook, MCP search_skills, /v1/route with abstain) give nothing
        for a request that fits no skill (:mod:`router.abstain`); False: they always show the top k.
    body: which part of each SKILL.md body the ``body_bm25`` and ``body_dense`` signals index (``none``,
        ``headings``, ``lead``, ``both``); body_tokens: words of ``lead``.
    dense_name: embed the name words with the description (False: the description alone, chosen on dev).
    model: a sentence-transformers model path or name; None = the bundled all-MiniLM-L6-v2.
    context_weight: weight of earlier user turns when routing a conversation (the last turn weighs 1).
    index_url: a ``postgresql://`` URL: the index lives in that database (:mod:`router.pgstore`), not in files.
    split_weight: weight of the best score over a request's parts when it asks for several things
        (:mod:`router.split`; 0 routes the whole request only; 0.5 chosen on the dev sets).
    glosses: score a request with Han characters with the English glosses of its Chinese words too
        (:mod:`router.glossary`, CC-CEDICT, a dependency; nothing changes where it is missing).
    confine: refuse skills whose SKILL.md resolves outside every skills folder (a symlink out of the library);
        the profiles themselves follow such links, as their harnesses do (:mod:`router.confine`).
    """

    k: int = 5
    route_above: int = 15
    fusion: Fusion = "zscore"
    weights: Mapping[str, float] = field(default_factory=lambda: default_weights())
    rrf_k: int = 60
    threshold: float | None = None
    on_abstain: OnAbstain = "top-k"
    no_skill: bool = True
    body: BodyMode = field(default="lead", metadata=INDEX)
    body_tokens: int = field(default=150, metadata=INDEX)
    dense_name: bool = field(default=False, metadata=INDEX)
    model: str | None = field(default=None, metadata=INDEX)
    context_weight: float = 0.3
    split_weight: float = 0.5
    catalogue_names: float = 0.3
    glosses: bool = True
    confine: bool = False
    index_url: str | None = None

    def __post_init__(self) -> None:
        for name in ("k", "route_above", "rrf_k", "threshold", "body_tokens", "context_weight", "split_weight",
                     "catalogue_names"):
            value = getattr(self, name)
            if isinstance(value, float) and not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value!r}")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 1:
            raise ConfigError(f"k must be a whole number >= 1, got {brief(self.k)}")
        if isinstance(self.route_above, bool) or not isinstance(self.route_above, int) or self.route_above < 0:
            raise ConfigError(f"route_above must be a whole number >= 0, got {brief(self.route_above)}")
        if self.fusion not in FUSIONS:
            raise ConfigError(f"unknown fusion {brief(self.fusion)}: choose one of {', '.join(FUSIONS)}")
        if not isinstance(self.weights, Mapping):
            raise ConfigError(f"weights must map signal names to numbers, got {brief(self.weights)}")
        defaults = default_weights()
        unknown = sorted(set(self.weights) - set(defaults))
        if unknown:
            raise ConfigError(f"unknown signal weight(s) {', '.join(unknown)}: weights are for {', '.join(defaults)}")
        # "not w >= 0" also refuses NaN, which compares false with everything and would poison every fused score;
        # an infinite weight would turn every fused score into inf or NaN
        if any(isinstance(w, bool) or not isinstance(w, Real) or not w >= 0 or not math.isfinite(w)
               for w in self.weights.values()):
            raise ConfigError(f"weights must be numbers >= 0, got {brief(dict(self.weights))}; each must be finite")
        object.__setattr__(self, "weights", {s: float(self.weights.get(s, w)) for s, w in defaults.items()})
        if self.on_abstain not in ("top-k", "empty"):
            raise ConfigError(f"on_abstain must be 'top-k' or 'empty', got {brief(self.on_abstain)}")
        if self.body not in BODY_MODES:
            raise ConfigError(f"unknown body mode {brief(self.body)}: choose one of {', '.join(BODY_MODES)}")
        if isinstance(self.rrf_k, bool) or not isinstance(self.rrf_k, Real) or not self.rrf_k > 0:
            raise ConfigError(f"rrf_k must be a number > 0, got {brief(self.rrf_k)}")
        if isinstance(self.body_tokens, bool) or not isinstance(self.body_tokens, Integral) or self.body_tokens < 1:
            raise ConfigError(f"body_tokens must be a whole number >= 1, got {brief(self.body_tokens)}")
        if self.threshold is not None and (isinstance(self.threshold, bool) or
                                           not isinstance(self.threshold, Real) or self.threshold != self.threshold):
            raise ConfigError(f"threshold must be a number (a cosine, at most 1) or null, got {brief(self.threshold)}")
        if isinstance(self.context_weight, bool) or not isinstance(self.context_weight, Real) \
                or not self.context_weight >= 0:
            raise ConfigError(f"context_weight must be a number >= 0, got {brief(self.context_weight)}")
        if isinstance(self.split_weight, bool) or not isinstance(self.split_weight, Real) or not self.split_weight >= 0:
            raise ConfigError(f"split_weight must be a number >= 0, got {brief(self.split_weight)}")
        if isinstance(self.catalogue_names, bool) or not isinstance(self.catalogue_names, Real) \
                or not self.catalogue_names >= 0:
            raise ConfigError(f"catalogue_names must be a number >= 0 (0 turns the names rule off), got "
                              f"{brief(self.catalogue_names)}")
        if not isinstance(self.dense_name, bool):
            raise ConfigError(f"dense_name must be true or false, got {brief(self.dense_name)}")
        if not isinstance(self.no_skill, bool):
            raise ConfigError(f"no_skill must be true or false, got {brief(self.no_skill)}")
        if not isinstance(self.confine, bool):
            raise ConfigError(f"confine must be true or false, got {brief(self.confine)}")
        if not isinstance(self.glosses, bool):
            raise ConfigError(f"glosses must be true or false, got {brief(self.glosses)}")
        if self.index_url is not None and not (isinstance(self.index_url, str) and self.index_url.startswith(
                ("postgresql://", "postgres://"))):
            raise ConfigError(f"index_url must be a postgresql://user:password@host/database URL or null, got "
                              f"{brief(self.index_url)}")
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise ConfigError(f"model must be a model path or name, or null for the bundled model, got "
                              f"{brief(self.model)}")

    @property
    def embeds_bodies(self) -> bool:
        """Whether the ``body_dense`` signal is built: only when it weighs something (the default weighs it 0)."""
        return self.body != "none" and self.weights["body_dense"] > 0

    @property
    def embeds_names(self) -> bool:
        """Whether the ``name_dense`` signal may be built: when it weighs something, or when ``catalogue_names`` lets
        the library decide (:func:`router.signals.name_dense.names_count`: the default builds it only in a library
        without bodies whose names say something of their own)."""
        return self.weights["name_dense"] > 0 or self.catalogue_names > 0

    @classmethod
    def index_fields(cls) -> tuple[str, ...]:
        """The fields that shape the built index (marked :data:`INDEX`); every other field shapes ranking only."""
        return tuple(f.name for f in fields(cls) if f.metadata.get("shapes") == "index")

    def index_part(self) -> tuple[Any, ...]:
        """What the built index depends on: the index fields' values, whether bodies are embedded and what decides
        whether names are (their weight, or the library's rule). Two configs with the same index part share one
        built index."""
        return tuple(getattr(self, name) for name in self.index_fields()) + (
            self.embeds_bodies, self.weights["name_dense"] > 0, self.catalogue_names > 0)

    def index_parameters(self) -> dict[str, Any]:
        """The index fields the index folder's signature is made from (the model is checked on its own, by id)."""
        return {name: getattr(self, name) for name in self.index_fields() if name != "model"}

    def with_(self, **changes: Any) -> "RouterConfig":
        """A copy with some parameters changed (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def to_json(self) -> dict[str, Any]:
        return {"schema": "skill-router.config/1", **asdict(self), "weights": dict(self.weights)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], source: str = "config") -> "RouterConfig":
        known = set(cls.__dataclass_fields__)
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: a config must be a JSON object, got {brief(data)}")
        values = {k: v for k, v in data.items() if k != "schema" and not k.startswith("_")}
        unknown = sorted(set(values) - known - {"tuning"})
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {clip(', '.join(map(str, unknown)))}; known keys: "
                              f"{', '.join(sorted(known))}")
        values.pop("tuning", None)
        try:
            return cls(**values)
        except (TypeError, ConfigError) as exc:
            raise ConfigError(f"{source}: {exc}") from None

    def save(self, path: str | os.PathLike[str], extra: Mapping[str, Any] | None = None) -> None:
        """Write the config as JSON, atomically: a failed write leaves neither a partial file nor a temporary one.

        Raises :class:`ConfigError` naming the file when it cannot be written (see :func:`check_writable`).
        """
        path = os.fspath(path)
        check_writable(path)
        payload = self.to_json()
        if extra:
            payload["tuning"] = dict(extra)
        text = json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n"
        folder = os.path.dirname(os.path.abspath(path))
        tmp = ""
        try:
            handle, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            raise ConfigError(f"cannot write config file '{path}': {exc.strerror or exc}") from None
        finally:
            if tmp and os.path.exists(tmp):
                os.unlink(tmp)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "RouterConfig":
        path = os.fspath(path)
        text = read_user_text(path, "config file", ConfigError, not_utf8="save it as UTF-8 JSON",
                              missing="run 'skill-router tune' to write one, or drop --config")
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"config file '{path}' cannot be read: not valid JSON ({exc.msg} at line "
                              f"{exc.lineno} column {exc.colno})") from None
        except ValueError as exc:  # Infinity / NaN
            raise ConfigError(f"config file '{path}': {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"config file '{path}' must hold a JSON object")
        return cls.from_json(data, source=path)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a config can hold: use a finite number")


def check_writable(path: str | os.PathLike[str]) -> None:
    """Raise :class:`ConfigError` unless a file can be written at ``path``: its folder exists and is writable, and
    ``path`` is not a folder. Commands check this before hours of work, not after."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ConfigError(f"'{path}' is a folder: give a file name to write, e.g. {DEFAULT_CONFIG_FILE}")
    if not os.path.isdir(folder):
        raise ConfigError(f"cannot write '{path}': folder '{folder}' does not exist; create it or choose another "
                          "path")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ConfigError(f"cannot write '{path}': permission denied; choose a writable path")


def config_changes(config: RouterConfig) -> str:
    """What ``config`` changes from the defaults, in a few words (``fusion rrf, weights bm25 0.5, threshold 0.42``);
    ``no change from the defaults`` when nothing."""
    default = RouterConfig()
    parts = []
    for name in default.__dataclass_fields__:
        value, usual = getattr(config, name), getattr(default, name)
        if name == "weights":
            changed = [f"{s} {value[s]:g}" for s in usual if value[s] != usual[s]]
            if changed:
                parts.append("weights " + " ".join(changed))
        elif value != usual:
            parts.append(f"{name} {value:.7g}" if isinstance(value, float) else f"{name} {value}")
    return ", ".join(parts) if parts else "no change from the defaults"


def find_config(explicit: str | None) -> RouterConfig:
    """The config named on the command line, else :data:`DEFAULT_CONFIG_FILE` here, else the defaults."""
    if explicit:
        return RouterConfig.load(explicit)
    if os.path.isfile(DEFAULT_CONFIG_FILE):
        return RouterConfig.load(DEFAULT_CONFIG_FILE)
    return RouterConfig()
