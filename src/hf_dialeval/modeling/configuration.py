"""The config every metric model shares: :class:`DialEvalConfig`.

Kept apart from ``modeling.base`` (torch): configs are registered with ``AutoConfig`` while transformers'
own ``modeling_utils`` may still be initialising (see :mod:`hf_dialeval.modeling.registration`), so a configuration
module may import nothing that needs a model class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from transformers import AutoConfig, PretrainedConfig

from hf_dialeval.modeling.calibration import check_scale, linear_scale
from hf_dialeval.modeling.registration import register_available


class DialEvalConfig(PretrainedConfig):
    r"""Base configuration of every hf-dialeval metric model.

    The backbone is a real transformers sub-config (as in ``EncoderDecoderConfig``), saved inside
    ``config.json`` so that ``from_pretrained`` rebuilds the model without the network; it is never fetched
    here (:meth:`~hf_dialeval.modeling.base.DialEvalPreTrainedModel.from_backbone` reads it from a checkpoint).

    Args:
        backbone_config: the backbone's config (a ``PretrainedConfig``, or its dict with ``model_type``).
        backbone_name_or_path: where the backbone's pretrained weights come from (Hub id or path); what an
            adapter checkpoint, which holds no backbone weights, is rebuilt from.
        max_seq_length: tokens per model input, special tokens included (the one name for the token limit).
        score_scale: optional calibration ``(low, high)``: ``calibrated = low + (high - low) * score`` (QuantiDCE's
            human 1–5 scale); ``None`` leaves scores as the model gives them.
        scoring_dtype: the precision the metric computes in when none is asked for (``"bf16"``: measured to change
            no benchmark's Spearman by more than 0.01), used where the device computes it natively (a GPU, a CPU with
            bf16 instructions) and fp32 elsewhere; ``None``: fp32.
    """

    sub_configs = {"backbone_config": AutoConfig}

    def __init__(
        self,
        backbone_config: PretrainedConfig | Mapping[str, Any] | None = None,
        backbone_name_or_path: str | None = None,
        max_seq_length: int = 512,
        score_scale: Sequence[float] | None = None,
        scoring_dtype: str | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(backbone_config, Mapping):
            values = {k: v for k, v in backbone_config.items() if k != "_name_or_path"}
            if "model_type" not in values:
                raise ValueError("backbone_config needs its 'model_type' (e.g. 'bert')")
            backbone_config = AutoConfig.for_model(values.pop("model_type"), **values)
        elif backbone_config is not None and not isinstance(backbone_config, PretrainedConfig):
            raise TypeError(f"backbone_config must be a config or its dict, not {type(backbone_config).__name__}: to "
                            "start from a checkpoint, use the model class's from_backbone(name_or_path)")
        if int(max_seq_length) < 4:
            raise ValueError(f"max_seq_length={max_seq_length}: leave room for the special tokens and some text")
        self.backbone_config = backbone_config
        self.backbone_name_or_path = backbone_name_or_path
        self.max_seq_length = int(max_seq_length)
        self.score_scale = None if score_scale is None else check_scale(score_scale, "score_scale")
        self.scoring_dtype = scoring_dtype  # checked where a metric resolves it (the inference layer's precisions)
        super().__init__(**kwargs)

    def calibrate(self, scores: Any) -> Any:
        """Scores on the calibrated scale (unchanged without ``score_scale``)."""
        return scores if self.score_scale is None else linear_scale(scores, self.score_scale)


register_available()  # what waited for this module (see hf_dialeval.modeling.registration)
