"""A causal LM's log-probabilities of continuations that share a prefix, the prefix run once.

Turn-level benchmarks score several systems' replies to one context, and comparing systems scores every system on
the same contexts: a context's hidden states do not depend on the reply after it, so it runs once, with its replies
after it in the same row. Each reply attends to the context and to its own earlier tokens only, and its positions
continue from the context's end, as if it followed the context alone (a tree of branches in one row). The result
equals running each prefix and continuation as one sequence, up to float rounding. A row runs at the speed of any
row of its length, where batches of short replies reading a key–value cache of their contexts ran slower than whole
rows (HolisticEval on 900 persona-chat turns: 0.95 of one forward pass of its base model over each item, against
0.64 to 0.73 with the cache; ``benchmarks/scale/run.py limit``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from transformers import PreTrainedModel
from transformers.masking_utils import create_causal_mask

from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.modeling.lm_head import target_log_probs

#: The most continuation positions one row holds after its prefix (more when one continuation is longer): the
#: continuations of a prefix fill as few rows as this allows, so the prefix runs once per row.
BRANCH_POSITIONS = 256


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
    rows in length-sorted batches of ``batch_size``. A model attending within a sliding window needs every prefix
    and continuation to fit in it (its mask is not applied to the branches)."""
    rows = _branch_rows(prefixes, continuations)
    results: list[list[float]] = [[] for _ in continuations]
    _score_rows(lm, prefixes, continuations, rows, batch_size, pad_token_id, scored, full_precision, results)
    # a non-finite value (a model that overflows on some input) reaches every branch of its row through the masked
    # attention (0 × nan): those branches run again, each in a row of its own, so that it shows where it arises
    tainted = [(prefix, [member]) for prefix, members in rows if len(members) > 1 for member in members
               if not all(math.isfinite(value) for value in results[member])]
    if tainted:
        _score_rows(lm, prefixes, continuations, tainted, batch_size, pad_token_id, scored, full_precision, results)
    return results


def _score_rows(lm: PreTrainedModel, prefixes: Sequence[Sequence[int]],
                continuations: Sequence[tuple[int, Sequence[int]]], rows: Sequence[tuple[int, list[int]]],
                batch_size: int, pad_token_id: int, scored: Sequence[Sequence[bool]] | None, full_precision: bool,
                results: list[list[float]]) -> None:
    """Run ``rows`` (:func:`_branch_rows`) in length-sorted batches and write each continuation's log-probabilities
    (:func:`continuation_log_probs`) at its index in ``results``."""
    window = getattr(lm.config, "sliding_window", None)
    for batch in length_sorted_batches([len(prefixes[prefix]) + sum(len(continuations[index][1]) for index in
                                                                      branches) for prefix, branches in rows],
                                       batch_size):
        inputs, positions, branches = [], [], []
        targets: list[tuple[int, int, list[int], list[int]]] = []  # continuation, row, positions, tokens
        for row, (prefix, members) in enumerate(rows[index] for index in batch):
            ids, start = list(prefixes[prefix]), len(prefixes[prefix])
            row_positions, row_branches = list(range(start)), [0] * start
            for branch, member in enumerate(members, start=1):
                continuation = continuations[member][1]
                if window is not None and start + len(continuation) > window:
                    raise ValueError(f"a prefix and continuation of {start + len(continuation)} tokens exceed the "
                                     f"model's sliding window of {window}")
                # the first token is predicted at the prefix's last position, every next one at the token before
                at = [start - 1, *range(len(ids), len(ids) + len(continuation) - 1)]
                kept = range(len(continuation)) if scored is None else \
                    [index for index, score in enumerate(scored[member]) if score]
                targets.append((member, row, [at[index] for index in kept], [continuation[index] for index in kept]))
                row_positions += range(start, start + len(continuation))
                row_branches += [branch] * len(continuation)
                ids += continuation
            inputs.append(ids)
            positions.append(row_positions)
            branches.append(row_branches)
        hidden = _run_rows(lm, inputs, positions, branches, pad_token_id)
        rows_of = torch.tensor([row for _, row, at, _ in targets for _ in at], dtype=torch.long)
        at = torch.tensor([position for _, _, where, _ in targets for position in where], dtype=torch.long)
        tokens = torch.tensor([token for _, _, _, kept in targets for token in kept], dtype=torch.long)
        values = target_log_probs(lm, hidden[rows_of.to(hidden.device), at.to(hidden.device)],
                                  tokens.to(hidden.device), full_precision).cpu()
        for (member, _, where, _), part in zip(targets, values.split([len(where) for _, _, where, _ in targets])):
            results[member] = part.tolist()


def _branch_rows(prefixes: Sequence[Sequence[int]], continuations: Sequence[tuple[int, Sequence[int]]]
                 ) -> list[tuple[int, list[int]]]:
    """The rows to run: a prefix's index and the indices of the continuations after it in that row, up to
    :data:`BRANCH_POSITIONS` continuation positions a row (at least one continuation). The rows and their
    branches are ordered by their tokens, not by where the inputs stand: reordered items run in the same rows and
    batches, so that their scores do not move with the order (in bf16 a row's rounding depends on its layout)."""
    by_prefix: dict[int, list[int]] = {}
    for index, (prefix, _) in enumerate(continuations):
        if not prefixes[prefix]:
            raise ValueError(f"prefix {prefix} is empty: a continuation's first token needs a position to be "
                             f"predicted at")
        by_prefix.setdefault(prefix, []).append(index)
    rows: list[tuple[int, list[int]]] = []
    for prefix in sorted(by_prefix, key=lambda prefix: tuple(prefixes[prefix])):
        row: list[int] = []
        used = 0
        for member in sorted(by_prefix[prefix], key=lambda index: (-len(continuations[index][1]),
                                                                    tuple(continuations[index][1]))):
            length = len(continuations[member][1])
            if row and used + length > BRANCH_POSITIONS:
                rows.append((prefix, row))
                row, used = [], 0
            row.append(member)
            used += length
        rows.append((prefix, row))
    return rows


def _run_rows(lm: PreTrainedModel, inputs: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
              branches: Sequence[Sequence[int]], pad_token_id: int) -> torch.Tensor:
    """The base model's last hidden states of the rows ``inputs`` (right-padded), each token at its position in
    ``positions``, attending causally within its branch (``branches``: 0 the prefix, which every branch reads)."""
    device, width = lm.device, max(len(ids) for ids in inputs)

    def padded(rows: Sequence[Sequence[int]], fill: int) -> torch.Tensor:
        return torch.tensor([list(row) + [fill] * (width - len(row)) for row in rows], device=device)

    input_ids, position_ids = padded(inputs, pad_token_id), padded(positions, 0)
    branch = padded(branches, -1)

    def same_branch(batch: torch.Tensor, head: torch.Tensor, query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
        return (branch[batch, key] == 0) | (branch[batch, key] == branch[batch, query])

    # the model's own mask builder: causal, padding and the branches, in the form its attention reads
    embeddings = lm.get_input_embeddings()
    mask = create_causal_mask(config=lm.config, inputs_embeds=torch.empty(
        len(inputs), width, 0, dtype=embeddings.weight.dtype, device=device),
        attention_mask=(branch >= 0).long(), cache=None, and_mask_function=same_branch)
    return lm.base_model(input_ids=input_ids, attention_mask=mask, position_ids=position_ids).last_hidden_state
