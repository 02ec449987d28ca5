"""The ONNX session a server keeps: no arena and no planned memory pattern (a burst of long requests is handed
back), the weights memory-mapped from the export's external copy, and the very vectors of a default session."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from indexes import Encoder, OnnxEncoder, ensure_onnx_encoder
from indexes.onnx_encoder import EXTERNAL_DATA_FILE, MODEL_FILE

LONG = " ".join(f"Paragraph {i} explains how to merge PDF files and fill their forms." for i in range(40))
TEXTS = ["Fill in a PDF form", "", "Prévisions météo à Lyon ☔ 天气预报", LONG, "Build slide decks from notes"] + \
    [f"route request number {i} to the skill that handles {w}" for i, w in enumerate(["git", "charts", "email"] * 6)]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    return ensure_onnx_encoder(encoder, cache_dir=tmp_path_factory.mktemp("onnx-cache")).folder


def mapped(name: str) -> set[str]:
    """The files named ``name`` this process has memory-mapped."""
    with open("/proc/self/maps", encoding="utf-8") as handle:
        return {line.split()[-1] for line in handle if line.rstrip().endswith(name)}


@pytest.mark.model
def test_the_session_without_arena_or_memory_pattern_gives_a_default_session_s_vectors(
        export: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoder = OnnxEncoder.load(export)
    got = encoder.encode(TEXTS)
    assert str(export / EXTERNAL_DATA_FILE) in mapped(EXTERNAL_DATA_FILE)  # the weights are mapped, not copied
    default = onnxruntime.InferenceSession(str(export / MODEL_FILE), providers=["CPUExecutionProvider"])
    monkeypatch.setattr(encoder, "_session", default)  # arena, memory pattern and threads as onnxruntime sets them
    assert np.array_equal(got, encoder.encode(TEXTS))
    assert np.array_equal(encoder.encode([LONG] * 16), np.repeat(got[3:4], 16, axis=0))
