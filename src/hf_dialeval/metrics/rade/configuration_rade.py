"""Configuration of RADE (Shi et al. 2023, §5.1): a seq2seq backbone whose encoder reads
``context [SEP] reference [SEP] candidate`` for a feed-forward head predicting both responses' scores, and whose
decoder generates the reference from the context alone; or, this package's adaptation, one causal LM doing both."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_dialeval.modeling.calibration import check_scale
from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available

POOLING_MODES = ("segments", "mean", "first", "last")
#: The backbone: a seq2seq model (the paper's BART) or a decoder-only causal LM (this package's adaptation).
LM_KINDS = ("seq2seq", "causal-lm")
#: The pooling modes of a causal LM's posterior input (whose first token has seen nothing, and which has no separator).
CAUSAL_POOLING_MODES = ("last", "mean")


class RADEConfig(DialEvalConfig):
    """Every hyper-parameter of RADE's forward pass (backbone, weights source and token limit as in
    :class:`~hf_dialeval.modeling.configuration.DialEvalConfig`; the backbone is a seq2seq config: BART's, or an
    ``EncoderDecoderConfig`` of an encoder turned into an encoder–decoder).

    Args:
        lm_kind: ``"seq2seq"`` (the paper: the posterior encoder is the encoder of a seq2seq model whose decoder is the
            generator) or ``"causal-lm"`` (this package's adaptation: one decoder-only LM reads the posterior input
            as a transcript, ``A: …\\nB: …\\nReference: …\\nCandidate: …``, for the head, and is the generator,
            trained on the reference's tokens given the context's transcript; see
            :mod:`~hf_dialeval.metrics.rade.data`).
        pooling: how the posterior encoder's token vectors become one (Eq. 3, which the paper leaves open):
            ``"segments"`` (the default, this package's choice): the means over all real tokens, over the
            reference's tokens and over the candidate's, and the candidate's minus the reference's, concatenated
            (each token contextualised by the whole input; the head compares the two responses directly);
            ``"mean"`` over real tokens (how sentence encoders such as MiniLM were trained); ``"first"``, the
            first token's vector (``[CLS]``, BART's ``<s>``); ``"last"``, the last real token's, the one token of a
            causal LM that has read the whole input. A causal LM pools ``"last"`` or ``"mean"``.
        max_seq_length: tokens per ``context [SEP] reference [SEP] candidate`` input (the oldest context goes
            first; see :func:`~hf_dialeval.metrics.rade.data.encode_posterior`); the generator's context input is cut to
            the same length.
        max_reference_length: tokens of the reference the generator learns to produce (its end is cut).
        human_scale: ``(low, high)`` of the human rating scale the head predicts on (1–5 in the paper's data):
            the head's output bias starts at the middle, and an empty candidate scores ``low``.
        head_dropout: dropout before each of the head's two linear layers while training.
        length_features: with ``"segments"`` pooling, also give the head ``log(1 + token count)`` of the
            reference and of the candidate (what a mean over tokens leaves out; people rate longer, more specific
            replies higher in RADE's data). This package's addition, off by default.
        sep_token_id: the tokenizer's separator (``[SEP]``, BART's ``</s>``), which ``"segments"`` pooling reads
            the reference and the candidate off: the candidate lies between the last two runs of separators, the
            reference between the two before.
        detokenize: a causal LM reads texts written back the ordinary way (``"Hi , how are you ?"`` becomes
            ``"Hi, how are you?"``; :func:`~hf_dialeval.data.text.detokenize`), as a pretrained LM has read them.
    """

    model_type = "rade"

    def __init__(
        self,
        pooling: str = "segments",
        max_seq_length: int = 256,
        max_reference_length: int = 64,
        human_scale: Sequence[float] = (1.0, 5.0),
        head_dropout: float = 0.1,
        length_features: bool = False,
        sep_token_id: int | None = None,
        lm_kind: str = "seq2seq",
        detokenize: bool = False,
        **kwargs: Any,
    ) -> None:
        if pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}, not {pooling!r}")
        if lm_kind not in LM_KINDS:
            raise ValueError(f"lm_kind must be one of {LM_KINDS}, not {lm_kind!r}")
        if lm_kind == "causal-lm" and pooling not in CAUSAL_POOLING_MODES:
            raise ValueError(f"a causal LM pools {' or '.join(CAUSAL_POOLING_MODES)}, not {pooling!r}")
        if int(max_reference_length) < 3:
            raise ValueError(f"max_reference_length={max_reference_length}: leave room for the special tokens and text")
        if not 0.0 <= float(head_dropout) < 1.0:
            raise ValueError(f"head_dropout must be in [0, 1), not {head_dropout!r}")
        if length_features and pooling != "segments":
            raise ValueError("length_features counts the reference's and the candidate's tokens: use pooling='segments'")
        self.pooling = pooling
        self.lm_kind = lm_kind
        self.detokenize = bool(detokenize)
        self.length_features = bool(length_features)
        self.sep_token_id = sep_token_id
        self.max_reference_length = int(max_reference_length)
        self.human_scale = check_scale(human_scale, "human_scale")
        self.head_dropout = float(head_dropout)
        super().__init__(max_seq_length=max_seq_length, **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
