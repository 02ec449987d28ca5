"""Export a sentence-transformers model to ONNX, check it, and cache it for :mod:`indexes.onnx_encoder`.

The export runs ``torch.onnx.export`` (the torch.export-based exporter, which writes the graph with onnxscript)
on a small module that calls the loaded ``SentenceTransformer`` itself, so the graph holds the transformer, the
model's own pooling and any later modules exactly as sentence-transformers runs them, followed by L2
normalisation (what :class:`indexes.encoder.Encoder` asks for). No graph is written by hand. The fast tokenizer
is saved beside it with truncation at the model's ``max_seq_length``, as sentence-transformers truncates.

Before an export is trusted, the onnxruntime encoder embeds :data:`CHECK_TEXTS` (short, empty, unicode, longer
than any model's maximum sequence length), as one batch and one by one, and every vector must lie within
:data:`indexes.onnx_encoder.TOLERANCE` of sentence-transformers' vectors. The result goes into the export's
manifest, so the check runs once per model content and library versions.

This module imports torch and sentence-transformers; the query path only needs :mod:`indexes.onnx_encoder`.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from indexes.base import ModelLoadError, OnnxUnavailable
from indexes.encoder import Encoder
from indexes.onnx_encoder import (
    EXPORT_FORMAT,
    EXTERNAL_DATA_FILE,
    EXTERNAL_MODEL_FILE,
    INT8_DATA_FILE,
    INT8_MIN_COSINE,
    INT8_MODEL_FILE,
    MANIFEST,
    MODEL_FILE,
    TOKENIZER_FILE,
    TOLERANCE,
    OnnxEncoder,
    int8_file,
    _runtime,
    _sha256,
    _write_json,
    default_cache_dir,
    model_hash,
    model_identity,
    read_manifest,
)

CHECK_TEXTS: tuple[str, ...] = (
    "Fill in a PDF form",
    "",
    "   ",
    "will it rain in Lyon this weekend?",
    "生成幻灯片 · Ünïcödé naïve café · emoji 🚀🔥 · Ελληνικά · русский",
    "def route(query: str, k: int = 5) -> list[Hit]:  # code, URLs https://example.org/a?b=c&d=1",
    # Longer than 256 word pieces (MiniLM's limit) and than 512, so truncation is exercised for most models.
    " ".join(f"Step {i}: extract the tables from the quarterly report and chart the revenue." for i in range(60)),
)
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
# Opset 23 has an Attention operator, which the exporter emits for scaled dot-product attention; onnxruntime
# runs it on CPU from 1.23 on, about 7% less CPU per text than the decomposed attention of older opsets.
OPSET = 23
_VERSIONED = ("torch", "onnx", "onnxscript", "onnxruntime", "tokenizers", "sentence-transformers", "transformers")


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in _VERSIONED:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Keep the exporter's deprecation warnings and progress logs off the caller's stderr (and test filters)."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def _tokenizer_for(model: Any) -> tuple[Any, dict[str, Any]]:
    """The fast tokenizer of the model's first module, set to truncate as sentence-transformers does."""
    first = model[0]
    hf: Any = getattr(first, "tokenizer", None)
    backend = getattr(hf, "backend_tokenizer", None)
    if backend is None:
        raise OnnxUnavailable("the model's first module has no fast (Rust) tokenizer to save beside the ONNX graph")
    if model.default_prompt_name is not None:
        raise OnnxUnavailable(f"the model adds the prompt {model.default_prompt_name!r} to every text, which the "
                              "ONNX encoder does not reproduce")
    max_length = int(model.max_seq_length)
    tokenizer = copy.deepcopy(backend)
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first",
                                direction=getattr(hf, "truncation_side", "right"))
    tokenizer.enable_padding(pad_id=int(hf.pad_token_id or 0), pad_token=str(hf.pad_token),
                             pad_type_id=int(getattr(hf, "pad_token_type_id", 0) or 0),
                             direction=getattr(hf, "padding_side", "right"))
    inputs = [name for name in _INPUTS if name in hf.model_input_names]
    if inputs[:2] != ["input_ids", "attention_mask"]:
        raise OnnxUnavailable(
            f"the model's tokenizer gives {hf.model_input_names}, not input ids and an attention mask"
        )
    facts = {"max_seq_length": max_length, "inputs": inputs, "pad_id": int(hf.pad_token_id or 0),
             "pad_type_id": int(getattr(hf, "pad_token_type_id", 0) or 0)}
    return tokenizer, facts


