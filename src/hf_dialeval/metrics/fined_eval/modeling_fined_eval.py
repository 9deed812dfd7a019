"""FineD-Eval (Zhang et al., EMNLP 2022, §3.2/§3.4): a dialogue-level scorer.

The dialogue's utterances are joined with the ``</UTT>`` token, encoded by any ``AutoModel`` encoder,
mean-pooled over the real tokens (the official code also averaged the padding; this one does not), and
mapped by one linear layer + sigmoid per dimension to a score in (0, 1). A sub-metric model has one head,
the multitask model (FineD-Eval_mu) one head per dimension over a shared encoder.

With ``config.adjacency_bins`` (this package's addition) every utterance is also encoded alone, as the sentence
encoders this package trains on were trained to, and a histogram of the cosines of consecutive utterances adds a
linear logit to every head: how well each utterance follows the one before it, which a reply from another
dialogue or from elsewhere in the same dialogue breaks. With ``config.adjacency_mlp_size`` an MLP reads each
consecutive pair of those embeddings, order and content included, and adds the mean of its per-pair logits. With
``config.adjacency_encoder`` those utterances are embedded by a second encoder (``adjacency_encoder``), a sentence
encoder trained for it, instead of the dialogue encoder. With ``config.pair_encoder`` a cross-encoder
(``pair_encoder``) reads each consecutive pair together, as the tokenizer frames a text pair, and ``pair_heads`` over
its mean-pooled output add the mean of their per-pair logits.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval.metrics.fined_eval.configuration_fined_eval import FineDEvalConfig
from hf_dialeval.metrics.fined_eval.constants import UTTERANCE_TOKEN
from hf_dialeval.metrics.fined_eval.encoding import special_pair_frame, special_token_frame
from hf_dialeval.modeling.base import (
    DialEvalOutput,
    DialEvalPreTrainedModel,
    encoder_inputs,
    masked_mean_pool,
    run_head,
)
from hf_dialeval.modeling.registration import register_available

#: Utterances per encoder batch of the adjacency pass.
UTTERANCE_CHUNK = 64


class FineDEvalModel(DialEvalPreTrainedModel):
    """Encoder + masked mean pooling + one linear/sigmoid head per dimension (rows of ``score_heads``), plus
    ``adjacency_heads`` over the adjacency histogram when ``config.adjacency_bins`` is set, ``adjacency_mlp``
    over consecutive utterance pairs when ``config.adjacency_mlp_size`` is and ``pair_heads`` over the pair encoder's
    reading of those pairs when ``config.pair_encoder`` is. Its output
    (:class:`~hf_dialeval.modeling.base.DialEvalOutput`) holds ``(batch, num_dimensions)`` sigmoid ``scores`` in
    (0, 1), column ``i`` for ``config.dimensions[i]``, their ``logits`` and the ``pooled_output``."""

    config_class = FineDEvalConfig
    config: FineDEvalConfig
    base_model_prefix = "fined_eval"

    def __init__(self, config: FineDEvalConfig) -> None:
        super().__init__(config)
        self.score_heads = nn.Linear(config.backbone_config.hidden_size, len(config.dimensions))
        self.adjacency_heads = nn.Linear(config.adjacency_bins, len(config.dimensions)) if config.adjacency_bins else None
        self.adjacency_mlp = self._pair_mlp(config.adjacency_mlp_size) if config.adjacency_mlp_size else None
        self.adjacency_encoder = AutoModel.from_config(config.backbone_config) if config.adjacency_encoder else None
        self.pair_encoder = AutoModel.from_config(config.backbone_config) if config.pair_encoder else None
        hidden = config.backbone_config.hidden_size
        self.pair_heads = nn.Linear(hidden, len(config.dimensions)) if config.pair_encoder else None
        self.post_init()

    def _pair_mlp(self, size: int) -> nn.Sequential:
        features = 4 * self.config.backbone_config.hidden_size + 1  # pair_features: [a, b, a·b, |a−b|, cos]
        return nn.Sequential(nn.Linear(features, size), nn.GELU(), nn.Linear(size, len(self.config.dimensions)))

    def _init_weights(self, module: nn.Module) -> None:
        mlp = list(self.adjacency_mlp) if self.adjacency_mlp is not None else [None]
        if module is self.score_heads or module is mlp[0]:
            std = float(getattr(self.config.backbone_config, "initializer_range", 0.02))
            module.weight.data.normal_(mean=0.0, std=std)
            module.bias.data.zero_()
        elif module is self.adjacency_heads or module is mlp[-1] or module is self.pair_heads:
            # zero: a trained model given an adjacency head, MLP or pair encoder scores as before until it learns
            module.weight.data.zero_()
            module.bias.data.zero_()

    @property
    def dimensions(self) -> list[str]:
        return list(self.config.dimensions)

    def added_token_ids(self) -> list[int]:
        return [self.config.utterance_token_id]

    def head_names(self) -> list[str]:
        # the adjacency and pair encoders are copies of the backbone: an adapter carries their changes as low-rank
        # deltas, not in full
        return [name for name in super().head_names() if name not in ("adjacency_encoder", "pair_encoder")]

    def load_backbone_state(self, weights: Mapping[str, torch.Tensor]) -> None:
        super().load_backbone_state(weights)
        for copy_of_backbone in (self.adjacency_encoder, self.pair_encoder):
            if copy_of_backbone is not None:  # an adapter's changes to it are relative to the backbone too
                copy_of_backbone.load_state_dict(weights)

    @classmethod
    def from_backbone(
        cls, backbone: str, tokenizer: PreTrainedTokenizerBase, dimensions: Sequence[str] | None = None,
        **config_kwargs: Any,
    ) -> FineDEvalModel:
        """A new model around the pretrained encoder ``backbone`` (Hub id or local path) with freshly
        initialised heads. ``tokenizer`` must already hold the utterance token (:func:`add_utterance_token`);
        the encoder's embeddings are resized to it."""
        token = config_kwargs.pop("utterance_token", UTTERANCE_TOKEN)
        token_id = tokenizer.convert_tokens_to_ids(token)
        if token_id is None or token_id == tokenizer.unk_token_id:
            raise ValueError(f"the tokenizer has no {token!r} token: call add_utterance_token(tokenizer) first")
        if dimensions is not None:
            config_kwargs["dimensions"] = dimensions
        before, after = special_token_frame(tokenizer)
        return super().from_backbone(backbone, vocab_size=len(tokenizer), utterance_token=token,
                                     utterance_token_id=token_id, frame_lengths=(len(before), len(after)),
                                     **config_kwargs)

    def add_adjacency_head(self, bins: int) -> None:
        """Give this trained model a new, zero-initialised adjacency head of ``bins`` bins: it scores as before
        until the head is trained."""
        if self.config.adjacency_bins:
            raise ValueError(f"the model already has an adjacency head of {self.config.adjacency_bins} bins")
        if bins < 2:
            raise ValueError(f"adjacency_bins={bins}: give 2 or more bins")
        self.config.adjacency_bins = bins
        self.adjacency_heads = nn.Linear(bins, len(self.config.dimensions)).to(self.device)
        self._init_weights(self.adjacency_heads)

    def add_adjacency_mlp(self, size: int) -> None:
        """Give this trained model a new adjacency MLP of hidden ``size``, its output layer zero-initialised: it
        scores as before until the MLP is trained."""
        if self.config.adjacency_mlp_size:
            raise ValueError(f"the model already has an adjacency MLP of hidden size {self.config.adjacency_mlp_size}")
        if size < 1:
            raise ValueError(f"adjacency_mlp_size={size}: give a hidden size of 1 or more")
        self.config.adjacency_mlp_size = size
        self.adjacency_mlp = self._pair_mlp(size).to(self.device)
        for layer in self.adjacency_mlp:
            self._init_weights(layer)

    def add_adjacency_encoder(self, encoder: PreTrainedModel) -> None:
        """Read the adjacency features' utterances through a copy of ``encoder`` (a trained sentence encoder of the
        backbone's architecture, :meth:`backbone_copy`) instead of the dialogue encoder."""
        if self.adjacency_encoder is not None:
            raise ValueError("the model already has an adjacency encoder")
        if not (self.config.adjacency_bins or self.config.adjacency_mlp_size):
            raise ValueError("an adjacency encoder needs adjacency features to read: add an adjacency head or MLP first")
        self.adjacency_encoder = self.backbone_copy(encoder, "adjacency")
        self.config.adjacency_encoder = True

    def add_pair_encoder(self, encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                         pair_head: nn.Linear | None = None, weights: Mapping[str, float] | None = None) -> None:
        """Read every consecutive utterance pair through a copy of ``encoder`` (a cross-encoder of the backbone's
        architecture trained on such pairs, :meth:`backbone_copy`), framed as ``tokenizer`` frames a text pair.
        The pair heads start at zero, so the model scores as before until they train; or, given the encoder's
        trained one-logit ``pair_head``, the row of each dimension of ``weights`` starts as ``weight × pair_head``."""
        if self.pair_encoder is not None:
            raise ValueError("the model already has a pair encoder")
        unknown = sorted(set(weights or {}) - set(self.dimensions))
        if unknown:
            raise ValueError(f"pair weights for {unknown}: the model's heads are {self.dimensions}")
        if weights and (pair_head is None or pair_head.weight.shape != (1, self.config.backbone_config.hidden_size)):
            raise ValueError("pair weights scale the encoder's trained pair head: give a one-logit pair_head of the "
                             "encoder's hidden size")
        pair_encoder = self.backbone_copy(encoder, "pair")
        self.config.pair_separator, self.config.pair_segment_type = special_pair_frame(tokenizer)
        self.config.pair_encoder = True
        self.pair_encoder = pair_encoder
        self.pair_heads = nn.Linear(self.config.backbone_config.hidden_size, len(self.dimensions)).to(self.device)
        self._init_weights(self.pair_heads)
        with torch.no_grad():
            for dimension, weight in (weights or {}).items():
                row = self.dimensions.index(dimension)
                self.pair_heads.weight[row] = weight * pair_head.weight[0].to(self.device)
                self.pair_heads.bias[row] = weight * pair_head.bias[0].to(self.device)

    def backbone_copy(self, encoder: PreTrainedModel, role: str) -> PreTrainedModel:
        """A copy of the dialogue encoder holding ``encoder``'s weights (a trained encoder of the backbone's
        architecture). The rows the tokenizer gained (``</UTT>``), which ``encoder`` lacks, stay the dialogue
        encoder's; an utterance encoded alone or in a pair never holds them."""
        if type(encoder.config) is not type(self.config.backbone_config):
            raise ValueError(f"the {role} encoder is a {type(encoder.config).__name__}, the backbone a "
                             f"{type(self.config.backbone_config).__name__}: give an encoder of the backbone's "
                             "architecture")
        copied = copy.deepcopy(self.encoder)
        weights, trained = copied.state_dict(), encoder.state_dict()
        for name, tensor in trained.items():
            if name not in weights or weights[name].shape[1:] != tensor.shape[1:] or len(weights[name]) < len(tensor):
                raise ValueError(f"the {role} encoder's {name} does not fit the backbone's: give an encoder of its "
                                 "size")
        with torch.no_grad():  # row-wise, so the rows only the dialogue encoder has stay its own
            for name, tensor in trained.items():
                weights[name][:len(tensor)] = tensor
        return copied

    def forward(
        self, input_ids: torch.LongTensor, attention_mask: torch.LongTensor | None = None,
        token_type_ids: torch.LongTensor | None = None, labels: torch.Tensor | None = None, **kwargs: Any,
    ) -> DialEvalOutput:
        inputs = encoder_inputs(input_ids, attention_mask, token_type_ids)
        hidden = self.encoder(**inputs).last_hidden_state
        pooled = masked_mean_pool(hidden, inputs["attention_mask"])
        logits = run_head(self.score_heads, pooled)
        for part in self.adjacency_logit_parts(input_ids, inputs["attention_mask"]).values():
            logits = logits + part
        return self.output(torch.sigmoid(logits), labels, logits=logits, pooled_output=pooled)

    def embed_utterances(self, pieces: list[torch.Tensor]) -> torch.Tensor:
        """Mean-pooled outputs of ``pieces`` (token ids each), in their order (:func:`embed_pieces`), by the adjacency
        encoder when the model has one, else by the dialogue encoder."""
        encoder = self.encoder if self.adjacency_encoder is None else self.adjacency_encoder
        return embed_pieces(encoder, pieces, self.config.backbone_config.pad_token_id or 0)

    def utterances(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor) -> list[Utterance]:
        """Every utterance of every input, in order: its token ids (no separator) and its input's row and special
        tokens."""
        before, after = self.config.frame_lengths
        separator = self.config.utterance_token_id
        found = []
        for row, (ids, mask) in enumerate(zip(input_ids, attention_mask)):
            real = ids[mask.bool()]
            body = real[before:len(real) - after]
            cuts = (body == separator).nonzero().flatten().tolist()
            for index, piece in enumerate(torch.tensor_split(body, cuts)):
                text = piece[1:] if index else piece  # every piece after the first starts with the separator
                found.append(Utterance(text, row, real[:before], real[len(real) - after:]))
        return found

    def consecutive_utterances(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor,
                               utterances: list[Utterance] | None = None
                               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """``(earlier, later, owner, inputs)``: the unit-length embeddings of every consecutive utterance pair of
        every input (``(pairs, hidden)`` each), the input row each pair belongs to, and the number of inputs. Each
        utterance (of :meth:`utterances`, when they are given) is encoded alone, between its input's own special
        tokens, and mean-pooled."""
        utterances = self.utterances(input_ids, attention_mask) if utterances is None else utterances
        pieces = [torch.cat([u.before, u.text, u.after]) for u in utterances]
        embeddings = F.normalize(self.embed_utterances(pieces), dim=-1)
        owner = torch.tensor([u.row for u in utterances], device=input_ids.device)
        consecutive = owner[1:] == owner[:-1]
        return embeddings[:-1][consecutive], embeddings[1:][consecutive], owner[1:][consecutive], len(input_ids)

    def pair_logits(self, utterances: list[Utterance], inputs: int) -> torch.Tensor:
        """``(inputs, num_dimensions)``: per input, the mean over its consecutive utterance pairs of ``pair_heads``
        over the pair encoder's mean-pooled reading of ``before earlier separator later after``, cut to
        ``config.pair_max_length`` tokens (the longer side first), the later text of the pair's segment type."""
        separator = torch.tensor(self.config.pair_separator, dtype=torch.long, device=self.device)
        pieces, segments, owners = [], [], []
        for earlier, later in zip(utterances[:-1], utterances[1:]):
            if earlier.row != later.row:
                continue
            room = self.config.pair_max_length - len(earlier.before) - len(separator) - len(earlier.after)
            first, second = truncate_pair(earlier.text, later.text, room)
            first, second = torch.cat([earlier.before, first, separator]), torch.cat([second, earlier.after])
            pieces.append(torch.cat([first, second]))
            second_type = torch.full_like(second, self.config.pair_segment_type)
            segments.append(torch.cat([torch.zeros_like(first), second_type]))
            owners.append(earlier.row)
        if not pieces:
            return torch.zeros(inputs, len(self.dimensions), device=self.device)
        pooled = embed_pieces(self.pair_encoder, pieces, self.config.backbone_config.pad_token_id or 0, segments)
        return mean_by_owner(run_head(self.pair_heads, pooled), torch.tensor(owners, device=self.device), inputs)

    def adjacency_logit_parts(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor
                              ) -> dict[str, torch.Tensor]:
        """``(inputs, num_dimensions)`` each: what the adjacency histogram's head (``adjacency_head``), the adjacency
        MLP (``adjacency_mlp``) and the pair encoder (``pair_encoder``), those the model has, add to each head's
        logit."""
        if self.adjacency_heads is None and self.adjacency_mlp is None and self.pair_heads is None:
            return {}
        utterances = self.utterances(input_ids, attention_mask)
        parts = {}
        if self.adjacency_heads is not None or self.adjacency_mlp is not None:
            earlier, later, owner, inputs = self.consecutive_utterances(input_ids, attention_mask, utterances)
            if self.adjacency_heads is not None:
                histogram = soft_histogram((earlier * later).sum(-1), owner, inputs, self.config.adjacency_bins)
                parts["adjacency_head"] = run_head(self.adjacency_heads, histogram)
            if self.adjacency_mlp is not None:
                per_pair = run_head(self.adjacency_mlp, pair_features(earlier, later))
                parts["adjacency_mlp"] = mean_by_owner(per_pair, owner, inputs)
        if self.pair_heads is not None:
            parts["pair_encoder"] = self.pair_logits(utterances, len(input_ids))
        return parts

    def adjacency_histogram(self, input_ids: torch.LongTensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``(batch, adjacency_bins)``: per input, the share of its consecutive utterance pairs whose cosine falls
        in each bin (:func:`soft_histogram` of :meth:`consecutive_utterances`)."""
        earlier, later, owner, inputs = self.consecutive_utterances(input_ids, attention_mask)
        return soft_histogram((earlier * later).sum(-1), owner, inputs, self.config.adjacency_bins)


@dataclass(frozen=True)
class Utterance:
    """One utterance of an encoder input: its token ids, the input's row and the special tokens the input puts
    before and after its text."""

    text: torch.Tensor
    row: int
    before: torch.Tensor
    after: torch.Tensor


def truncate_pair(first: torch.Tensor, second: torch.Tensor, room: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``first`` and ``second`` cut at their ends to ``room`` tokens together, as a fast tokenizer's ``longest_first``
    truncation cuts a pair: the shorter text (``first`` on a tie) keeps up to half the room, the longer the rest."""
    if len(first) + len(second) <= room:
        return first, second
    if len(first) <= len(second):
        kept = min(len(first), room // 2)
        return first[:kept], second[:room - kept]
    kept = min(len(second), room // 2)
    return first[:room - kept], second[:kept]


def embed_pieces(encoder: nn.Module, pieces: list[torch.Tensor], pad_id: int,
                 segments: list[torch.Tensor] | None = None) -> torch.Tensor:
    """``(len(pieces), hidden)``: ``encoder``'s mean-pooled outputs of ``pieces`` (token ids each, with token type ids
    ``segments`` when given), in their order. They are encoded in length-sorted chunks of :data:`UTTERANCE_CHUNK`,
    each padded to its own longest: a dialogue batch holds utterances of very different lengths, and one batch of
    them all would be mostly padding."""
    order = sorted(range(len(pieces)), key=lambda index: len(pieces[index]))
    chunks = []
    for start in range(0, len(order), UTTERANCE_CHUNK):
        chunk = order[start:start + UTTERANCE_CHUNK]
        ids = nn.utils.rnn.pad_sequence([pieces[i] for i in chunk], batch_first=True, padding_value=pad_id)
        mask = nn.utils.rnn.pad_sequence([torch.ones_like(pieces[i]) for i in chunk], batch_first=True)
        types = None if segments is None else nn.utils.rnn.pad_sequence([segments[i] for i in chunk], batch_first=True)
        chunks.append(masked_mean_pool(encoder(**encoder_inputs(ids, mask, types)).last_hidden_state, mask))
    return torch.cat(chunks)[torch.tensor(order, device=chunks[0].device).argsort()]


def soft_histogram(cosines: torch.Tensor, owner: torch.Tensor, inputs: int, bins: int) -> torch.Tensor:
    """``(inputs, bins)`` shares of each input's ``cosines`` per bin. The bins' centres span [−1, 1] evenly and a
    cosine between two centres is shared between them (linearly, so the histogram is differentiable); an input
    without pairs (one utterance) has none (all zeros)."""
    centres = torch.linspace(-1.0, 1.0, bins, device=cosines.device)
    shares = torch.relu(1 - (cosines.unsqueeze(1) - centres).abs() * (bins - 1) / 2)
    return mean_by_owner(shares, owner, inputs)


def pair_features(earlier: torch.Tensor, later: torch.Tensor) -> torch.Tensor:
    """``[a, b, a·b, |a−b|, cos(a, b)]`` of unit-length embedding pairs: what the adjacency MLP reads."""
    cosines = (earlier * later).sum(-1, keepdim=True)
    return torch.cat([earlier, later, earlier * later, (earlier - later).abs(), cosines], -1)


def mean_by_owner(values: torch.Tensor, owner: torch.Tensor, inputs: int) -> torch.Tensor:
    """``(inputs, features)``: the mean of the rows of ``values`` that belong to each input (``owner``); zeros for an
    input that owns none."""
    counts = torch.zeros(inputs, device=values.device).index_add_(0, owner, torch.ones_like(owner, dtype=values.dtype))
    totals = torch.zeros(inputs, values.shape[1], device=values.device, dtype=values.dtype).index_add_(0, owner, values)
    return totals / counts.clamp(min=1).unsqueeze(1)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
