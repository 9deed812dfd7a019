"""What a cell holding texts means, in every reader of a user's data (``score``, ``benchmark``, ``train``, ``adapt``):
the utterances of a context or dialogue, or its speakers.

A cell is a list of texts (JSON, JSONL, Parquet, a ``datasets`` folder), or one text, as every CSV cell is. One text
is a JSON array of texts when it reads as one (``["Hi!", "Hello."]``), and otherwise the texts split on the separator
(``--context-separator``; by default a line break, ``\\n`` or ``\\r\\n``, one utterance per line of a multi-line cell;
a separator that ends the cell ends its last utterance, adding no empty one). An empty cell is no texts. A text that opens like a JSON
array of texts (``["``) but is not one is an error, never a wrongly split context; one that merely starts with a
bracket (``[laughs] sure``) is text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

#: What separates the texts of a cell given as one text, unless ``--context-separator`` says otherwise.
DEFAULT_SEPARATOR = "\n"
#: How a cell that means to be a JSON array of texts opens.
_JSON_ARRAY_OPENING = re.compile(r'\s*\[\s*["\]]')


def text_list(value: Any, separator: str, fail: Callable[[str], Exception], noun: str = "utterance") -> list[str]:
    """The texts of a cell (see the module); ``fail`` makes the error of a cell that is none."""
    if value is None:
        return []
    if isinstance(value, str):
        return _split(value, separator, fail, noun)
    if not isinstance(value, list):
        raise fail(f"expected a list of {noun}s or one text, got {type(value).__name__}")
    for position, text in enumerate(value):
        if not isinstance(text, str):
            raise fail(f"{noun} {position}: expected a text, got {type(text).__name__}")
    return value


def _split(text: str, separator: str, fail: Callable[[str], Exception], noun: str) -> list[str]:
    if not text:
        return []
    if _JSON_ARRAY_OPENING.match(text):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise fail(f"starts like a JSON array of {noun}s but is not one ({error}): give a JSON array of texts, "
                       f"or the {noun}s split by the separator") from None
        return text_list(value, separator, fail, noun)
    if separator == DEFAULT_SEPARATOR:  # a file saved on Windows ends its lines with \r\n
        text = text.replace("\r\n", "\n")
    return text.removesuffix(separator).split(separator)
