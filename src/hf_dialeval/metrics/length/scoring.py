"""The ``length`` floor metric: mean number of whitespace-separated words per system utterance.

It needs no model, so the meta-evaluation harness runs end to end before any learned metric exists, and
every learned metric has a floor to beat (long, specific answers are rated higher by people).
"""

from __future__ import annotations

from hf_dialeval.data.model import system_turn_indices
from hf_dialeval.inference.metric import DialogueMetric
from hf_dialeval.inference.score_output import ScoreOutput
from hf_dialeval.metrics.length import ENTRY


class LengthMetric(DialogueMetric):
    """Dialogue level: mean words per system utterance (the system speaker's, else every second utterance
    starting with the second). Turn level: words in the response."""

    name, level = ENTRY.name, ENTRY.level
    dimensions = ("length",)
    #: An empty response has no words.
    lowest_score = 0.0

    def _score_dialogues(self, dialogues: list[list[str]], speakers: list[list[str] | None]) -> ScoreOutput:
        values = []
        for dialogue, dialogue_speakers in zip(dialogues, speakers):
            indices = system_turn_indices(len(dialogue), dialogue_speakers)
            values.append(sum(len(dialogue[i].split()) for i in indices) / len(indices))
        return ScoreOutput({"length": values}, list(values))

    def _score_turns(
        self, contexts: list[list[str]], responses: list[str], conditions: list[str | None], references: list[str | None]
    ) -> ScoreOutput:
        values = [float(len(response.split())) for response in responses]
        return ScoreOutput({"length": values}, list(values))
