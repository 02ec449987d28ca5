"""The ONNX session's intra-op threads: two (the library's and a one-shot route's default, threads that sleep while
they wait) give the very vectors and rankings of one (the server's and the hook encoder's); the count comes from
``SKILL_ROUTER_ONNX_THREADS`` or the default, at most one a core."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from indexes import Encoder, OnnxEncoder, ensure_onnx_encoder
from indexes.onnx_encoder import cores
from router import encoders
from router.config import RouterConfig
from router.errors import ConfigError
from router.routing import Router

ROOT = Path(__file__).resolve().parents[1]
REQUESTS = [json.loads(line)["query"] for line in
            (ROOT / "benchmarks/data/corpora-dev.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    """An XDG cache folder holding the bundled model's export, where :func:`router.encoders.choose` finds it."""
    home = tmp_path_factory.mktemp("xdg-cache")
    ensure_onnx_encoder(encoder, cache_dir=home / "skill-router" / "onnx")
    return home


def session_threads(encoder: OnnxEncoder, *, float_graph: bool = False) -> tuple[int, str]:
    """The request session's intra-op threads (``float_graph``: the float session's) and whether they spin (""
    when the session was left onnxruntime's default)."""
    session = encoder._library() if float_graph else encoder._request_session or encoder._library()
    options = session.get_session_options()
    try:
        spinning = options.get_session_config_entry("session.intra_op.allow_spinning")
    except RuntimeError:  # onnxruntime raises for a key that was never set
        spinning = ""
    return options.intra_op_num_threads, spinning


@pytest.mark.skipif(cores() < 2, reason="one core: a second intra-op thread is never made")
def test_two_threads_give_the_vectors_of_one_to_the_last_bit(cache: Path) -> None:
    folder = ensure_onnx_encoder(cache_dir=cache / "skill-router" / "onnx").folder
    one, two = OnnxEncoder.load(folder), OnnxEncoder.load(folder, threads=2)
    assert session_threads(one)[0] == 1
    assert session_threads(two) == (2, "0")  # the second thread sleeps while it waits
    for request in REQUESTS:  # one request a call, as a router embeds them
        assert np.array_equal(one.encode_requests([request]), two.encode_requests([request])), request
        assert np.array_equal(one.encode([request]), two.encode([request])), request
    assert np.array_equal(one.encode(REQUESTS), two.encode(REQUESTS))  # batches on the worker pool
    assert np.array_equal(one.encode_requests(REQUESTS), two.encode_requests(REQUESTS))


@pytest.mark.skipif(cores() < 2, reason="one core: a second intra-op thread is never made")
def test_a_build_s_batches_run_on_one_thread_sessions_and_requests_keep_their_threads(cache: Path) -> None:
    """More than BATCH_SIZE texts at once (a build) run on a one-thread session a worker, opened on the first such
    call, so the workers do not put two threads each on the cores; a request's few texts keep the request
    session's two. The same vectors either way."""
    from indexes.onnx_encoder import BATCH_SIZE

    folder = ensure_onnx_encoder(cache_dir=cache / "skill-router" / "onnx").folder
    one, two = OnnxEncoder.load(folder), OnnxEncoder.load(folder, threads=2)
    few = REQUESTS[:BATCH_SIZE]
    assert np.array_equal(one.encode(few), two.encode(few))
    assert two._bulk_session is None and one._bulk() is one._session  # no second session for a request's texts
    many = REQUESTS[: 10 * BATCH_SIZE]
    assert np.array_equal(one.encode(many), two.encode(many))
    bulk = two._bulk_session
    assert bulk is not None and bulk.get_session_options().intra_op_num_threads == 1
    assert session_threads(two) == (2, "0")  # requests still run on two
    two.encode(many)
    assert two._bulk_session is bulk  # opened once
    assert np.array_equal(one.encode([REQUESTS[0]]), two.encode([REQUESTS[0]]))


