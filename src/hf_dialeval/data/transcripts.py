"""How a dialogue is laid out for a causal language model: the token ids that frame its utterances, shared by every
metric that scores text with one (HolisticEval's likelihoods, Dial-M's keyword losses on a causal LM).

Two layouts (:data:`PROMPT_FORMATS`):

* ``special-tokens`` (an LM trained for a metric, such as HolisticEval's GPT-2 or the small one trained from scratch):
  ``<bos> u_1 <sep> u_2 <sep> … u_n <eos>``. ``<bos>`` is the tokenizer's BOS token (GPT-2's ``<|endoftext|>``), else
  its CLS token (BERT's ``[CLS]``); ``<sep>`` is its SEP token, else its EOS token (GPT-2: ``<|endoftext|>``, the turn
  separator DialoGPT uses); ``<eos>`` is its EOS token, else ``<sep>``.
* ``speaker-tags`` (a pretrained LM, which has read transcripts rather than separator tokens): the utterances as lines
  tagged ``A:`` and ``B:`` in turn from the sequence's first line (``A: query\\nB: response``), after the start token
  the tokenizer itself puts before a text (Gemma's ``<bos>``; none for GPT-2 or SmolLM2); a training sequence ends
  with ``<eos>``.

With ``detokenize`` set, texts are first written back the ordinary way (:func:`~hf_dialeval.data.text.detokenize`:
DailyDialog's ``"Hi , how are you ?"`` becomes ``"Hi, how are you?"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transformers import PreTrainedTokenizerBase

from hf_dialeval.data.text import detokenize

#: How the utterances of a sequence are laid out for a causal LM.
PROMPT_FORMATS = ("special-tokens", "speaker-tags")
#: The speaker tags of ``speaker-tags``, in turn from a sequence's first line.
SPEAKER_TAGS = ("A", "B")


@dataclass(frozen=True)
class Layout:
    """The token ids that frame a sequence's utterances in one of :data:`PROMPT_FORMATS`: ``start`` opens every
    sequence, ``openers[p % len(openers)]`` comes before the utterance at position ``p > 0`` of the sequence (the
    first one gets ``first``), ``end`` closes a training sequence; ``text_prefix`` is put before every utterance's text
    when it is tokenised (the space after a speaker tag), and ``detokenize`` says whether texts are detokenised."""

    start: tuple[int, ...]
    first: tuple[int, ...]
    openers: tuple[tuple[int, ...], ...]
    end: tuple[int, ...]
    text_prefix: str = ""
    detokenize: bool = False

    @classmethod
    def of(cls, tokenizer: PreTrainedTokenizerBase, prompt_format: str = "special-tokens",
           detokenize_texts: bool = False) -> Layout:
        if prompt_format not in PROMPT_FORMATS:
            raise ValueError(f"prompt_format must be one of {PROMPT_FORMATS}, not {prompt_format!r}")
        if prompt_format == "speaker-tags":
            own_start = tokenizer("")["input_ids"][:1]
            start = tuple(own_start) if own_start == [tokenizer.bos_token_id] else ()
            if tokenizer.eos_token_id is None:
                raise ValueError(f"{type(tokenizer).__name__} has no EOS token: the speaker-tags layout ends a "
                                 "training sequence with it")
            return cls(start, tuple(text_ids(tokenizer, f"{SPEAKER_TAGS[0]}:")),
                       tuple(tuple(text_ids(tokenizer, f"\n{tag}:")) for tag in SPEAKER_TAGS),
                       (tokenizer.eos_token_id,), text_prefix=" ", detokenize=detokenize_texts)
        bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.cls_token_id
        sep = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if bos is None or sep is None:
            raise ValueError(f"{type(tokenizer).__name__} has neither a BOS nor a CLS token, or neither a SEP nor an "
                             "EOS token: the special-tokens layout needs one of each to mark where utterances start")
        eos = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else sep
        return cls((bos,), (), ((sep,),), (eos,), detokenize=detokenize_texts)

    @classmethod
    def of_config(cls, tokenizer: PreTrainedTokenizerBase, config: Any) -> Layout:
        """The layout a metric config names in its ``prompt_format`` and ``detokenize``."""
        return cls.of(tokenizer, config.prompt_format, config.detokenize)

    def opener(self, position: int) -> list[int]:
        """The ids before the utterance at ``position`` of a sequence."""
        return list(self.first if position == 0 else self.openers[position % len(self.openers)])

    def texts(self, texts: Sequence[str]) -> list[str]:
        """``texts`` as they are tokenised after an opener (detokenised, when the layout says so)."""
        return [self.text_prefix + (detokenize(text) if self.detokenize else text) for text in texts]


def text_ids(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    """``text``'s token ids, without special tokens."""
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> PreTrainedTokenizerBase:
    """GPT-2 has no padding token: pad with its EOS token (padding is masked out of attention and of every
    score and loss, so which id fills it does not matter)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def utterance_ids(tokenizer: PreTrainedTokenizerBase, layout: Layout, texts: Sequence[str]) -> list[list[int]]:
    """Each of ``texts`` tokenised as it follows its opener (all in one call)."""
    if not texts:
        return []
    return tokenizer(layout.texts(texts), add_special_tokens=False, verbose=False)["input_ids"]


def transcript_ids(tokenizer: PreTrainedTokenizerBase, layout: Layout, contexts: Sequence[Sequence[str]]
                   ) -> list[list[int]]:
    """Each context's utterances as one transcript, each after its opener (all utterances tokenised in one call)."""
    utterances = [utterance for context in contexts for utterance in context]
    ids = iter(utterance_ids(tokenizer, layout, utterances))
    transcripts = []
    for context in contexts:
        transcript: list[int] = []
        for position in range(len(context)):
            transcript += layout.opener(position) + next(ids)
        transcripts.append(transcript)
    return transcripts


def newest_tokens(ids: list[int], budget: int) -> list[int]:
    """The newest ``budget`` tokens of ``ids`` (the oldest are cut first; nothing for a budget below 1)."""
    return ids[max(len(ids) - budget, 0) :] if budget > 0 else []
