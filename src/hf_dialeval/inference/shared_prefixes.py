"""A causal LM's log-probabilities of continuations that share a prefix, the prefix run once.

Turn-level benchmarks score several systems' replies to one context, and comparing systems scores every system on
the same contexts: a context's hidden states do not depend on the reply after it, so it runs once, with its replies
after it in the same row. Each reply attends to the context and to its own earlier tokens only, and its positions
continue from the context's end, as if it followed the context alone (a tree of branches in one row). The result
equals running each prefix and continuation as one sequence, up to float rounding. A row runs at the speed of any
row of its length, where batches of short replies reading a key–value cache of their contexts ran slower than whole
rows (HolisticEval on 900 persona-chat turns: 0.97 of one forward pass of its base model over each item, against
0.64 to 0.73 with the cache; ``benchmarks/scale/run.py limit``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel
from transformers.masking_utils import create_causal_mask

from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.inference.model_metric import pad_rows
from hf_dialeval.modeling.lm_head import target_log_probs

#: The most continuation positions one row holds after its prefix (more when one continuation is longer): the
#: continuations of a prefix fill as few rows as this allows, so the prefix runs once per row.
BRANCH_POSITIONS = 256


#: A distinct continuation: its prefix's index, its tokens and which of them are scored (``None``: all).
Branch = tuple[int, tuple[int, ...], tuple[bool, ...] | None]


def runs_shared_prefixes(lm: PreTrainedModel, max_length: int) -> bool:
    """Whether :func:`continuation_log_probs` serves ``lm`` on inputs of up to ``max_length`` tokens: not when it
    attends within a sliding window shorter than that (the branches are not cut to the window)."""
    window = getattr(lm.config, "sliding_window", None)
    return window is None or window >= max_length


def continuation_log_probs(lm: PreTrainedModel, prefixes: Sequence[Sequence[int]],
                           continuations: Sequence[tuple[int, Sequence[int]]], batch_size: int,
                           pad_token_id: int, scored: Sequence[Sequence[bool]] | None = None,
                           full_precision: bool = False) -> list[list[float]]:
    """Per ``(prefix index, token ids)`` of ``continuations``, ``log P(token | its prefix and the tokens before it)``
    of each of its tokens (those ``scored`` marks, where given: only they are projected onto the vocabulary), under
    the causal LM ``lm`` (:func:`~hf_dialeval.modeling.lm_head.target_log_probs`, with its ``full_precision``). Each
    prefix (at least one token) runs once per row of its continuations (:data:`BRANCH_POSITIONS` of them a row), the
    rows in length-sorted batches of ``batch_size``; a continuation given twice after the same prefix runs once. A
    model attending within a sliding window needs every prefix and continuation to fit in it (its mask is not
    applied to the branches)."""
    window = getattr(lm.config, "sliding_window", None)
    branches: dict[Branch, list[int]] = {}
    for index, (prefix, continuation) in enumerate(continuations):
        if not prefixes[prefix]:
            raise ValueError(f"prefix {prefix} is empty: a continuation's first token needs a position to be "
                             f"predicted at")
        if window is not None and len(prefixes[prefix]) + len(continuation) > window:
            raise ValueError(f"a prefix and continuation of {len(prefixes[prefix]) + len(continuation)} tokens "
                             f"exceed the model's sliding window of {window}")
        key = (prefix, tuple(continuation), tuple(scored[index]) if scored is not None else None)
        branches.setdefault(key, []).append(index)
    distinct = list(branches)
    rows = _branch_rows(prefixes, distinct)
    values: list[list[float]] = [[] for _ in distinct]
    _score_rows(lm, prefixes, distinct, rows, batch_size, pad_token_id, full_precision, values)
    # a non-finite value (a model that overflows on some input) reaches every branch of its row through the masked
    # attention (0 × nan): those branches run again, each in a row of its own, so that it shows where it arises
    tainted = [(prefix, [member]) for prefix, members in rows if len(members) > 1 for member in members
               if not all(math.isfinite(value) for value in values[member])]
    if tainted:
        _score_rows(lm, prefixes, distinct, tainted, batch_size, pad_token_id, full_precision, values)
    results: list[list[float]] = [[] for _ in continuations]
    for key, value in zip(distinct, values):
        for index in branches[key]:
            results[index] = value
    return results


def _score_rows(lm: PreTrainedModel, prefixes: Sequence[Sequence[int]], branches: Sequence[Branch],
                rows: Sequence[tuple[int, list[int]]], batch_size: int, pad_token_id: int, full_precision: bool,
                results: list[list[float]]) -> None:
    """Run ``rows`` (:func:`_branch_rows`) in length-sorted batches and write each branch's log-probabilities
    (:func:`continuation_log_probs`) at its index in ``results``."""
    for batch in length_sorted_batches([len(prefixes[prefix]) + sum(len(branches[member][1]) for member in
                                                                      members) for prefix, members in rows],
                                       batch_size):
        inputs = []
        targets: list[tuple[int, int, list[int], list[int]]] = []  # branch, row, positions, tokens
        for row, (prefix, members) in enumerate(rows[index] for index in batch):
            ids, start = list(prefixes[prefix]), len(prefixes[prefix])
            row_input = {"input_ids": ids, "position_ids": list(range(start)), "branch": [1] * start}
            for number, member in enumerate(members, start=2):
                _, continuation, scored = branches[member]
                # the first token is predicted at the prefix's last position, every next one at the token before
                at = [start - 1, *range(len(ids), len(ids) + len(continuation) - 1)]
                kept = [index for index in range(len(continuation)) if scored is None or scored[index]]
                targets.append((member, row, [at[index] for index in kept], [continuation[index] for index in kept]))
                row_input["position_ids"] += range(start, start + len(continuation))
                row_input["branch"] += [number] * len(continuation)
                ids += continuation
            inputs.append(row_input)
        hidden = _run_rows(lm, inputs, pad_token_id)
        rows_of = torch.tensor([row for _, row, at, _ in targets for _ in at], dtype=torch.long)
        at = torch.tensor([position for _, _, where, _ in targets for position in where], dtype=torch.long)
        tokens = torch.tensor([token for _, _, _, kept in targets for token in kept], dtype=torch.long)
        values = target_log_probs(lm, hidden[rows_of.to(hidden.device), at.to(hidden.device)],
                                  tokens.to(hidden.device), full_precision).cpu()
        for (member, _, where, _), part in zip(targets, values.split([len(where) for _, _, where, _ in targets])):
            results[member] = part.tolist()


def _branch_rows(prefixes: Sequence[Sequence[int]], branches: Sequence[Branch]) -> list[tuple[int, list[int]]]:
    """The rows to run: a prefix's index and the indices of the branches after it in that row, up to
    :data:`BRANCH_POSITIONS` continuation positions a row (at least one branch). The rows and their branches are
    ordered by their tokens, not by where the inputs stand: reordered items run in the same rows and batches, so
    that their scores do not move with the order (in bf16 a row's rounding depends on its layout)."""
    by_prefix: dict[int, list[int]] = {}
    for index, (prefix, _, _) in enumerate(branches):
        by_prefix.setdefault(prefix, []).append(index)
    rows: list[tuple[int, list[int]]] = []
    for prefix in sorted(by_prefix, key=lambda prefix: tuple(prefixes[prefix])):
        row: list[int] = []
        used = 0
        for member in sorted(by_prefix[prefix], key=lambda index: (-len(branches[index][1]), branches[index][1:])):
            length = len(branches[member][1])
            if row and used + length > BRANCH_POSITIONS:
                rows.append((prefix, row))
                row, used = [], 0
            row.append(member)
            used += length
        rows.append((prefix, row))
    return rows


def _run_rows(lm: PreTrainedModel, rows: Sequence[dict[str, list[int]]], pad_token_id: int) -> torch.Tensor:
    """The base model's last hidden states of ``rows`` (``input_ids``, ``position_ids``, ``branch``; right-padded),
    each token at its position, attending causally within its branch (1: the prefix, which every branch reads;
    0: padding)."""
    batch = {key: value.to(lm.device) for key, value in pad_rows(rows, pad_token_id).items()}
    branch = batch.pop("branch")

    def same_branch(row: torch.Tensor, head: torch.Tensor, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        return (branch[row, key] == 1) | (branch[row, key] == branch[row, query])

    # the model's own mask builder: causal, padding and the branches, in the form its attention reads
    embeddings = lm.get_input_embeddings()
    mask = create_causal_mask(config=lm.config, inputs_embeds=torch.empty(
        *branch.shape, 0, dtype=embeddings.weight.dtype, device=lm.device),
        attention_mask=(branch > 0).long(), cache=None, and_mask_function=same_branch)
    return lm.base_model(attention_mask=mask, **batch).last_hidden_state
