"""Which column of a user's data holds each field of the data model: one mapping for every reader (``score``,
``benchmark``, ``train``, ``adapt``), set by the same flags everywhere (``--context-column``, ``--response-column``,
``--reference-column``, ``--condition-column``, ``--context-separator``, and ``--score-column``, ``--dialogue-column``,
``--speakers-column`` where a command reads those fields). A cell that holds texts is read by one rule
(:func:`~hf_dialeval.data.cells.text_list`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from hf_dialeval.data.cells import DEFAULT_SEPARATOR
from hf_dialeval.data.model import DialogueValidationError


@dataclasses.dataclass(frozen=True)
class Columns:
    """The column of each field (its own name unless the user's data names it otherwise), and what separates the
    texts of a cell given as one text."""

    context: str = "context"
    response: str = "response"
    reference: str = "reference"
    condition: str = "condition"
    score: str = "score"
    system: str = "system"
    dialogue: str = "dialogue"
    speakers: str = "speakers"
    context_separator: str = DEFAULT_SEPARATOR

    def column(self, field: str) -> str:
        return getattr(self, field)

    @functools.cached_property
    def renamed(self) -> dict[str, str]:
        """The columns named otherwise than their field: column -> field (worked out once: the streamed reader asks
        for every row)."""
        return {self.column(field.name): field.name for field in dataclasses.fields(self)
                if field.name != "context_separator" and self.column(field.name) != field.name}

    def check_names(self, names: Iterable[str], where: str) -> None:
        """Refuse data holding both a mapped column and another column of its field's name (``--context-column turns``
        beside a ``context`` column), naming ``where`` it is: which one is meant cannot be guessed."""
        present = set(names)
        for column, field in self.renamed.items():
            if column in present and field in present:
                raise DialogueValidationError(f"{where}: the columns '{column}' and '{field}' both give the {field}: "
                                              f"rename or drop one, or name the other with --{field}-column")

    def as_fields(self, row: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``row`` (checked by :meth:`check_names`) with each mapped column under its field's name, every other column
        as it is."""
        if not self.renamed:
            return dict(row)
        self.check_names(row, where)
        return {self.renamed.get(column, column): value for column, value in row.items()}
