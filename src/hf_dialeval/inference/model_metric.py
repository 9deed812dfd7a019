"""A metric that runs a model (:class:`ModelMetric`, the base of every learned metric and of the similarity floors),
and what running a model over items needs: the device, the precision (autocast), encoding a context and a response
within the token limit, and length-sorted padded batches."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from transformers import DataCollatorWithPadding, PreTrainedModel, PreTrainedTokenizerBase
from transformers.pytorch_utils import Conv1D

from hf_dialeval.errors import OptionError
from hf_dialeval.inference.metric import DialogueMetric, check_finite, length_sorted_batches
from hf_dialeval.inference.precision import PRECISIONS, SlowPrecisionWarning, cpu_bf16_instructions, precision_name


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else the first CUDA GPU when there is one, else the CPU. A device that is not a
    torch device name, or one this machine does not have, raises :class:`~hf_dialeval.errors.OptionError` saying so."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError) as error:
        raise OptionError(f"device {device!r} is not a torch device: use e.g. cpu, cuda or cuda:0") from error
    if resolved.type == "cuda" and (not torch.cuda.is_available()
                                    or (resolved.index or 0) >= torch.cuda.device_count()):
        raise OptionError(f"device {device!r} is not available here ({torch.cuda.device_count()} CUDA GPUs): use cpu")
    if resolved.type == "mps" and not torch.backends.mps.is_available():
        raise OptionError(f"device {device!r} is not available here: use cpu")
    return resolved


#: Words past the most a pair can keep of a text, and this margin, are cut before tokenizing. A pair keeps at most
#: ``max_length`` tokens of its context (the last) or its response (the first), and every word gives at least one
#: token of its own, so those words hold every token kept; cut, a 1 MB utterance is not tokenized whole once per pair
#: it is in (a training batch pairs each context with every candidate: past 11 GB on long conversations). The margin
#: keeps the word at the cut, whose spacing changes, out of the tokens kept.
WORD_MARGIN = 8


def last_words(utterances: Sequence[str], count: int) -> list[str]:
    """The utterances holding the last ``count`` whitespace-separated words, the oldest of them cut to its last
    words, each with its own spacing."""
    kept: list[str] = []
    for utterance in reversed(utterances):
        if count == 0:
            break
        starts = [match.start() for match in re.finditer(r"\S+", utterance)]
        if len(starts) >= count:
            kept.append(utterance[starts[-count]:])
            break
        kept.append(utterance)
        count -= len(starts)
    return kept[::-1]


def first_words(text: str, count: int) -> str:
    """``text``'s first ``count`` whitespace-separated words, with its own spacing; the text itself with no more."""
    match = re.match(r"\s*(?:\S+\s+){%d}" % count, text)  # the words, and the spacing after the last
    return text[:match.end()].rstrip() if match and match.end() < len(text.rstrip()) else text


def encode_context_response(
    tokenizer: PreTrainedTokenizerBase, contexts: Sequence[Sequence[str]], responses: Sequence[str], max_length: int,
    utterance_separator: str | None = None,
) -> tuple[dict[str, list[list[int]]], list[bool]]:
    """Encode a batch of ``[CLS] context [SEP] response [SEP]`` pairs (the tokenizer's own pair format)
    within ``max_length`` tokens each.

    The context's utterances are joined by ``utterance_separator`` (default: the tokenizer's separator
    token). When a pair is too long its oldest context tokens go first, never the response; only a
    response that alone cannot fit is cut, at its end. Returns the (unpadded) encodings and, per pair,
    whether anything was cut. Needs a fast tokenizer (it reads ``sequence_ids``).
    """
    separator = utterance_separator if utterance_separator is not None else f" {tokenizer.sep_token} "
    words = max_length + WORD_MARGIN
    # each distinct text cut once (a training batch repeats every context and candidate)
    joined = {key: separator.join(last_words(key, words)) for key in dict.fromkeys(map(tuple, contexts))}
    cut = {response: first_words(response, words) for response in dict.fromkeys(responses)}
    encoding = tokenizer([joined[tuple(c)] for c in contexts], [cut[r] for r in responses], truncation=False,
                         verbose=False)
    keys = [k for k in encoding.keys() if k != "overflow_to_sample_mapping"]
    batch: dict[str, list[list[int]]] = {key: [] for key in keys}
    truncated = []
    for row in range(len(responses)):
        sequence_ids = encoding.sequence_ids(row)
        excess = len(sequence_ids) - max_length
        drop: set[int] = set()
        if excess > 0:
            context_positions = [p for p, s in enumerate(sequence_ids) if s == 0]
            drop.update(context_positions[:excess])
            if len(drop) < excess:
                response_positions = [p for p, s in enumerate(sequence_ids) if s == 1]
                drop.update(response_positions[len(response_positions) - (excess - len(drop)) :])
        for key in keys:
            values = encoding[key][row]
            batch[key].append([v for p, v in enumerate(values) if p not in drop] if drop else list(values))
        truncated.append(bool(drop))
    return batch, truncated


