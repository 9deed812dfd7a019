"""QuantiDCE model (Ye et al. 2021, §3.1): ``score = sigmoid(MLP(encoder([CLS] context [SEP] response [SEP])))``,
with a three-layer MLP whose activations are ELU, ELU and sigmoid. Any ``AutoModel`` encoder works."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import initialization as init

from ..modeling_utils import DialEvalOutput, DialEvalPreTrainedModel, encoder_inputs, masked_mean_pool
from ..registration import register_available
from .configuration_quantidce import QuantiDCEConfig


class QuantiDCEPredictor(nn.Module):
    """The paper's three-layer MLP: Linear-ELU, Linear-ELU, Linear-sigmoid."""

    def __init__(self, hidden_size: int, mlp_hidden_sizes: list[int]) -> None:
        super().__init__()
        first, second = mlp_hidden_sizes
        self.dense_1 = nn.Linear(hidden_size, first)
        self.dense_2 = nn.Linear(first, second)
        self.out = nn.Linear(second, 1)
        self.activation = nn.ELU()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        hidden = self.activation(self.dense_1(features))
        hidden = self.activation(self.dense_2(hidden))
        return torch.sigmoid(self.out(hidden)).squeeze(-1)


class QuantiDCEModel(DialEvalPreTrainedModel):
    """Pair encoder + MLP coherence predictor. Inputs are ``[CLS] context [SEP] response [SEP]`` encodings
    (see :func:`hf_dialeval.modeling_utils.encode_context_response`). Its output
    (:class:`~hf_dialeval.modeling_utils.DialEvalOutput`) holds ``(batch,)`` ``scores`` in [0, 1], the same on
    the human scale as ``human_scores`` (``low + (high - low) * score``, 1–5 by default), the ``pooled_output``
    the MLP reads and, when asked for, the encoder's hidden states and attentions (for distillation)."""

    config_class = QuantiDCEConfig
    config: QuantiDCEConfig
    base_model_prefix = "quantidce"

    def __init__(self, config: QuantiDCEConfig) -> None:
        super().__init__(config)
        self.predictor = QuantiDCEPredictor(config.backbone_config.hidden_size, config.mlp_hidden_sizes)
        self.post_init()

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, QuantiDCEPredictor):
            # Xavier init keeps the sigmoid's input spread out: with the encoder's N(0, 0.02) every score would
            # start at 0.5 with vanishing gradients through the three layers.
            for layer in (module.dense_1, module.dense_2, module.out):
                init.xavier_uniform_(layer.weight)
                init.zeros_(layer.bias)
        elif not isinstance(module, nn.Linear) or not self._in_predictor(module):
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
        encoded = self.encoder(**inputs, output_hidden_states=output_hidden_states,
                               output_attentions=output_attentions, return_dict=True)
        last = encoded.last_hidden_state
        pooled = last[:, 0] if self.config.pooling == "cls" else masked_mean_pool(last, inputs["attention_mask"])
        return self.output(self.predictor(pooled), labels, pooled_output=pooled,
                           hidden_states=encoded.hidden_states if output_hidden_states else None,
                           attentions=encoded.attentions if output_attentions else None)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