def _export_graph(model: Any, tokenizer: Any, inputs: list[str], path: Path) -> None:
    import torch

    class SentenceEmbedding(torch.nn.Module):
        """input ids (+ mask, type ids) -> the model's pooled sentence vector, L2-normalised."""

        def __init__(self, sentence_model: Any) -> None:
            super().__init__()
            self.sentence_model = sentence_model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any = None) -> Any:
            features = {"input_ids": input_ids, "attention_mask": attention_mask}
            if token_type_ids is not None:
                features["token_type_ids"] = token_type_ids
            vectors = self.sentence_model(features)["sentence_embedding"]
            return torch.nn.functional.normalize(vectors, p=2.0, dim=1)

    # Two texts of different lengths: torch.export specialises dimensions whose example size is 0 or 1.
    sample = tokenizer.encode_batch(["an example request", "a longer example text to trace the sequence axis"])
    columns = {"input_ids": [e.ids for e in sample], "attention_mask": [e.attention_mask for e in sample],
               "token_type_ids": [e.type_ids for e in sample]}
    args = tuple(torch.tensor(columns[name], dtype=torch.long) for name in inputs)
    batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence")
    dynamic = {name: {0: batch, 1: sequence} for name in inputs}
    with _quiet_exporter(), torch.no_grad():
        torch.onnx.export(SentenceEmbedding(model).eval(), args, str(path), input_names=inputs,
                          output_names=["sentence_embedding"], dynamic_shapes=dynamic, dynamo=True,
                          external_data=False, verbose=False, opset_version=OPSET)


def _check(folder: Path, model: Any) -> float:
    """Largest |difference| between the export's vectors and sentence-transformers' on :data:`CHECK_TEXTS`."""
    reference = model.encode(list(CHECK_TEXTS), convert_to_numpy=True, normalize_embeddings=True,
                             show_progress_bar=False)
    onnx_encoder = OnnxEncoder.load(folder)
    together = onnx_encoder.encode(CHECK_TEXTS)
    alone = np.concatenate([onnx_encoder.encode([text]) for text in CHECK_TEXTS])
    if together.shape != reference.shape:
        raise OnnxUnavailable(f"the ONNX export gives vectors of shape {together.shape}, "
                              f"sentence-transformers {reference.shape}")
    return float(max(np.abs(together - reference).max(), np.abs(alone - reference).max()))


def _file_record(path: Path) -> dict[str, Any]:
    stat = path.stat()
    return {"bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": _sha256(path)}


