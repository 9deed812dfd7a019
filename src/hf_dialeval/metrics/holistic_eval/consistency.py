"""Logical self-consistency of a response (HolisticEval, Pang et al. 2020, §3.4), from an NLI model.

A dialogue agent should not contradict what it said before. HolisticEval measures this with a ternary NLI
classifier trained on MNLI (contradiction / neutral / entailment): each prior utterance of the responding
speaker is the premise, the response the hypothesis, and the score is ``1 − mean contradiction probability``
over those pairs (1: consistent with everything the speaker said, 0: contradicts all of it).

* Speakers alternate, so the response's speaker said ``context[-2]``, ``context[-4]``, … (``context[-1]`` is
  the other speaker's query). Empty prior utterances are skipped; an item with no prior utterance of the same
  speaker (a context shorter than two utterances, or only empty ones) gets ``math.nan``: not applicable.
* Which output column is "contradiction" is read from the checkpoint's ``config.id2label`` (checkpoints order
  their labels differently: ``roberta-large-mnli`` has ``CONTRADICTION`` first, others have it last); the classifier
  is :class:`~hf_dialeval.auxiliary.classifiers.PairClassifier`, which FineD-Eval's pair construction uses too.
* No NLI checkpoint exists offline: the default, :data:`NLI_DEFAULT`, is a Hub id; any sequence-classification
  NLI checkpoint can be given by path (weights from safetensors only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from hf_dialeval.auxiliary.classifiers import PairClassifier
from hf_dialeval.data.model import is_blank
from hf_dialeval.inference.metric import check_finite
from hf_dialeval.inference.model_metric import computed_dtype
from hf_dialeval.modeling.checkpoints import CheckpointError

#: The NLI model of the paper's setup (an MNLI classifier), as a Hub id.
NLI_DEFAULT = "roberta-large-mnli"


class NLIConsistencyScorer:
    """Logical self-consistency of turn-level items with an NLI sequence classifier (see the module docstring).

    Args:
        checkpoint: a Hub id (the paper's: :data:`NLI_DEFAULT`) or a folder of a sequence-classification NLI model
            whose ``id2label`` names a contradiction class.
        device: torch device; default: the first CUDA GPU when there is one, else the CPU.
        batch_size: premise–hypothesis pairs per forward pass.
        dtype: the precision it computes in (``fp32``, the default, ``bf16`` or ``fp16``).
    """

    def __init__(self, checkpoint: str, device: str | None = None, batch_size: int = 32,
                 dtype: str | torch.dtype | None = None) -> None:
        try:
            self.nli = PairClassifier(checkpoint, "contradiction", device=device, batch_size=batch_size, dtype=dtype)
        except CheckpointError as error:
            raise CheckpointError(f"{error} (--nli-checkpoint, nli_checkpoint: an MNLI model such as "
                                  f"{NLI_DEFAULT})") from None
        self.checkpoint = checkpoint

    def contradiction_probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]) -> list[float]:
        """P(contradiction | premise, hypothesis) of each pair, in the input order."""
        return self.nli(premises, hypotheses)

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
        # before the mean, whose nan means "no earlier utterance of the speaker"
        check_finite(probabilities, "holistic-eval consistency", f"NLI {self.checkpoint}",
                     computed_dtype(self.nli.model, self.nli.dtype))
        return [1.0 - sum(p) / len(p) if p else math.nan for p in probabilities]
