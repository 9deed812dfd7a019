"""A language model's prediction head, for the few positions a metric reads.

Scoring a response reads the LM's prediction at the response's tokens only (a causal LM) or at its masked keywords (a
masked LM); projecting every position of a batch onto the vocabulary costs memory in proportion to it (Gemma 3's
is 262k tokens: a batch of 64 inputs of 128 tokens holds 8.6 GB of fp32 logits). The metrics run the LM's base
model, pick the positions, and project those alone; where the positions are many (long responses scored whole), a
chunk of them at a time.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import PreTrainedConfig, PreTrainedModel

from hf_dialeval.modeling.base import run_head


def prediction_head(lm: PreTrainedModel) -> nn.Module:
    """The LM's whole prediction head: BERT's ``cls`` (its transform, then the projection), RoBERTa's and MPNet's
    ``lm_head`` (dense, norm, projection), the output layer of GPT-2, Llama or Gemma (their ``lm_head``)."""
    for name in ("cls", "lm_head"):
        if hasattr(lm, name):
            return getattr(lm, name)
    return lm.get_output_embeddings()


#: The most logits :func:`target_log_probs` holds at once (positions × vocabulary): a chunk of 256 positions for Gemma
#: 3's 262k tokens, 1,365 for SmolLM2's 49k; about 0.7 GB with their float32 log-softmax, however long the batch.
MAX_LOGITS = 2**26

#: The most logits one float32 log-softmax reads at once (rows × vocabulary), so that they stay in the CPU's cache
#: while it reads them twice: on SmolLM2's 49k tokens, slices of 32 and 64 rows ran it 4.3x and 4.5x faster than
#: 1,365 rows at once, to the same values.
SOFTMAX_LOGITS = 2**21


def target_log_probs(lm: PreTrainedModel, hidden: torch.Tensor, targets: torch.Tensor,
                     full_precision: bool = False) -> torch.Tensor:
    """``log P(target)`` at each row of ``hidden`` (positions × hidden size, the LM's last hidden states) for the
    token ``targets`` gives it, the log-softmax in float32 (:data:`SOFTMAX_LOGITS` logits at a time). The rows are
    projected onto the vocabulary :data:`MAX_LOGITS` logits at a time, so memory stays bounded whatever the batch,
    its lengths and the vocabulary; in training too: a chunk's logits are not kept for the backward pass but computed again there
    (``torch.utils.checkpoint``), else every chunk's would be held at once (Dial-M's adapt route on FED: 8.5 GB
    whole-run peak with them held, 7.8 GB without). ``full_precision`` projects outside autocast, in the head's own dtype (fp32 as
    loaded)."""
    head, chunk = prediction_head(lm), max(1, MAX_LOGITS // lm.config.vocab_size)
    step = max(1, SOFTMAX_LOGITS // lm.config.vocab_size)
    project = (lambda rows: run_head(head, rows)) if full_precision else head

    def chunk_log_probs(rows: torch.Tensor, chunk_targets: torch.Tensor) -> torch.Tensor:
        logits = soft_cap(lm.config, project(rows))
        return torch.cat([torch.log_softmax(logits[start:start + step].float(), dim=-1).gather(
            -1, chunk_targets[start:start + step].unsqueeze(-1)).squeeze(-1) for start in range(0, len(rows), step)])

    training = torch.is_grad_enabled() and (hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
    parts = [checkpoint(chunk_log_probs, hidden[start:start + chunk], targets[start:start + chunk],
                        use_reentrant=False) if training else
             chunk_log_probs(hidden[start:start + chunk], targets[start:start + chunk])
             for start in range(0, len(hidden), chunk)]
    return torch.cat(parts) if parts else hidden.new_zeros(0, dtype=torch.float32)


def soft_cap(config: PreTrainedConfig, logits: torch.Tensor) -> torch.Tensor:
    """The LM's final soft-capping of its logits, where its config has one (Gemma 2's; off in Gemma 3; none in a
    masked LM)."""
    cap = getattr(config, "final_logit_softcapping", None)
    return torch.tanh(logits / cap) * cap if cap else logits
