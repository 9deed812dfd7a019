"""The dialogue data model shared by every metric: item kinds, their ``datasets.Features`` and validation.

Three kinds of item exist:

* dialogue level: ``{"dialogue": [utterance, ...], "speakers": [speaker, ...] | None}``
* turn level: ``{"context": [utterance, ...], "response": str, "condition": str | None}``
  (``condition`` is a persona, a knowledge fact, ...; ``context`` may be empty for utterance-level data)
* reference assisted: a turn-level item plus ``"reference": str | None``

Human-rated datasets add one float column per rated dimension (``None`` where no annotator gave a number).

Empty text is data, not an error: real releases hold utterances a user sent empty and replies a bot never
gave. An empty or whitespace-only utterance or response is kept in place (so speaker alternation stays
intact) and every metric scores such items (each documents what an empty response scores; the output marks
them in ``empty``). An empty ``condition`` or ``reference`` means none. A dialogue with no utterances, a
non-string, a missing key and lists of unequal length remain errors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hf_dialeval.errors import DialEvalError

if TYPE_CHECKING:
    import datasets

#: Columns of each item kind: a list of strings (``True``) or one string (``False``).
DIALOGUE_COLUMNS = {"dialogue": True, "speakers": True}
TURN_COLUMNS = {"context": True, "response": False, "condition": False, "reference": False}

#: Speaker labels that denote the system under evaluation (compared case-insensitively).
SYSTEM_SPEAKERS = frozenset({"system", "bot", "model", "assistant", "agent", "chatbot"})


class DialogueValidationError(DialEvalError, ValueError):
    """Dialogue data (an item, a line of an input file, a benchmark's file) does not follow the data model; the
    message names the item or line and the field."""


def item_features(level: str) -> datasets.Features:
    """The ``datasets.Features`` of one item kind (``datasets`` is imported only here: the CLI starts fast)."""
    import datasets

    columns = DIALOGUE_COLUMNS if level == "dialogue" else TURN_COLUMNS
    string = datasets.Value("string")
    return datasets.Features({name: datasets.Sequence(string) if is_list else string
                              for name, is_list in columns.items()})


def is_blank(text: str) -> bool:
    """Whether a text is empty or whitespace only (an utterance nobody wrote)."""
    return not text.strip()


def has_empty_text(item: Mapping[str, Any]) -> bool:
    """Whether a valid item holds an empty utterance or response (condition and reference do not count)."""
    texts = item["dialogue"] if "dialogue" in item else [*item["context"], item["response"]]
    return any(is_blank(text) for text in texts)


def _fail(index: int, field: str, problem: str, fix: str) -> DialogueValidationError:
    return DialogueValidationError(f"item {index}, field '{field}': {problem}. {fix}")


def _check_text(value: Any, index: int, field: str) -> None:
    if not isinstance(value, str):
        raise _fail(index, field, f"expected a string, got {type(value).__name__}", "Pass the text as a str.")


def _check_utterances(value: Any, index: int, field: str, allow_empty: bool) -> None:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise _fail(
            index, field, f"expected a list of utterances, got {type(value).__name__}",
            "Split the text into a list with one string per utterance.",
        )
    if not value and not allow_empty:
        raise _fail(index, field, "the dialogue has no utterances", "Give at least one utterance.")
    for position, utterance in enumerate(value):
        _check_text(utterance, index, f"{field}[{position}]")


def _require(item: Mapping[str, Any], key: str, index: int) -> Any:
    if not isinstance(item, Mapping):
        raise DialogueValidationError(f"item {index}: expected a mapping of fields, got {type(item).__name__}.")
    if key not in item:
        raise _fail(index, key, "the key is missing", f"Every item of this kind needs '{key}'.")
    return item[key]


def validate_dialogue_item(item: Mapping[str, Any], index: int = 0) -> None:
    """Raise :class:`DialogueValidationError` unless ``item`` is a valid dialogue-level item."""
    dialogue = _require(item, "dialogue", index)
    _check_utterances(dialogue, index, "dialogue", allow_empty=False)
    speakers = item.get("speakers")
    if speakers:
        _check_utterances(speakers, index, "speakers", allow_empty=False)
        if len(speakers) != len(dialogue):
            raise _fail(
                index, "speakers", f"{len(speakers)} speakers for {len(dialogue)} utterances",
                "Give one speaker per utterance, or none at all.",
            )


def validate_turn_item(item: Mapping[str, Any], index: int = 0) -> None:
    """Raise :class:`DialogueValidationError` unless ``item`` is a valid turn-level (or reference) item."""
    _check_utterances(_require(item, "context", index), index, "context", allow_empty=True)
    _check_text(_require(item, "response", index), index, "response")
    for optional in ("condition", "reference"):
        if item.get(optional) is not None:
            _check_text(item[optional], index, optional)


def validate_optional_texts(values: Sequence[Any], field: str) -> None:
    """Raise :class:`DialogueValidationError` unless each value of the optional text ``field`` (one per item: a
    ``condition`` or ``reference`` given apart from the items, which were checked without it) is a string or None."""
    for index, value in enumerate(values):
        if value is not None:
            _check_text(value, index, field)


def validate_score(value: Any, index: int, dimension: str) -> None:
    """A human score must be a finite number or ``None`` (no rating)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(
            index, dimension, f"human score {value!r} is not a finite number",
            "Use a finite number, or None for an item with no rating.",
        )


def item_list(value: Any, name: str) -> list[Any]:
    """An argument that holds one entry per item (``contexts``, ``responses``, ...) as a list. A single text, a
    generator or a mapping is an error saying what was expected: a text iterated by character, or a generator used up
    by a first pass, would score the wrong items."""
    if isinstance(value, str):
        raise DialogueValidationError(f"'{name}' is a single text, not a list: give a list with one entry per item, "
                                      f"e.g. [{value[:30]!r}]")
    if not isinstance(value, Sequence):
        raise DialogueValidationError(f"'{name}' is a {type(value).__name__}, not a list: give a list with one entry "
                                      f"per item (e.g. list(...) of it)")
    return list(value)


def item_level(item: Mapping[str, Any], index: int = 0) -> str:
    """``"dialogue"`` or ``"turn"``: which kind of item the first item of a list is (``index``: its place in the
    whole input, for the error)."""
    if not isinstance(item, Mapping):
        raise DialogueValidationError(
            f"item {index}: expected a mapping of fields such as {{\"dialogue\": [...]}}, got {type(item).__name__}.")
    if "dialogue" in item:
        return "dialogue"
    if "response" in item:
        return "turn"
    raise DialogueValidationError(
        f"item {index}: cannot tell the item's kind from its keys {sorted(item)}: a dialogue-level item has "
        "'dialogue', a turn-level item has 'context' and 'response'."
    )


def validate_items(items: Iterable[Mapping[str, Any]], level: str, first_index: int = 0) -> None:
    """Validate every item of one kind; the first bad item raises, naming its index (counted from
    ``first_index``: a chunk of a longer input names the item's place in the input) and field."""
    validate = validate_dialogue_item if level == "dialogue" else validate_turn_item
    for index, item in enumerate(items, start=first_index):
        validate(item, index)


def is_system_speaker(speaker: str) -> bool:
    return speaker.strip().lower() in SYSTEM_SPEAKERS


def system_turn_indices(num_utterances: int, speakers: Sequence[str] | None) -> list[int]:
    """Indices of the system's utterances.

    With speakers, the utterances of a system speaker (:data:`SYSTEM_SPEAKERS`); without, or when no
    speaker is a system one, every second utterance starting with the second (the user opens).
    A one-utterance dialogue has no second turn: its only utterance is taken as the system's.
    """
    if speakers:
        indices = [i for i, speaker in enumerate(speakers) if is_system_speaker(speaker)]
        if indices:
            return indices
    return list(range(1, num_utterances, 2)) or [0]


def turn_to_dialogue(context: Sequence[str], response: str) -> list[str]:
    """A dialogue-level metric scores a turn-level item as the dialogue ``context + [response]``."""
    return [*context, response]


def dialogue_to_turns(dialogue: Sequence[str], speakers: Sequence[str] | None) -> list[tuple[list[str], str]]:
    """A turn-level metric scores a dialogue by its system turns, each with its preceding context."""
    return [(list(dialogue[:i]), dialogue[i]) for i in system_turn_indices(len(dialogue), speakers)]

