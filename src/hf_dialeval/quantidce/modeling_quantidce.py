"""QuantiDCE model (Ye et al. 2021, §3.1): ``score = sigmoid(MLP(encoder([CLS] context [SEP] response [SEP])))``,
with a three-layer MLP whose activations are ELU, ELU and sigmoid. Any ``AutoModel`` encoder works."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from ..checkpoints import from_pretrained, resolve_backbone_path
from ..configuration_utils import backbone_config_dict, backbone_config_from_dict
from ..modeling_utils import encoder_inputs, masked_mean_pool
from ..registration import register_available
from .configuration_quantidce import QuantiDCEConfig


@dataclass
class QuantiDCEOutput(ModelOutput):
    """Output of :class:`QuantiDCEModel`.

    Args:
        scores: ``(batch,)`` coherence in [0, 1] (the sigmoid output; the prediction layer).
        human_scores: ``(batch,)`` the same on the human scale, ``low + (high - low) * scores`` (1–5 by default).
        pooled: ``(batch, hidden)`` the pair feature the MLP reads.
        hidden_states: the encoder's embedding output and every layer's output, when asked for.
        attentions: every layer's attention maps, when asked for.
    """

    scores: torch.Tensor | None = None
    human_scores: torch.Tensor | None = None
    pooled: torch.Tensor | None = None
    hidden_states: tuple[torch.Tensor, ...] | None = None
    attentions: tuple[torch.Tensor, ...] | None = None


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


class QuantiDCEPreTrainedModel(PreTrainedModel):
    config_class = QuantiDCEConfig
    config: QuantiDCEConfig
    base_model_prefix = "quantidce"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

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


class QuantiDCEModel(QuantiDCEPreTrainedModel):
    """Pair encoder + MLP coherence predictor. Inputs are ``[CLS] context [SEP] response [SEP]`` encodings
    (see :func:`hf_dialeval.modeling_utils.encode_context_response`)."""

    def __init__(self, config: QuantiDCEConfig) -> None:
        super().__init__(config)
        if config.backbone_config is None:
            raise ValueError("QuantiDCEConfig needs a backbone_config (or backbone_name_or_path) to build the encoder")
        backbone_config = backbone_config_from_dict(config.backbone_config)
        backbone_config._attn_implementation = config._attn_implementation
        self.encoder = AutoModel.from_config(backbone_config)
        self.predictor = QuantiDCEPredictor(backbone_config.hidden_size, config.mlp_hidden_sizes)
        self.post_init()

    @classmethod
    def from_backbone(cls, backbone_name_or_path: str, **config_kwargs: Any) -> QuantiDCEModel:
        """A new QuantiDCE model whose encoder holds the pretrained weights of ``backbone_name_or_path`` (a Hub id
        or a local folder) and whose MLP is freshly initialised."""
        path = resolve_backbone_path(backbone_name_or_path)
        config = QuantiDCEConfig(backbone_config=backbone_config_dict(AutoConfig.from_pretrained(path)),
                                 backbone_name_or_path=backbone_name_or_path, **config_kwargs)
        model = cls(config)
        encoder = from_pretrained(AutoModel, path, attn_implementation=config._attn_implementation)
        model.encoder.load_state_dict(encoder.state_dict())
        return model

    def get_input_embeddings(self) -> nn.Module:
        return self.encoder.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.encoder.set_input_embeddings(value)

    def to_human_scale(self, scores: torch.Tensor) -> torch.Tensor:
        low, high = self.config.score_scale
        return low + (high - low) * scores

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_hidden_states: bool = False,
        output_attentions: bool = False,
        **kwargs: Any,
    ) -> QuantiDCEOutput:
        inputs = encoder_inputs(input_ids, attention_mask, token_type_ids)
        attention_mask = inputs["attention_mask"]
        encoded = self.encoder(**inputs, output_hidden_states=output_hidden_states,
                               output_attentions=output_attentions, return_dict=True)
        last = encoded.last_hidden_state
        pooled = last[:, 0] if self.config.pooling == "cls" else masked_mean_pool(last, attention_mask)
        scores = self.predictor(pooled)
        return QuantiDCEOutput(scores=scores, human_scores=self.to_human_scale(scores), pooled=pooled,
                               hidden_states=encoded.hidden_states if output_hidden_states else None,
                               attentions=encoded.attentions if output_attentions else None)


AutoConfig.register(QuantiDCEConfig.model_type, QuantiDCEConfig)
AutoModel.register(QuantiDCEConfig, QuantiDCEModel)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.registration)