def test_threads_must_be_a_positive_whole_number(cache: Path) -> None:
    folder = ensure_onnx_encoder(cache_dir=cache / "skill-router" / "onnx").folder
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            OnnxEncoder.load(folder, threads=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(cores() < 2, reason="one core: a second intra-op thread is never made")
def test_a_router_ranks_the_dev_requests_the_same_with_one_thread_or_two(cache: Path, tmp_path: Path) -> None:
    folder = ensure_onnx_encoder(cache_dir=cache / "skill-router" / "onnx").folder
    index = tmp_path / "index"
    routers = [Router.from_skills([str(ROOT / "skills")], "genkit", RouterConfig(route_above=0),
                                  index_folder=str(index), encoder=OnnxEncoder.load(folder, threads=threads))
               for threads in (1, 2)]
    assert routers[1].embedded_count == 0  # the second loads the first's index: only requests are embedded anew
    for request in REQUESTS:
        first, second = (router.route(request) for router in routers)
        assert first.matches == second.matches, request  # ids, scores, ranks and each signal's, to the last bit
        assert (first.shown, first.confidence, first.no_skill) == (second.shown, second.confidence, second.no_skill)


def test_the_thread_count_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(encoders.THREADS_ENV, raising=False)
    assert encoders.request_threads() == min(encoders.REQUEST_THREADS, cores()) == min(2, len(os.sched_getaffinity(0)))
    monkeypatch.setenv(encoders.THREADS_ENV, " 1 ")
    assert encoders.request_threads() == 1
    monkeypatch.setenv(encoders.THREADS_ENV, "64")
    assert encoders.request_threads() == cores()  # at most one a core
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv(encoders.THREADS_ENV, bad)
        with pytest.raises(ConfigError, match=f"SKILL_ROUTER_ONNX_THREADS='{bad}' is not a whole number >= 1"):
            encoders.request_threads()


@pytest.mark.skipif(cores() < 2, reason="one core: a second intra-op thread is never made")
def test_the_one_encoder_choice_uses_the_environment_s_count_unless_told(cache: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv(encoders.ENV_SWITCH, raising=False)
    monkeypatch.delenv(encoders.THREADS_ENV, raising=False)
    monkeypatch.delenv(encoders.INT8_ENV, raising=False)
    chosen = encoders.choose(None, [])
    assert isinstance(chosen, OnnxEncoder) and chosen.int8_requests
    assert session_threads(chosen, float_graph=True) == (2, "0")  # a router's default for a library's texts
    assert session_threads(chosen) == (1, "") and chosen.int8_threads == 1  # and for its requests
    server = encoders.choose(None, [], threads=1)  # what serve and the hook's encoder process ask for
    assert isinstance(server, OnnxEncoder) and server.threads == session_threads(server)[0] == 1
    assert session_threads(server, float_graph=True)[0] == 1
    monkeypatch.setenv(encoders.THREADS_ENV, "1")
    chosen = encoders.choose(None, [])
    assert isinstance(chosen, OnnxEncoder) and session_threads(chosen, float_graph=True)[0] == 1
    monkeypatch.setenv(encoders.THREADS_ENV, "2")  # said: the int8 session too
    chosen = encoders.choose(None, [])
    assert isinstance(chosen, OnnxEncoder) and session_threads(chosen) == (2, "0")
    monkeypatch.setenv(encoders.INT8_ENV, "0")  # no int8 graph: requests on the float session's two
    chosen = encoders.choose(None, [])
    assert isinstance(chosen, OnnxEncoder) and session_threads(chosen) == (2, "0") and not chosen.int8_requests


@pytest.mark.skipif(cores() < 2, reason="one core: a second intra-op thread is never made")
def test_the_server_s_encoder_runs_each_request_on_one_thread(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from router.serve.service import Service

    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv(encoders.ENV_SWITCH, raising=False)
    monkeypatch.delenv(encoders.THREADS_ENV, raising=False)
    chosen = Service(lambda shared: None)._choose_encoder()  # type: ignore[arg-type,return-value]
    assert isinstance(chosen, OnnxEncoder) and session_threads(chosen)[0] == 1