def padded_batches(
    encoding: Mapping[str, Sequence[Sequence[int]]], batch_size: int, collator: DataCollatorWithPadding,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    """Pre-tokenised inputs (one list of ids per input, under each key) in length-sorted batches (little
    padding), padded by ``collator``; each batch comes with the input indices it holds."""
    for indices in length_sorted_batches([len(ids) for ids in encoding["input_ids"]], batch_size):
        yield indices, collator([{key: values[i] for key, values in encoding.items()} for i in indices])


def pad_rows(rows: Sequence[Mapping[str, Sequence[int]]], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-pad token rows into tensors: ``input_ids`` with ``pad_token_id``, ``labels`` with -100 (ignored by every
    loss), every other key with 0 (masks)."""
    length = max(len(row["input_ids"]) for row in rows)
    fill = {"input_ids": pad_token_id, "labels": -100}
    return {key: torch.tensor([list(row[key]) + [fill.get(key, 0)] * (length - len(row[key])) for row in rows])
            for key in rows[0]}


def resolve_dtype(dtype: str | torch.dtype | None) -> torch.dtype:
    """The torch dtype of a precision: ``fp32``, ``bf16`` or ``fp16`` (or ``float32``, ``bfloat16``, ``float16``,
    or the torch dtype itself); ``None`` is fp32."""
    return torch.float32 if dtype is None else getattr(torch, PRECISIONS[precision_name(dtype)])


def default_precision(config: Any, device: torch.device) -> str | None:
    """The precision a model computes in when none is asked for: its config's ``scoring_dtype`` where ``device``
    computes it natively, else fp32 (``None``): bf16 emulated on a CPU without bf16 instructions runs slower."""
    preferred = getattr(config, "scoring_dtype", None)
    if preferred in (None, "fp32") or (device.type == "cpu" and not cpu_bf16_instructions()):
        return None
    return preferred


def autocast(device: torch.device, dtype: torch.dtype) -> torch.autocast:
    """Mixed precision for scoring: matrix products in ``dtype`` under ``torch.autocast`` (weights stay as loaded,
    reductions and softmax in fp32 where autocast keeps them); off for fp32. bf16 on a CPU that reports no bf16
    instructions warns (:class:`~hf_dialeval.inference.precision.SlowPrecisionWarning`, once): it runs slower than fp32 there."""
    if device.type == "cpu" and dtype == torch.bfloat16 and cpu_bf16_instructions() == ():
        warnings.warn("bf16 on this CPU, which has no bf16 instructions (avx512_bf16, amx_bf16 or bf16 in "
                      "/proc/cpuinfo), is emulated and was measured 2.7-3.6x slower than fp32: use fp32 here",
                      SlowPrecisionWarning, stacklevel=2)
    return torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)


@torch.inference_mode()
def batched_forward(
    forward: Callable[..., torch.Tensor], encoding: Mapping[str, Sequence[Sequence[int]]], batch_size: int,
    collator: DataCollatorWithPadding, device: torch.device | str, dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """Run ``forward(**batch) -> (batch, ...)`` over pre-tokenised inputs in :func:`padded_batches`, under
    :func:`autocast` to ``dtype``, and return the rows in the input order, in fp32 on the CPU."""
    if not encoding["input_ids"]:
        raise ValueError("no inputs to run")
    device = torch.device(device)
    rows: list[torch.Tensor | None] = [None] * len(encoding["input_ids"])
    # one autocast context for every batch: it casts each weight to ``dtype`` once, not once a batch
    with autocast(device, dtype):
        for indices, batch in padded_batches(encoding, batch_size, collator):
            output = forward(**{key: value.to(device) for key, value in batch.items()}).float().cpu()
            for position, index in enumerate(indices):
                rows[index] = output[position]
    return torch.stack(rows)


def check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise OptionError(f"batch_size must be a positive whole number, not {batch_size!r}")


def computed_dtype(model: PreTrainedModel, dtype: torch.dtype = torch.float32) -> str:
    """The precision ``model`` computes in under :func:`autocast` to ``dtype`` (the autocast dtype, or the weights'
    own without autocast), e.g. ``"float32"``."""
    return str(dtype if dtype != torch.float32 else model.dtype).removeprefix("torch.")


def store_linear_weights_in(model: torch.nn.Module, parts: Sequence[torch.nn.Module], dtype: torch.dtype) -> None:
    """Store the weights and biases of the linear layers (GPT-2's ``Conv1D`` too) of ``parts`` of ``model`` in
    ``dtype``, the precision :func:`autocast` casts them to at every call: the products are the same, and each weight
    is cast once, not once a forward pass (autocast keeps no cast weight under ``torch.inference_mode``; SmolLM2 cast
    its weights at every batch for a sixth of HolisticEval's scoring time). A weight that an embedding of ``model``
    shares (a tied LM head) gets its own copy: the embedding keeps reading fp32."""
    embedded = {id(layer.weight) for layer in model.modules() if isinstance(layer, torch.nn.Embedding)}
    for layer in (layer for part in parts for layer in part.modules()):
        if not isinstance(layer, (torch.nn.Linear, Conv1D)) or layer.weight.dtype != torch.float32:
            continue
        for name, parameter in list(layer.named_parameters(recurse=False)):
            if id(parameter) in embedded:
                setattr(layer, name, torch.nn.Parameter(parameter.detach().to(dtype), requires_grad=False))
            else:
                parameter.data = parameter.data.to(dtype)


def model_settings(model: PreTrainedModel, max_seq_length: int, dtype: torch.dtype = torch.float32) -> dict[str, Any]:
    """The settings of a model metric that change its scores, for the signature: ``dtype`` is the precision it
    computes in (:func:`computed_dtype`)."""
    return {"dtype": computed_dtype(model, dtype), "max_seq_length": max_seq_length, "device": str(model.device)}


class ModelMetric(DialogueMetric):
    """A metric that runs a model: the model in eval mode on its device, its tokenizer, the batch size, the
    precision it computes in (``dtype``: see :func:`resolve_dtype`) and a padding collator, all of which
    :meth:`forward_rows` runs with. ``max_seq_length``: how many tokens an input may hold (the model's config's,
    unless a subclass says otherwise). :meth:`load` is the metric's factory (what ``load_metric`` calls)."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None, dtype: str | torch.dtype | None = None) -> None:
        check_batch_size(batch_size)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype if dtype is not None else default_precision(model.config, self.device))
        self.model = model.to(self.device).eval()
        self.models = [self.model]
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.checkpoint = checkpoint
        self.collator = DataCollatorWithPadding(tokenizer, return_tensors="pt")

    @classmethod
    def load(cls, checkpoint: str | None = None, device: str | None = None, batch_size: int = 32,
             dtype: str | torch.dtype | None = None, **options: Any) -> ModelMetric:
        """The metric with the model of ``checkpoint`` (a Hub id or folder checked by ``load_metric``; ``None``: its
        shipped default), computing on ``device`` in ``dtype``; ``options`` are the metric's own (its registry
        entry's ``options``)."""
        from hf_dialeval.modeling.loading import load_checkpoint

        model, tokenizer = load_checkpoint(cls.name, checkpoint)
        return cls(model, tokenizer, device=device, batch_size=batch_size, checkpoint=checkpoint, dtype=dtype,
                   **options)

    @property
    def max_seq_length(self) -> int:
        return self.model.config.max_seq_length

    def forward_rows(self, forward: Callable[..., torch.Tensor], encoding: Mapping[str, Sequence[Sequence[int]]],
                     batch_size: int | None = None) -> torch.Tensor:
        """:func:`batched_forward` with this metric's collator, device and precision, and its batch size unless
        ``batch_size`` is given."""
        return batched_forward(forward, encoding, batch_size or self.batch_size, self.collator, self.device,
                               self.dtype)

    def autocast_modules(self, model: PreTrainedModel) -> list[torch.nn.Module]:
        """The parts of ``model`` that compute under :func:`autocast`: its backbone's body (a score head runs in its
        own fp32, :func:`~hf_dialeval.modeling.base.run_head`)."""
        return [getattr(model, "backbone", model).base_model]  # a metric model's backbone; a floor's encoder itself

    def store_weights_in_compute_precision(self) -> None:
        """Store the linear weights of each model's :meth:`autocast_modules` in the precision the metric computes in
        (:func:`store_linear_weights_in`; nothing in fp32). Only for models the metric owns (``load_metric`` calls
        it): a model that a Trainer still trains keeps its fp32 weights."""
        if self.dtype != torch.float32:
            for model in self.models:
                store_linear_weights_in(model, self.autocast_modules(model), self.dtype)

    def check_finite(self, values: Sequence[float | Sequence[float]]) -> None:
        """:func:`~hf_dialeval.inference.metric.check_finite` of this metric's model outputs, one number or a list of
        them per item (numbered as the caller of the method that runs the model numbers them). The checkpoint is
        named as the user gave it, else by the folder the model was loaded from (the shipped default's)."""
        checkpoint = self.checkpoint or self.model.name_or_path or "none (a model built in memory)"
        check_finite(values, self.name, checkpoint, computed_dtype(self.model, self.dtype))

    def settings(self) -> dict[str, Any]:
        return model_settings(self.model, self.max_seq_length, self.dtype)
