"""A language model's prediction head, for the few positions a metric reads.

Scoring a response reads the LM's prediction at the response's tokens only (a causal LM) or at its masked keywords (a
masked LM); projecting every position of a batch onto the vocabulary costs memory in proportion to it (Gemma 3's
is 262k tokens: a batch of 64 inputs of 128 tokens holds 8.6 GB of fp32 logits). The metrics run the LM's base
model, pick the positions, and project those alone.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel


def prediction_head(lm: PreTrainedModel) -> nn.Module:
    """The LM's whole prediction head: BERT's ``cls`` (its transform, then the projection), RoBERTa's and MPNet's
    ``lm_head`` (dense, norm, projection), the output layer of GPT-2, Llama or Gemma (their ``lm_head``)."""
    for name in ("cls", "lm_head"):
        if hasattr(lm, name):
            return getattr(lm, name)
    return lm.get_output_embeddings()


def soft_cap(config: PreTrainedConfig, logits: torch.Tensor) -> torch.Tensor:
    """The LM's final soft-capping of its logits, where its config has one (Gemma 2's; off in Gemma 3; none in a
    masked LM)."""
    cap = getattr(config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits
