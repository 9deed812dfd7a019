"""QuantiDCE model (Ye et al. 2021, §3.1): ``score = sigmoid(MLP(encoder([CLS] context [SEP] response [SEP])))``,
with a three-layer MLP whose activations are ELU, ELU and sigmoid. Any ``AutoModel`` encoder works.

With ``encoding="bi"`` the same pair input is split into its utterances and response, each encoded alone, and a
residual MLP corrects their cosine: ``score = sigmoid(scale · cos(u, v) + shift + MLP(features))``, its
logits starting as ``5 · cos(u, v)`` (see
:class:`~.configuration_quantidce.QuantiDCEConfig`)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from transformers import initialization as init

from hf_dialeval.metrics.quantidce.configuration_quantidce import QuantiDCEConfig
from hf_dialeval.modeling.base import (
    DialEvalOutput,
    DialEvalPreTrainedModel,
    encoder_inputs,
    masked_mean_pool,
    run_head,
)
from hf_dialeval.modeling.registration import register_available


class ThreeLayerMLP(nn.Module):
    """Linear-ELU, Linear-ELU, Linear to one logit per row: the paper's predictor before its sigmoid."""

    def __init__(self, num_features: int, mlp_hidden_sizes: list[int]) -> None:
        super().__init__()
        first, second = mlp_hidden_sizes
        self.dense_1 = nn.Linear(num_features, first)
        self.dense_2 = nn.Linear(first, second)
        self.out = nn.Linear(second, 1)
        self.activation = nn.ELU()

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        hidden = self.activation(self.dense_1(features))
        hidden = self.activation(self.dense_2(hidden))
        return self.out(hidden).squeeze(-1)


class QuantiDCEPredictor(ThreeLayerMLP):
    """The paper's three-layer MLP: Linear-ELU, Linear-ELU, Linear-sigmoid."""

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.logits(features))


class BiEncoderHead(ThreeLayerMLP):
    """The bi-encoder's residual head: logits ``scale · cos + shift + MLP(features)``, the MLP's activations ELU,
    ELU and its output linear; the model's score is their sigmoid, as the cross-encoder's. The logits start as
    ``INITIAL_SCALE · cos`` (shift 0, the MLP's last layer zero): an untrained head ranks every pair as the
    ``similarity`` floor does, and training moves it away from the floor only as far as the loss asks."""

    #: Sentence-encoder cosines of real and random replies lie a few tenths apart; times 5 the levels' logits lie
    #: far enough apart for MLR's margins (λ = 0.3 between level centroids, applied to a bi-encoder's logits).
    #: With scale 1 the untrained levels sit within 0.05 of each other and MLR's compactness term collapses them.
    INITIAL_SCALE = 5.0

    def __init__(self, num_features: int, mlp_hidden_sizes: list[int]) -> None:
        super().__init__(num_features, mlp_hidden_sizes)
        self.scale = nn.Parameter(torch.tensor(self.INITIAL_SCALE))
        self.shift = nn.Parameter(torch.tensor(0.0))
        # here too, not only in the model's _init_weights: a head built on its own starts as the cosine as well
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, features: torch.Tensor, cosine: torch.Tensor) -> torch.Tensor:
        return self.scale * cosine + self.shift + self.logits(features)


def pair_segments(input_ids: torch.Tensor, attention_mask: torch.Tensor, cls_token_id: int, sep_token_id: int
                  ) -> list[list[list[int]]]:
    """Per pair encoding (``cls context sep response sep``, the context's utterances joined by ``sep``; a
    RoBERTa-style double ``sep`` between the two is fine), its non-empty parts in order: the utterances that
    survived truncation (the oldest of them possibly cut to its end: the pair was truncated jointly), then the
    response (the last part; the metric never passes an empty response)."""
    rows = []
    for ids, mask in zip(input_ids.tolist(), attention_mask.tolist()):
        parts: list[list[int]] = [[]]
        for token, kept in zip(ids, mask):
            if not kept or token == cls_token_id:
                continue
            if token == sep_token_id:
                parts.append([])
            else:
                parts[-1].append(token)
        rows.append([part for part in parts if part])
    return rows


#: Padded tokens per chunk of distinct texts the bi-encoder runs at once. The texts are sorted by length first, so a
#: chunk pads to its own longest text, not to the batch's: a batch of 10 FED pairs held 79 distinct texts, 1,250
#: real tokens, which one padded tensor ran as 4,266 token positions and 8x the real attention entries.
CHUNK_TOKENS = 2048


def length_chunks(lengths: list[int], budget: int = CHUNK_TOKENS) -> list[list[int]]:
    """The positions of ``lengths`` sorted by length and cut into chunks of at most ``budget`` padded tokens (a
    text longer than the budget is a chunk of its own)."""
    chunks: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if chunks and (len(chunks[-1]) + 1) * lengths[index] <= budget:
            chunks[-1].append(index)
        else:
            chunks.append([index])
    return chunks


def real_token_states(encoded: Any, mask: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """What distillation compares, without padding: every hidden state's rows of real tokens ``(tokens, hidden)``
    and every attention map's entries between real tokens ``(pairs, heads)`` (empty where not asked for)."""
    real = mask.bool()
    pairs = real.unsqueeze(2) & real.unsqueeze(1)
    return (tuple(state[real] for state in encoded.hidden_states or ()),
            tuple(attention.permute(0, 2, 3, 1)[pairs] for attention in encoded.attentions or ()))


class QuantiDCEModel(DialEvalPreTrainedModel):
    """Pair encoder + MLP coherence predictor. Inputs are ``[CLS] context [SEP] response [SEP]`` encodings
    (see :func:`hf_dialeval.modeling.base.encode_context_response`) with either encoding (``config.encoding``;
    a bi-encoder's ``predictor`` is a :class:`BiEncoderHead`). Its output
    (:class:`~hf_dialeval.modeling.base.DialEvalOutput`) holds ``(batch,)`` ``scores`` in [0, 1], the same on
    the human scale as ``human_scores`` (``low + (high - low) * score``, 1–5 by default), the ``pooled_output``
    the MLP reads and, when asked for, the encoder's hidden states and attentions over real tokens only (for
    distillation: :func:`real_token_states`)."""

    config_class = QuantiDCEConfig
    config: QuantiDCEConfig
    base_model_prefix = "quantidce"

    def __init__(self, config: QuantiDCEConfig) -> None:
        super().__init__(config)
        hidden_size = config.backbone_config.hidden_size
        if config.encoding == "bi":
            if config.cls_token_id is None or config.sep_token_id is None:
                raise ValueError("a bi-encoding QuantiDCEConfig needs the tokenizer's cls_token_id and sep_token_id")
            embedding_features = 4 * hidden_size if config.bi_features == "full" else 0
            cosines = 3 if config.bi_context == "all" else 1  # + cos with the context mean, with the closest utterance
            self.predictor = BiEncoderHead(embedding_features + cosines, config.mlp_hidden_sizes)
        else:
            self.predictor = QuantiDCEPredictor(hidden_size, config.mlp_hidden_sizes)
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        # transformers initialises children before their parent and then skips the children's parameters, so the
        # predictor's linear layers are initialised one by one here, not from the predictor module
        predictor = getattr(self, "predictor", None)
        if isinstance(module, BiEncoderHead):
            init.constant_(module.scale, module.INITIAL_SCALE)
            init.constant_(module.shift, 0.0)
        elif isinstance(module, nn.Linear) and self._in_predictor(module):
            if isinstance(predictor, BiEncoderHead) and module is predictor.out:
                init.zeros_(module.weight)  # the head starts as the cosine alone
            else:
                # Xavier init keeps the sigmoid's input spread out: with the encoder's N(0, 0.02) every score would
                # start at 0.5 with vanishing gradients through the three layers.
                init.xavier_uniform_(module.weight)
            init.zeros_(module.bias)
        elif module is not predictor:
            super()._init_weights(module)

    def _in_predictor(self, module: nn.Module) -> bool:
        predictor = getattr(self, "predictor", None)
        return predictor is not None and any(module is layer for layer in predictor.modules())

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        **kwargs: Any,
    ) -> DialEvalOutput:
        inputs = encoder_inputs(input_ids, attention_mask, token_type_ids)
        if self.config.encoding == "bi":
            return self._bi_forward(inputs["input_ids"], inputs["attention_mask"], labels, output_hidden_states,
                                    output_attentions)
        encoded = self.encoder(**inputs, output_hidden_states=output_hidden_states,
                               output_attentions=output_attentions, return_dict=True)
        pooled = self._pool(encoded.last_hidden_state, inputs["attention_mask"])
        hidden_states, attentions = real_token_states(encoded, inputs["attention_mask"])
        return self.output(run_head(self.predictor, pooled), labels, pooled_output=pooled,
                           hidden_states=hidden_states or None, attentions=attentions or None)

    def _pool(self, last_hidden_state: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        if self.config.pooling == "cls":
            return last_hidden_state[:, 0]
        return masked_mean_pool(last_hidden_state, attention_mask)

    def _bi_forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor | None,
                    output_hidden_states: bool, output_attentions: bool) -> DialEvalOutput:
        """Encode every distinct utterance and response of the batch once, as ``cls text sep`` (an MLR batch
        holds one context for 15 responses), in chunks of similar length (:func:`length_chunks`), then score each
        pair from its unit-length embeddings. The hidden states and attentions returned (for distillation) are
        those of the real tokens of these distinct texts (:func:`real_token_states`)."""
        config = self.config
        rows = pair_segments(input_ids, attention_mask, config.cls_token_id, config.sep_token_id)
        distinct: dict[tuple[int, ...], int] = {}
        # a pair whose context was cut away entirely compares its response with an empty text
        indices = [[distinct.setdefault(tuple(part), len(distinct)) for part in (row[:-1] or [[]]) + row[-1:]]
                   for row in rows]
        texts = [[config.cls_token_id, *text, config.sep_token_id] for text in distinct]
        pad = config.backbone_config.pad_token_id or 0
        chunks = length_chunks([len(text) for text in texts])
        pooled_chunks, hidden_chunks, attention_chunks = [], [], []
        for chunk in chunks:
            width = max(len(texts[index]) for index in chunk)
            ids = input_ids.new_tensor([texts[index] + [pad] * (width - len(texts[index])) for index in chunk])
            mask = input_ids.new_tensor([[1] * len(texts[index]) + [0] * (width - len(texts[index]))
                                         for index in chunk])
            encoded = self.encoder(input_ids=ids, attention_mask=mask, output_hidden_states=output_hidden_states,
                                   output_attentions=output_attentions, return_dict=True)
            pooled_chunks.append(self._pool(encoded.last_hidden_state, mask))
            hidden, attention = real_token_states(encoded, mask)
            hidden_chunks.append(hidden)
            attention_chunks.append(attention)
        order = input_ids.new_tensor([index for chunk in chunks for index in chunk])
        embeddings = F.normalize(torch.cat(pooled_chunks)[torch.argsort(order)], dim=-1)
        hidden_states = tuple(torch.cat(layer) for layer in zip(*hidden_chunks))
        attentions = tuple(torch.cat(layer) for layer in zip(*attention_chunks))
        last = embeddings[input_ids.new_tensor([row[-2] for row in indices])]
        response = embeddings[input_ids.new_tensor([row[-1] for row in indices])]
        cosine = (last * response).sum(-1)
        features = [last, response, last * response, (last - response).abs()] if config.bi_features == "full" else []
        features.append(cosine.unsqueeze(-1))
        if config.bi_context == "all":
            # every pair's context utterances, padded to the longest context of the batch (one gather, not a loop)
            longest = max(len(row) - 1 for row in indices)
            positions = input_ids.new_tensor([row[:-1] + [0] * (longest - len(row) + 1) for row in indices])
            present = input_ids.new_tensor([[1] * (len(row) - 1) + [0] * (longest - len(row) + 1)
                                            for row in indices]).bool()
            utterances = embeddings[positions]  # (pairs, longest, hidden)
            context = F.normalize((utterances * present.unsqueeze(-1)).sum(1), dim=-1)  # the mean's direction
            cosines = (utterances @ response.unsqueeze(-1)).squeeze(-1).masked_fill(~present, float("-inf"))
            features += [(context * response).sum(-1, keepdim=True), cosines.max(dim=1, keepdim=True).values]
        pooled = torch.cat(features, dim=-1)
        logits = run_head(self.predictor, pooled, cosine)
        return self.output(torch.sigmoid(logits), labels, logits=logits, pooled_output=pooled,
                           hidden_states=hidden_states or None, attentions=attentions or None)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
