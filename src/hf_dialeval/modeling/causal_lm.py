"""A causal LM's vocabulary projection, for the few positions a metric reads.

Scoring a response reads the LM's prediction at the response's tokens only; projecting every position of a batch
onto the vocabulary costs memory in proportion to it (Gemma 3's is 262k tokens: a batch of 64 inputs of 128 tokens
holds 8.6 GB of fp32 logits). The metrics run the LM's base model, pick the positions, and project those alone.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel


def prediction_head(lm: PreTrainedModel) -> nn.Module:
    """The LM's whole prediction head: BERT's ``cls`` (its transform, then the projection) for an encoder made a
    decoder; the output layer of GPT-2, Llama or Gemma."""
    return lm.cls if hasattr(lm, "cls") else lm.get_output_embeddings()


def soft_cap(config: PreTrainedConfig, logits: torch.Tensor) -> torch.Tensor:
    """The LM's final soft-capping of its logits, where its config has one (Gemma 2's; off in Gemma 3)."""
    cap = getattr(config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits
