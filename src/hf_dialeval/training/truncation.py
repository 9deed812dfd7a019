"""What a training record says of the inputs cut to fit the model: how many of how many, to how many tokens, and
which end lost its tokens (the user's long conversations are cut, never refused)."""

from __future__ import annotations

from typing import Any

import datasets

#: What the context-and-reply builders cut first: the reply keeps its tokens while the context has any.
OLDEST_CONTEXT_FIRST = "the oldest tokens of the context first"
#: What the dialogue builders cut: the dialogue keeps its start.
DIALOGUE_END = "the end of the dialogue"
#: What the window builders cut: an utterance longer than a window by itself keeps its start.
UTTERANCE_END = "the end of an utterance longer than a window"


def truncation_record(examples: datasets.Dataset, token_limit: int, cut: str) -> dict[str, Any]:
    """The record of ``examples``' ``truncated`` column: ``{"items", "of", "token_limit", "cut"}``."""
    return {"items": int(sum(examples["truncated"])), "of": len(examples), "token_limit": token_limit, "cut": cut}