def add_external_copy(folder: Path) -> bool:
    """Write the graph of the export in ``folder`` once more with its weights in a file of their own
    (``model-external.onnx`` and its ``.data``: onnxruntime maps that file instead of copying the weights, and a
    session takes a third of the CPU time), and record it in the manifest when it gives the very same vectors as
    ``model.onnx`` on :data:`CHECK_TEXTS` (together and one by one); True when it is recorded. Readers see the
    copy only once both files are in place and the manifest names them. OnnxUnavailable for an export that
    cannot be read."""
    import onnx

    folder = Path(folder)
    manifest = read_manifest(folder)
    work = Path(tempfile.mkdtemp(prefix=".external.", dir=folder))
    try:
        graph = onnx.load(str(folder / MODEL_FILE))
        onnx.save_model(graph, str(work / EXTERNAL_MODEL_FILE), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=EXTERNAL_DATA_FILE, size_threshold=1024)
        del graph
        os.chmod(work / EXTERNAL_DATA_FILE, 0o644)  # as model.onnx: a cache anyone on the account may read
        inline = OnnxEncoder.load(folder)
        external = OnnxEncoder(folder, manifest, inline._tokenizer)
        external._open(work / EXTERNAL_MODEL_FILE)
        same = np.array_equal(inline.encode(CHECK_TEXTS), external.encode(CHECK_TEXTS)) and all(
            np.array_equal(inline.encode([text]), external.encode([text])) for text in CHECK_TEXTS)
        if not same:
            return False
        os.replace(work / EXTERNAL_DATA_FILE, folder / EXTERNAL_DATA_FILE)
        os.replace(work / EXTERNAL_MODEL_FILE, folder / EXTERNAL_MODEL_FILE)
        manifest["external"] = {"files": {name: _file_record(folder / name)
                                          for name in (EXTERNAL_MODEL_FILE, EXTERNAL_DATA_FILE)},
                                "same_vectors_as": MODEL_FILE, "texts": len(CHECK_TEXTS)}
        _write_json(folder / MANIFEST, manifest)
        return True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def add_int8_copy(folder: Path) -> bool:
    """Write ``model-int8.onnx`` beside the export in ``folder``: onnxruntime's dynamic quantization of the graph's
    MatMul nodes (int8 weights, one scale per output channel; activations quantized at each run), which embeds a
    request in about 55% of the float graph's time (benchmarks/README.md, "Speed"). Its Attention nodes stay
    float: onnxruntime 1.32 cannot load the QAttention nodes their quantization makes. Recorded under ``int8`` in
    the manifest, and used, when every check text's vector (together and one by one) lies within
    :data:`indexes.onnx_encoder.INT8_MIN_COSINE` of the float graph's; a copy that fails is recorded as failed
    (with the cosine), so it is not made again with the same library versions. True when it is recorded as
    passed. OnnxUnavailable for an export that cannot be read."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder = Path(folder)
    manifest = read_manifest(folder)
    work = Path(tempfile.mkdtemp(prefix=".int8.", dir=folder))
    try:
        # the quantizer logs advice (pre-processing, opset) through logging and warns through warnings
        with warnings.catch_warnings(), _quiet_logging():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(folder / MODEL_FILE), str(work / "inline.onnx"), weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"], per_channel=True)
        # its weights in a file of their own, which onnxruntime maps: a session in 25-40 ms of CPU, not 115-125
        graph = onnx.load(str(work / "inline.onnx"))
        onnx.save_model(graph, str(work / INT8_MODEL_FILE), save_as_external_data=True,
                        all_tensors_to_one_file=True, location=INT8_DATA_FILE, size_threshold=1024)
        del graph
        (work / "inline.onnx").unlink()
        for name in (INT8_MODEL_FILE, INT8_DATA_FILE):
            os.chmod(work / name, 0o644)
        float_graph = OnnxEncoder.load(folder, int8=False)
        quantized = OnnxEncoder(folder, manifest, float_graph._tokenizer)
        quantized._open(work / INT8_MODEL_FILE)
        reference = float_graph.encode(CHECK_TEXTS)
        together = (quantized.encode(CHECK_TEXTS) * reference).sum(axis=1)
        alone = (np.concatenate([quantized.encode([text]) for text in CHECK_TEXTS]) * reference).sum(axis=1)
        least = float(min(together.min(), alone.min()))
        record: dict[str, Any] = {"passed": least >= INT8_MIN_COSINE, "min_cosine": round(least, 6),
                                  "threshold": INT8_MIN_COSINE, "texts": len(CHECK_TEXTS),
                                  "quantization": "dynamic, MatMul, int8 weights per output channel",
                                  "versions": _versions()}
        if record["passed"]:  # the data first: a reader sees the graph only with its weights in place
            for name in (INT8_DATA_FILE, INT8_MODEL_FILE):
                os.replace(work / name, folder / name)
            record["files"] = {name: _file_record(folder / name) for name in (INT8_MODEL_FILE, INT8_DATA_FILE)}
        manifest["int8"] = record
        _write_json(folder / MANIFEST, manifest)
        return bool(record["passed"])
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def _quiet_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def wants_int8(folder: Path, manifest: dict[str, Any]) -> bool:
    """True when the export in ``folder`` has no usable int8 copy and may get one: none recorded, one whose files
    are damaged or missing, or one that failed its check with other library versions."""
    record = manifest.get("int8")
    if not isinstance(record, dict):
        return True
    if record.get("passed") is True:
        return int8_file(folder, manifest) is None
    return record.get("versions") != _versions()


def _install(tmp: Path, out_dir: Path) -> None:
    """Move a finished export into place; an export another process finished first is kept."""
    old = None
    if out_dir.exists():
        old = out_dir.with_name(f"{out_dir.name}.old-{os.getpid()}")
        os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except OSError:  # another process put a complete export there in between
        shutil.rmtree(tmp, ignore_errors=True)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def export_onnx(model: str | os.PathLike[str] | None | Encoder, out_dir: Path) -> Path:
    """Export ``model`` to ONNX in ``out_dir``, check it against sentence-transformers, and return ``out_dir``.

    Parameters:
        model: None for the bundled all-MiniLM-L6-v2, a local sentence-transformers model folder, or an
            :class:`indexes.encoder.Encoder` whose already loaded model is reused.
        out_dir: the export folder (usually :func:`indexes.onnx_encoder.export_dir`); written in a temporary
            sibling folder and renamed into place, so readers never see half an export. An existing export
            there is replaced.

    A failed check still writes ``out_dir/onnx.json`` (passed false, the reason and the versions) and then
    raises OnnxUnavailable, so the failure is remembered; other failures (no runtime, an unsupported model, an
    exporter error) raise OnnxUnavailable and write nothing.
    """
    _runtime()
    encoder = model if isinstance(model, Encoder) else Encoder(None if model is None else os.fspath(model))
    model_id, source = model_identity(encoder._source)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    digest = model_hash(source)
    try:
        sentence_model = encoder._model()
    except ModelLoadError as exc:
        raise OnnxUnavailable(str(exc)) from None
    tokenizer, facts = _tokenizer_for(sentence_model)
    manifest: dict[str, Any] = {
        "format_version": EXPORT_FORMAT, "model_id": model_id, "model_hash": digest, "source": str(source),
        "dim": int(sentence_model.get_embedding_dimension()),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": _versions(), **facts,
    }
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    tmp.chmod(0o755)  # mkdtemp makes it private; the export is a cache anyone on the account may read
    try:
        try:
            _export_graph(sentence_model, tokenizer, facts["inputs"], tmp / MODEL_FILE)
        except Exception as exc:  # the exporter raises many kinds of errors for unsupported operations
            reason = " ".join(str(exc).split())[:300]
            raise OnnxUnavailable(f"torch.onnx.export failed for {model_id!r} ({type(exc).__name__}: {reason})") \
                from None
        tokenizer.save(str(tmp / TOKENIZER_FILE))
        manifest["files"] = {name: {"bytes": (tmp / name).stat().st_size, "mtime_ns": (tmp / name).stat().st_mtime_ns,
                                    "sha256": _sha256(tmp / name)} for name in (MODEL_FILE, TOKENIZER_FILE)}
        manifest["check"] = {"passed": True, "tolerance": TOLERANCE, "texts": len(CHECK_TEXTS)}
        _write_json(tmp / MANIFEST, manifest)
        max_diff = _check(tmp, sentence_model)
        passed = max_diff <= TOLERANCE
        manifest["check"].update(passed=passed, max_abs_diff=max_diff)
        if not passed:
            manifest["check"]["reason"] = (f"max abs difference {max_diff:.2e} from sentence-transformers exceeds "
                                           f"{TOLERANCE:.0e}")
            for name in (MODEL_FILE, TOKENIZER_FILE):
                (tmp / name).unlink()
        _write_json(tmp / MANIFEST, manifest)
        if passed:
            add_external_copy(tmp)
            with contextlib.suppress(ImportError, OSError, ValueError, RuntimeError):
                add_int8_copy(tmp)  # without it requests are embedded by the float graph
        _install(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not passed:
        raise OnnxUnavailable(f"the ONNX export of {model_id!r} failed its check ({manifest['check']['reason']})")
    return out_dir


def ensure_onnx_encoder(
    model: str | os.PathLike[str] | None | Encoder = None, *, cache_dir: Path | None = None, threads: int = 1,
    int8: bool = True, int8_threads: int | None = None,
) -> OnnxEncoder:
    """Return an :class:`OnnxEncoder` for ``model``, exporting and checking it first if the cache has none.

    May import torch and load the model (an index build already has); a cached export is reused, and a
    recorded failed check is not repeated while torch and onnxruntime keep the versions it was made with.
    Raises OnnxUnavailable with a one-line reason when the onnxruntime encoder cannot be used. ``threads``: the
    session's intra-op threads (:class:`indexes.onnx_encoder.OnnxEncoder`); ``int8``: requests by the export's
    int8 copy (:func:`add_int8_copy`, made here for an export made before it existed), on ``int8_threads``.
    """
    _runtime()
    cache_dir = default_cache_dir() if cache_dir is None else Path(cache_dir)
    source = model._source if isinstance(model, Encoder) else None if model is None else os.fspath(model)
    model_id, folder = model_identity(source)
    out_dir = cache_dir / model_hash(folder, cache_dir=cache_dir)
    if (out_dir / MANIFEST).exists():
        try:
            found = OnnxEncoder.load(out_dir, model_id=model_id, threads=threads, int8=int8, int8_threads=int8_threads)
        except OnnxUnavailable:
            if _failed_with_these_versions(out_dir):
                raise
        else:
            upgraded = False
            if found.model_path().name != EXTERNAL_MODEL_FILE:  # an export made before the copy existed
                with contextlib.suppress(OnnxUnavailable, OSError, ValueError):
                    upgraded = add_external_copy(out_dir)
            if int8 and wants_int8(out_dir, read_manifest(out_dir)):  # nor the int8 one
                with contextlib.suppress(OnnxUnavailable, ImportError, OSError, ValueError, RuntimeError):
                    upgraded = add_int8_copy(out_dir) or upgraded
            if not upgraded:
                return found
            return OnnxEncoder.load(out_dir, model_id=model_id, threads=threads, int8=int8, int8_threads=int8_threads)
    export_onnx(model if isinstance(model, Encoder) else source, out_dir)
    return OnnxEncoder.load(out_dir, model_id=model_id, threads=threads, int8=int8, int8_threads=int8_threads)


def _failed_with_these_versions(folder: Path) -> bool:
    """True when the export in ``folder`` failed its check with the installed exporter and runtime."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict) or not isinstance(manifest.get("check"), dict):
        return False
    if manifest["check"].get("passed") is not False:
        return False
    recorded = manifest.get("versions") or {}
    return all(recorded.get(name) == version for name, version in _versions().items())
