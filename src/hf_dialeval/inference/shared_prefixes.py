"""A causal LM's log-probabilities of continuations that share a prefix, the prefix run once.

Turn-level benchmarks score several systems' replies to one context, and comparing systems scores every system on
the same contexts: a context's hidden states do not depend on the reply after it, so they are computed once and each
reply reads them from the LM's key–value cache. The result equals running each prefix and continuation as one
sequence, up to float rounding.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from transformers import DynamicCache, PreTrainedModel

from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.inference.model_metric import pad_rows
from hf_dialeval.modeling.lm_head import target_log_probs


#: The most prefix positions (padded) whose keys and values are held at once: 377 MB for SmolLM2-135M in bf16. The
#: continuations of so many prefixes are sorted by length together, so that their batches carry little padding.
CACHED_POSITIONS = 2**14


def continuation_log_probs(lm: PreTrainedModel, prefixes: Sequence[Sequence[int]],
                           continuations: Sequence[tuple[int, Sequence[int]]], batch_size: int,
                           pad_token_id: int) -> list[list[float]]:
    """Per ``(prefix index, token ids)`` of ``continuations``, ``log P(token | its prefix and the tokens before it)``
    of each of its tokens, under the causal LM ``lm``: each prefix (at least one token) runs once, in length-sorted
    batches of ``batch_size``, and the continuations run in length-sorted batches of ``batch_size`` over the cached
    keys and values of up to :data:`CACHED_POSITIONS` prefix positions at a time."""
    results: list[list[float]] = [[] for _ in continuations]
    by_prefix: dict[int, list[int]] = {}
    for index, (prefix, _) in enumerate(continuations):
        by_prefix.setdefault(prefix, []).append(index)
    if not by_prefix:
        return results
    order = sorted(by_prefix, key=lambda prefix: -len(prefixes[prefix]))
    window_size = max(batch_size, CACHED_POSITIONS // len(prefixes[order[0]]))
    for start in range(0, len(order), window_size):
        window = order[start : start + window_size]
        cache, last_hidden, prefix_mask = _run_prefixes(lm, [prefixes[prefix] for prefix in window], batch_size,
                                                        pad_token_id)
        position = {prefix: row for row, prefix in enumerate(window)}
        members = [index for prefix in window for index in by_prefix[prefix]]
        for batch in length_sorted_batches([len(continuations[index][1]) for index in members], batch_size):
            indices = [members[i] for i in batch]
            rows = torch.tensor([position[continuations[index][0]] for index in indices])
            for index, values in zip(indices, _continue(lm, cache, last_hidden, prefix_mask, rows, [
                    continuations[index][1] for index in indices], pad_token_id)):
                results[index] = values
    return results


def _run_prefixes(lm: PreTrainedModel, prefixes: Sequence[Sequence[int]], batch_size: int, pad_token_id: int
                  ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor, torch.Tensor]:
    """``prefixes`` (longest first) run in batches of ``batch_size``: each layer's keys and values, the last
    position's hidden state and the attention mask, every prefix padded on the left to the longest. On the left,
    every prefix ends at the last position, where a sliding-window layer's cache keeps the keys its continuation
    reads."""
    device, width = lm.device, len(prefixes[0])
    layers: list[tuple[list[torch.Tensor], list[torch.Tensor]]] = []
    last_hidden, masks = [], []
    for start in range(0, len(prefixes), batch_size):
        rows = prefixes[start : start + batch_size]
        padded = pad_rows([{"input_ids": row[::-1], "attention_mask": [1] * len(row)} for row in rows], pad_token_id)
        padded = {key: value.flip(1).to(device) for key, value in padded.items()}
        output = lm.base_model(**padded, position_ids=(padded["attention_mask"].cumsum(-1) - 1).clamp(min=0),
                               use_cache=True)
        extra = width - padded["input_ids"].shape[1]
        for layer, (keys, values) in enumerate((layer.keys, layer.values) for layer in output.cache.layers):
            if layer == len(layers):
                layers.append(([], []))
            layers[layer][0].append(F.pad(keys, (0, 0, extra, 0)))
            layers[layer][1].append(F.pad(values, (0, 0, extra, 0)))
        last_hidden.append(output.last_hidden_state[:, -1])
        masks.append(F.pad(padded["attention_mask"], (extra, 0)))
    return [(torch.cat(keys), torch.cat(values)) for keys, values in layers], torch.cat(last_hidden), torch.cat(masks)


def _continue(lm: PreTrainedModel, cache: Sequence[tuple[torch.Tensor, torch.Tensor]], last_hidden: torch.Tensor,
              prefix_mask: torch.Tensor, rows: torch.Tensor, continuations: Sequence[Sequence[int]],
              pad_token_id: int) -> list[list[float]]:
    """The log-probabilities of each of ``continuations``' tokens after the prefix at its index in ``rows`` of the
    cached keys and values."""
    tokens = pad_rows([{"input_ids": ids, "attention_mask": [1] * len(ids)} for ids in continuations], pad_token_id)
    tokens = {key: value.to(lm.device) for key, value in tokens.items()}
    rows = rows.to(lm.device)
    lengths = prefix_mask[rows].sum(-1, keepdim=True)
    # the rows' own prefixes end the cache: no more padding before them than the longest of them needs
    width = int(lengths.max())
    selected = DynamicCache(ddp_cache_data=[(keys[rows, :, -width:], values[rows, :, -width:]) for keys, values in cache],
                            config=lm.config)
    hidden = lm.base_model(input_ids=tokens["input_ids"],
                           attention_mask=torch.cat([prefix_mask[rows, -width:], tokens["attention_mask"]], dim=1),
                           position_ids=lengths + torch.arange(tokens["input_ids"].shape[1], device=lm.device),
                           cache=selected, use_cache=True).last_hidden_state
    # a continuation's first token is predicted at its prefix's last position, every next one at the token before
    predicting = torch.cat([last_hidden[rows, None], hidden[:, :-1]], dim=1)
    scored = tokens["attention_mask"].bool()
    values = target_log_probs(lm, predicting[scored], tokens["input_ids"][scored]).cpu()
    return [part.tolist() for part in values.split(scored.sum(-1).tolist())]
