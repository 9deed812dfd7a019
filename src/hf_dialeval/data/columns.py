"""Which column of a user's data holds each field of the data model: one mapping for every reader (``score``,
``benchmark``, ``train``, ``adapt``), set by the same flags everywhere (``--context-column``, ``--response-column``,
``--reference-column``, ``--condition-column``, ``--context-separator``, and ``--score-column``, ``--dialogue-column``,
``--speakers-column`` where a command reads those fields). A cell that holds texts is read by one rule
(:func:`~hf_dialeval.data.cells.text_list`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
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

    def renamed(self) -> dict[str, str]:
        """The columns named otherwise than their field: column -> field."""
        return {self.column(field.name): field.name for field in dataclasses.fields(self)
                if field.name != "context_separator" and self.column(field.name) != field.name}

    def as_fields(self, row: Mapping[str, Any], where: str) -> dict[str, Any]:
        """``row`` with each mapped column under its field's name, every other column as it is. A row that holds both
        a mapped column and another column of its field's name (``--context-column turns`` beside a ``context``
        column) is refused, naming ``where`` it is: which one is meant cannot be guessed."""
        renamed = self.renamed()
        if not renamed:
            return dict(row)
        fields: dict[str, Any] = {}
        for column, value in row.items():
            field = renamed.get(column, column)
            if field in fields:
                raise DialogueValidationError(f"{where}: the columns '{column}' and '{field}' both give the {field}: rename or "
                                 f"drop one, or name the other with --{field}-column")
            fields[field] = value
        return fields
