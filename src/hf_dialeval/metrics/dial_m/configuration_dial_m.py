"""Configuration of Dial-M (Dey & Desarkar 2023): a masked language model pre-trained on dialogues and fine-tuned to
predict a response's masked keywords; the mean cross-entropy of each keyword, masked on its own, is the score. On a
causal LM (this package's adaptation), each keyword's cross-entropy given everything before it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hf_dialeval.data.copies import check_copy_span
from hf_dialeval.metrics.dial_m import check_variant
from hf_dialeval.metrics.dial_m.keywords import KEYWORD_POS_TAGS, MAX_KEYWORDS
from hf_dialeval.modeling.configuration import DialEvalConfig
from hf_dialeval.modeling.registration import register_available

#: The end-of-utterance token that joins a dialogue's utterances (§2.1), added to the tokenizer.
EOU_TOKEN = "<eou>"
#: Which language model predicts the keywords: a masked LM (the paper) or a causal LM (this package's adaptation).
LM_KINDS = ("masked-lm", "causal-lm")


class DialMConfig(DialEvalConfig):
    """Every setting of Dial-M's keyword scoring (backbone, weights source and token limit as in
    :class:`~hf_dialeval.modeling.configuration.DialEvalConfig`; the backbone is a masked LM config, or a causal LM's).

    Args:
        lm_kind: ``"masked-lm"`` (the paper: each keyword masked on its own and predicted from both sides) or
            ``"causal-lm"`` (each keyword predicted from the condition, the context and the response before it; the
            dialogue laid out as a speaker-tagged transcript, see :mod:`hf_dialeval.metrics.dial_m.data`).
        eou_token: the token that ends each utterance (``<bos> u_1 <eou> … û_t <eou> <eos>``), a special token the
            tokenizer gains; ``None`` uses the tokenizer's own separator (``</s>``, ``[SEP]``) instead, as the
            authors score a backbone that was never trained with ``<eou>``. A causal LM reads a transcript and
            takes none.
        eou_token_id: its id in the tokenizer (set when the model is built).
        eou_token_added: whether the model added ``eou_token`` to the backbone's vocabulary (its embedding row then
            trains with the head and ships with an adapter).
        max_keywords: keywords per response at most (YAKE!'s top ones, then POS-tagged words).
        keyword_pos_tags: the Penn POS tags whose words are keywords besides YAKE!'s.
        max_seq_length: tokens per input (the paper: 512). The context's oldest utterances go first, then the
            condition's end, then the previous utterance's start; the response is never cut unless it alone does
            not fit.
        detokenize: a causal LM reads texts written back the ordinary way (``"Hi , how are you ?"`` becomes
            ``"Hi, how are you?"``; :func:`~hf_dialeval.data.text.detokenize`), as a pretrained LM has read them.
        variant: the score this checkpoint gives unless asked for the other: ``"eq1"`` (the paper's Eq. 1) or
            ``"context-gain"`` (how much the context and condition lower the keyword losses).
        copy_span: the shortest run of tokens that counts as a copy of the dialogue before the response (not the
            condition) or of the response's own earlier tokens (a shorter response only when all of it is one;
            :func:`hf_dialeval.data.copies.copied_tokens`). A keyword occurrence in a copy scores the lowest score,
            as a reply without a keyword does: a copy cannot answer for the keyword it repeats, so an echo of the
            user or a turn said again scores as an empty reply. 0: every keyword is scored as in the paper (a
            keyword the context holds verbatim is then predicted almost for certain).
    """

    model_type = "dial-m"

    def __init__(
        self,
        lm_kind: str = "masked-lm",
        eou_token: str | None = EOU_TOKEN,
        eou_token_id: int | None = None,
        eou_token_added: bool = False,
        max_keywords: int = MAX_KEYWORDS,
        keyword_pos_tags: Sequence[str] = KEYWORD_POS_TAGS,
        max_seq_length: int = 512,
        detokenize: bool = False,
        variant: str = "eq1",
        copy_span: int = 0,
        **kwargs: Any,
    ) -> None:
        if int(max_keywords) < 1:
            raise ValueError(f"max_keywords must be 1 or more, not {max_keywords!r}")
        if lm_kind not in LM_KINDS:
            raise ValueError(f"lm_kind must be one of {LM_KINDS}, not {lm_kind!r}")
        self.lm_kind = lm_kind
        self.detokenize = bool(detokenize)
        self.variant = check_variant(variant)
        self.copy_span = check_copy_span(copy_span)
        if lm_kind == "causal-lm":  # a transcript's lines end utterances
            eou_token, eou_token_id, eou_token_added = None, None, False
        self.eou_token = eou_token
        self.eou_token_id = eou_token_id
        self.eou_token_added = bool(eou_token_added)
        self.max_keywords = int(max_keywords)
        self.keyword_pos_tags = list(keyword_pos_tags)
        super().__init__(max_seq_length=max_seq_length, **kwargs)


register_available()  # with AutoConfig / AutoModel (see hf_dialeval.modeling.registration)
