"""Logical self-consistency of a response (HolisticEval, Pang et al. 2020, §3.4), from an NLI model.

A dialogue agent should not contradict what it said before. HolisticEval measures this with a ternary NLI
classifier trained on MNLI (contradiction / neutral / entailment): each prior utterance of the responding
speaker is the premise, the response the hypothesis, and the score is ``1 − mean contradiction probability``
over those pairs (1: consistent with everything the speaker said, 0: contradicts all of it).

* Speakers alternate, so the response's speaker said ``context[-2]``, ``context[-4]``, … (``context[-1]`` is
  the other speaker's query). Empty prior utterances are skipped; an item with no prior utterance of the same
  speaker (a context shorter than two utterances, or only empty ones) gets ``math.nan``: not applicable.
* Which output column is "contradiction" is read from the checkpoint's ``config.id2label`` (checkpoints order
  their labels differently: ``roberta-large-mnli`` has ``CONTRADICTION`` first, others have it last).
* No NLI checkpoint exists offline: the default, :data:`NLI_DEFAULT`, is a Hub id; any sequence-classification
  NLI checkpoint can be given by path (weights from safetensors only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    PretrainedConfig,
)

from hf_dialeval.modeling.checkpoints import CheckpointError, from_pretrained, resolve_backbone_path
from hf_dialeval.data.model import is_blank
from hf_dialeval.inference.model_metric import batched_forward, check_batch_size, encode_context_response, resolve_device, resolve_dtype

#: The NLI model of the paper's setup (an MNLI classifier), as a Hub id.
NLI_DEFAULT = "roberta-large-mnli"
#: Label names (lower-cased) that mean "the hypothesis contradicts the premise".
CONTRADICTION_LABELS = ("contradiction", "contradict")
#: The most tokens a premise–hypothesis pair may hold (the tokenizer's own limit, when lower).
MAX_PAIR_TOKENS = 512


def contradiction_label_index(config: PretrainedConfig) -> int:
    """The output column of the contradiction class, from ``config.id2label`` (matched case-insensitively
    against :data:`CONTRADICTION_LABELS`). Raises ``ValueError`` when no label, or more than one, matches."""
    labels = {int(index): str(label) for index, label in (config.id2label or {}).items()}
    matches = [index for index, label in labels.items() if label.strip().lower() in CONTRADICTION_LABELS]
    if len(matches) != 1:
        raise ValueError(
            f"NLI checkpoint {config.name_or_path or '(unnamed)'} has labels {labels}: logical self-consistency "
            "needs an NLI classifier with exactly one label named 'contradiction' in config.id2label")
    return matches[0]


class NLIConsistencyScorer:
    """Logical self-consistency of turn-level items with an NLI sequence classifier (see the module docstring).

    Args:
        checkpoint: a Hub id (default in the CLI: :data:`NLI_DEFAULT`) or a folder of a sequence-classification
            NLI model whose ``id2label`` names a contradiction class.
        device: torch device; default: the first CUDA GPU when there is one, else the CPU.
        batch_size: premise–hypothesis pairs per forward pass.
        dtype: the precision it computes in (``fp32``, the default, ``bf16`` or ``fp16``; see
            :func:`hf_dialeval.modeling.base.resolve_dtype`).
    """

    def __init__(self, checkpoint: str, device: str | None = None, batch_size: int = 32,
                 dtype: str | torch.dtype | None = None) -> None:
        check_batch_size(batch_size)
        try:
            path = resolve_backbone_path(checkpoint)
        except CheckpointError as error:
            raise CheckpointError(
                f"NLI checkpoint {checkpoint!r} cannot be loaded ({error}); no NLI model exists offline: give "
                "--nli-checkpoint (nli_checkpoint) <folder of an MNLI model such as roberta-large-mnli>") from None
        config = AutoConfig.from_pretrained(path)
        config.name_or_path = checkpoint
        self.contradiction_index = contradiction_label_index(config)
        self.checkpoint = checkpoint
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype)
        self.model = from_pretrained(AutoModelForSequenceClassification, path).to(self.device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.max_length = min(self.tokenizer.model_max_length, MAX_PAIR_TOKENS)
        self.batch_size = batch_size
        self.collator = DataCollatorWithPadding(self.tokenizer, return_tensors="pt")

    def _contradiction(self, **batch: Any) -> torch.Tensor:
        logits = self.model(**batch).logits.float()
        return logits.softmax(dim=-1)[:, self.contradiction_index]

    def contradiction_probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[float]:
        """P(contradiction | premise, hypothesis) of each pair, in the input order (length-sorted batches). A pair
        too long for the model loses premise tokens first, from its start; the hypothesis is cut only when it
        alone cannot fit."""
        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses: give one premise per "
                             "hypothesis")
        if not premises:
            return []
        encoding, _ = encode_context_response(self.tokenizer, [[premise] for premise in premises], hypotheses,
                                              self.max_length)
        probabilities = batched_forward(self._contradiction, encoding, self.batch_size, self.collator, self.device,
                                        self.dtype)
        return probabilities.tolist()

    def score(self, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> list[float]:
        """``1 − mean P(contradiction)`` of each response against every non-empty prior utterance of its speaker
        (``context[-2]``, ``context[-4]``, …: speakers alternate), ``math.nan`` where there is none. The pairs of
        all items run through the model together."""
        if len(contexts) != len(responses):
            raise ValueError(f"{len(contexts)} contexts but {len(responses)} responses: give one context per response")
        premises: list[str] = []
        hypotheses: list[str] = []
        owners: list[int] = []
        for item, (context, response) in enumerate(zip(contexts, responses)):
            for utterance in context[-2::-2]:
                if not is_blank(utterance):
                    premises.append(utterance)
                    hypotheses.append(response)
                    owners.append(item)
        probabilities: list[list[float]] = [[] for _ in responses]
        for item, probability in zip(owners, self.contradiction_probabilities(premises, hypotheses)):
            probabilities[item].append(probability)
        return [1.0 - sum(p) / len(p) if p else math.nan for p in probabilities]
