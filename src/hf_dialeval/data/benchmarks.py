"""Human-judgement benchmarks as ``datasets.Dataset``: item columns plus one float column per rated dimension.

Every rating column holds the mean over annotators; ratings that are not numbers (FED's ``N/A (...)``) are
left out of the mean, and an item with no numeric rating for a dimension gets ``None`` there (it is then
left out of that dimension's correlation).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_dialeval.data.cells import DEFAULT_SEPARATOR, text_list
from hf_dialeval.data.columns import Columns
from hf_dialeval.data.model import (
    DIALOGUE_COLUMNS,
    TURN_COLUMNS,
    DialogueValidationError,
    item_features,
    validate_dialogue_item,
    validate_score,
    validate_turn_item,
)
from hf_dialeval.data.paths import data_files, resolve_data_dir
from hf_dialeval.errors import OptionError, PathError, UnknownNameError

if TYPE_CHECKING:
    import datasets

#: The human score of an item's reference response (RADE's data rate the reference too).
REFERENCE_SCORE = "reference_score"
#: Which system wrote an item (where the release says), and which context a turn-level item answers: a hash of
#: its context and condition, shared by every candidate reply to it (the grouped correlation's groups); none for
#: an item with neither.
SYSTEM = "system"
CONTEXT_ID = "context_id"
#: Columns that describe the item (everything else in a benchmark is a human-rated dimension).
ITEM_COLUMNS = frozenset({*DIALOGUE_COLUMNS, *TURN_COLUMNS, SYSTEM, CONTEXT_ID, REFERENCE_SCORE})
#: The generic release format's marker for "this item has no reference".
NO_REFERENCE = "NO REF"


@dataclass(frozen=True)
class BenchmarkSpec:
    """What a benchmark is, where it comes from, and how to load it."""

    name: str
    level: str
    description: str
    source: str
    license: str
    citation: str
    load: Callable[[Path, str], datasets.Dataset]
    splits: tuple[str, ...] = ("test",)


def is_not_rated(rating: Any) -> bool:
    """Whether a rating says the annotator gave none: FED's ``"N/A (...)"`` strings (any case), or a blank."""
    return isinstance(rating, str) and (not rating.strip() or rating.strip().upper().startswith("N/A"))


def mean_rating(ratings: Iterable[Any]) -> float | None:
    """Mean of the numeric ratings; ``N/A`` strings, blanks and ``None`` are skipped. ``None`` if none is left."""
    values = []
    for rating in ratings:
        if isinstance(rating, str):
            try:
                rating = float(rating)
            except ValueError:
                continue
        if rating is None or isinstance(rating, bool) or not math.isfinite(rating):
            continue
        values.append(float(rating))
    return sum(values) / len(values) if values else None


def human_dimensions(dataset: datasets.Dataset) -> list[str]:
    """The human-rated dimension columns of a benchmark dataset, in column order."""
    return [column for column in dataset.column_names if column not in ITEM_COLUMNS]


def context_id(context: Sequence[str], condition: str | None = None) -> str:
    """The id of a turn's context: the same for every candidate reply to the same context and condition."""
    key = json.dumps([[normalised_text(u) for u in context], normalised_text(condition or "")], ensure_ascii=False)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def _build(rows: list[dict[str, Any]], level: str, dimensions: Sequence[str]) -> datasets.Dataset:
    import datasets

    ratings = {dimension: datasets.Value("float64") for dimension in dimensions}
    reference_score = {REFERENCE_SCORE: datasets.Value("float64")} if any(REFERENCE_SCORE in row for row in rows) else {}
    context = {CONTEXT_ID: datasets.Value("string")} if level == "turn" else {}
    features = datasets.Features({**item_features(level), SYSTEM: datasets.Value("string"), **context,
                                  **reference_score, **ratings})
    defaults = {column: None for column in features}
    if level == "turn":  # a reply to nothing (HolisticEval's fluency set) shares no context with another
        rows = [{**row, CONTEXT_ID: context_id(row["context"], row.get("condition"))
                 if row["context"] or row.get("condition") else None} for row in rows]
    return datasets.Dataset.from_list([{**defaults, **row} for row in rows], features=features)


# --- FED -------------------------------------------------------------------------------------------------

_FED_SPEAKERS = ("User", "System")


def _fed_utterance(line: str) -> tuple[str, str]:
    for speaker in _FED_SPEAKERS:
        if line.startswith(f"{speaker}:"):
            return speaker, line[len(speaker) + 1 :].strip()
    raise DialogueValidationError(f"FED line without a 'User:'/'System:' speaker: {line!r}")


def _fed_lines(text: str) -> list[tuple[str, str]]:
    return [_fed_utterance(line) for line in text.splitlines() if line.strip()]


def _fed_rows(data_dir: Path, turn_level: bool) -> tuple[list[dict[str, Any]], list[str]]:
    records = json.loads((data_dir / "benchmarks/fed/fed_data.json").read_text(encoding="utf-8"))
    rows, dimensions = [], []
    for record in records:
        if ("response" in record) != turn_level:
            continue
        ratings = {dim: mean_rating(values) for dim, values in record["annotations"].items()}
        dimensions.extend(dim for dim in ratings if dim not in dimensions)
        lines = _fed_lines(record["context"])
        if turn_level:
            _, response = _fed_utterance(record["response"].strip())
            row = {"context": [text for _, text in lines], "response": response}
        else:
            row = {"dialogue": [text for _, text in lines], "speakers": [speaker for speaker, _ in lines]}
        rows.append({**row, SYSTEM: record.get("system"), **ratings})
    return rows, dimensions


def _load_fed_dialogue(data_dir: Path, split: str) -> datasets.Dataset:
    rows, dimensions = _fed_rows(data_dir, turn_level=False)
    return _build(rows, "dialogue", dimensions)


def _load_fed_turn(data_dir: Path, split: str) -> datasets.Dataset:
    rows, dimensions = _fed_rows(data_dir, turn_level=True)
    return _build(rows, "turn", dimensions)


# --- USR -------------------------------------------------------------------------------------------------

USR_DIMENSIONS = ("Overall", "Understandable", "Natural", "Maintains Context", "Engaging", "Uses Knowledge")


#: The USR candidate written by the original human partner.
USR_GROUND_TRUTH = "Original Ground Truth"


def _load_usr(file_name: str, ground_truth_as_reference: bool = False) -> Callable[[Path, str], datasets.Dataset]:
    """USR items; with ``ground_truth_as_reference`` each context's original human response becomes the
    ``reference`` of its other candidates and is removed from them (RADE's Table 4 setting)."""

    def load(data_dir: Path, split: str) -> datasets.Dataset:
        records = json.loads((data_dir / "benchmarks/usr" / file_name).read_text(encoding="utf-8"))
        rows = []
        for record in records:
            context = [line.strip() for line in record["context"].split("\n") if line.strip()]
            candidates = record["responses"]
            reference = None
            if ground_truth_as_reference:
                truths = [c for c in candidates if c["model"] == USR_GROUND_TRUTH]
                if len(truths) != 1:
                    raise DialogueValidationError(f"{file_name}: a context has {len(truths)} '{USR_GROUND_TRUTH}' responses, not one")
                reference = truths[0]["response"].strip()
                candidates = [c for c in candidates if c["model"] != USR_GROUND_TRUTH]
            for candidate in candidates:
                rows.append(
                    {
                        "context": context,
                        "response": candidate["response"].strip(),
                        "condition": record["fact"].strip(),
                        "reference": reference,
                        SYSTEM: candidate["model"],
                        **{dim: mean_rating(candidate[dim]) for dim in USR_DIMENSIONS},
                    }
                )
        return _build(rows, "turn", USR_DIMENSIONS)

    return load


# --- CSV releases (PredictiveEngage, HolisticEval) -------------------------------------------------------


def _read_csv(path: Path, header: bool) -> list[Any]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle) if header else csv.reader(handle))


def _load_predictive_engage(data_dir: Path, split: str) -> datasets.Dataset:
    records = _read_csv(data_dir / "benchmarks/predictive_engage/engage_all.csv", header=True)
    rows = [
        {"context": [r["query"].strip()], "response": r["response"].strip(), "Engagement": mean_rating([r["human_score"]])}
        for r in records
    ]
    return _build(rows, "turn", ["Engagement"])


def _load_holistic_context(data_dir: Path, split: str) -> datasets.Dataset:
    # Columns: id, query, response, then ten annotators' 1-5 ratings; no header.
    records = _read_csv(data_dir / "benchmarks/holistic_eval/context_data_release.csv", header=False)
    rows = [{"context": [r[1].strip()], "response": r[2].strip(), "Coherence": mean_rating(r[3:])} for r in records]
    return _build(rows, "turn", ["Coherence"])


def _load_holistic_fluency(data_dir: Path, split: str) -> datasets.Dataset:
    # Columns: id, response, then ten annotators' ratings; utterance level, so the context is empty.
    records = _read_csv(data_dir / "benchmarks/holistic_eval/fluency_data_release.csv", header=False)
    rows = [{"context": [], "response": r[1].strip(), "Fluency": mean_rating(r[2:])} for r in records]
    return _build(rows, "turn", ["Fluency"])


# --- GRADE -----------------------------------------------------------------------------------------------


def _load_grade(corpus: str) -> Callable[[Path, str], datasets.Dataset]:
    def load(data_dir: Path, split: str) -> datasets.Dataset:
        rows = []
        for system_dir in sorted((data_dir / "benchmarks/grade" / corpus).iterdir()):
            columns = {
                part: (system_dir / f"human_{part}.txt").read_text(encoding="utf-8").splitlines()
                for part in ("ctx", "hyp", "ref", "score")
            }
            if len({len(lines) for lines in columns.values()}) != 1:
                raise DialogueValidationError(f"{system_dir}: human_{{ctx,hyp,ref,score}}.txt are not line-aligned")
            for ctx, hyp, ref, score in zip(*columns.values()):
                rows.append(
                    {
                        "context": [u.strip() for u in ctx.split("|||")],
                        "response": hyp.strip(),
                        "reference": ref.strip(),
                        SYSTEM: system_dir.name,
                        "Coherence": mean_rating([score]),
                    }
                )
        return _build(rows, "turn", ["Coherence"])

    return load


# --- RADE ------------------------------------------------------------------------------------------------

RADE_SPLITS = ("train", "validation", "test")


def split_by_context(
    contexts: Sequence[Sequence[str]], ratios: Sequence[int], names: Sequence[str] = RADE_SPLITS
) -> list[str]:
    """Assign each item a split so that no context lands in two splits.

    Contexts are ordered by a hash of their text (deterministic, independent of file order) and handed to
    the splits in turn until each holds its share of the items, ``ratios`` being e.g. ``(5, 1, 1)``.
    """
    by_context: dict[str, list[int]] = {}
    for index, context in enumerate(contexts):
        by_context.setdefault(json.dumps(list(context)), []).append(index)
    order = sorted(by_context, key=lambda key: hashlib.sha256(key.encode("utf-8")).hexdigest())
    bounds = [len(contexts) * sum(ratios[: i + 1]) / sum(ratios) for i in range(len(ratios))]
    assignment = [""] * len(contexts)
    filled, split_index = 0, 0
    for key in order:
        while split_index < len(names) - 1 and filled >= bounds[split_index]:
            split_index += 1
        for index in by_context[key]:
            assignment[index] = names[split_index]
        filled += len(by_context[key])
    return assignment


def _load_rade(domain: str, ratios: tuple[int, int, int]) -> Callable[[Path, str], datasets.Dataset]:
    def load(data_dir: Path, split: str) -> datasets.Dataset:
        path = data_dir / "benchmarks/rade" / domain / "data.jsonl"
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        assignment = split_by_context([r["context"] for r in records], ratios)
        rows = [
            {
                "context": [u.strip() for u in r["context"]],
                "response": r["output"].strip(),
                "reference": r["reference"].strip(),
                REFERENCE_SCORE: mean_rating([r["s_reference"]]),
                "Overall": mean_rating([r["s_output"]]),
            }
            for r, assigned in zip(records, assignment)
            if assigned == split
        ]
        return _build(rows, "turn", ["Overall"])

    return load


# --- generic release format ------------------------------------------------------------------------------


def _json_scores(raw: Any, index: int) -> dict[str, float | None]:
    """A release's score: a number, a list of annotators' numbers, or a mapping of dimension -> either; ``"N/A"``
    (the annotator gave none, as in FED) is left out like a missing rating, in a list or alone."""
    if not isinstance(raw, Mapping):
        raw = {"score": raw}
    scores = {}
    for dimension, value in raw.items():
        if isinstance(value, list):
            value = mean_rating(value)
        elif is_not_rated(value):
            value = None
        validate_score(value, index, f"scores.{dimension}")
        scores[dimension] = None if value is None else float(value)
    return scores


def load_release(path: str | os.PathLike, columns: Columns = Columns()) -> datasets.Dataset:
    """A rated set of the user's own (``json:PATH``): the release format (:func:`load_json_release`, a ``.json``
    file holding one object), or ratings in any table the readers take (JSONL, a JSON list, CSV, TSV, Parquet; read
    as :func:`~hf_dialeval.data.ratings.load_ratings` reads them, ``columns`` naming their columns) as turn-level
    items rated in one dimension, ``score``, with their ``system`` where given."""
    from hf_dialeval.data.ratings import load_ratings

    if Path(path).suffix.lower() == ".json" and _holds_object(Path(path)):
        return load_json_release(path, columns.context_separator)
    ratings = load_ratings(path, columns)
    rows = [{key: value for key, value in rating.items() if key != "reference" or value} for rating in ratings]
    return _build(rows, "turn", ["score"])


def _holds_object(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    except OSError as error:
        raise PathError(f"cannot read the release file {path} ({error.strerror}): give the path of a file") from None


def load_json_release(path: str | os.PathLike, context_separator: str = DEFAULT_SEPARATOR) -> datasets.Dataset:
    """Load the generic release format ``{"contexts": [[...]], "responses": [...], "references": [...],
    "systems": [...], "scores": [...]}``: turn-level items when ``responses`` is present, dialogue-level when it is
    absent; a ``"NO REF"`` reference means none; ``systems`` (optional) names the system of each item, which gives
    the system-level correlation. A context given as one text is read by the one rule of every reader
    (:func:`~hf_dialeval.data.cells.text_list`, split on ``context_separator``)."""
    try:
        release = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise PathError(f"cannot read the release file {path} ({error.strerror}): give the path of a file") from None
    except ValueError as error:  # not UTF-8, or not JSON
        raise DialogueValidationError(f"{path} is not a JSON release file ({error}): give one UTF-8 JSON object with "
                                      "'contexts' and 'scores'") from None
    if not isinstance(release, dict):
        raise DialogueValidationError(f"{path} holds a JSON {type(release).__name__}, not the release format's object "
                                      "with 'contexts' and 'scores'")
    for key in ("contexts", "scores"):
        if key not in release:
            raise DialogueValidationError(f"{path}: the key '{key}' is missing from the release file")
    contexts, scores = release["contexts"], release["scores"]
    responses, references, systems = release.get("responses"), release.get("references"), release.get("systems")
    for key, column in (("scores", scores), ("responses", responses), ("references", references),
                        ("systems", systems)):
        if column is not None and len(column) != len(contexts):
            raise DialogueValidationError(
                f"{path}: '{key}' has {len(column)} entries for {len(contexts)} contexts; give one per context"
            )
    rows, dimensions = [], []
    for index, context in enumerate(contexts):
        # a context (or dialogue) given as one text: the one rule of every reader
        context = text_list(context, context_separator,
                            lambda problem, index=index: DialogueValidationError(f"{path}: contexts[{index}]: {problem}"))
        if responses is None:
            row: dict[str, Any] = {"dialogue": context}
            validate_dialogue_item(row, index)
        else:
            reference = references[index] if references is not None else None
            row = {"context": context, "response": responses[index],
                   "reference": None if reference == NO_REFERENCE else reference}
            validate_turn_item(row, index)
        if systems is not None:
            if not isinstance(systems[index], str) or not systems[index].strip():
                raise DialogueValidationError(f"{path}: systems[{index}] is {systems[index]!r}; give each item's "
                                              "system as a non-empty string")
            row[SYSTEM] = systems[index]
        item_scores = _json_scores(scores[index], index)
        dimensions.extend(d for d in item_scores if d not in dimensions)
        rows.append({**row, **item_scores})
    return _build(rows, "turn" if responses is not None else "dialogue", dimensions)


# --- registry --------------------------------------------------------------------------------------------

_FED_CITATION = "Mehri and Eskenazi (2020). Unsupervised Evaluation of Interactive Dialog with DialoGPT. SIGDIAL."
_USR_CITATION = "Mehri and Eskenazi (2020). USR: An Unsupervised and Reference Free Evaluation Metric for Dialog Generation. ACL."
_GRADE_CITATION = "Huang et al. (2020). GRADE: Automatic Graph-Enhanced Coherence Metric for Evaluating Open-Domain Dialogue Systems. EMNLP."
_HOLISTIC_CITATION = "Pang et al. (2020). Towards Holistic and Automatic Evaluation of Open-Domain Dialogue Generation. ACL."
_RADE_CITATION = "Shi et al. (2023). RADE: Reference-Assisted Dialogue Evaluation for Open-Domain Dialogue. ACL."
_ENGAGE_CITATION = "Ghazarian et al. (2020). Predictive Engagement: An Efficient Metric for Automatic Evaluation of Open-Domain Dialogue Systems. AAAI."

BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec("fed-dialogue", "dialogue", "FED dialogue level: 125 human-bot dialogues, 11 dimensions x 5 annotators.",
                      "shikib/fed (fed_data.json)", "research release, see source", _FED_CITATION, _load_fed_dialogue),
        BenchmarkSpec("fed-turn", "turn", "FED turn level: 375 responses in context, 9 dimensions x 5 annotators.",
                      "shikib/fed (fed_data.json)", "research release, see source", _FED_CITATION, _load_fed_turn),
        BenchmarkSpec("usr-topical", "turn", "USR Topical-Chat: 60 contexts x 6 responses, knowledge fact as condition.",
                      "shikib/usr (tc_usr_data.json)", "research release, see source", _USR_CITATION, _load_usr("tc_usr_data.json")),
        BenchmarkSpec("usr-persona", "turn", "USR Persona-Chat: 60 contexts x 5 responses, persona as condition.",
                      "shikib/usr (pc_usr_data.json)", "research release, see source", _USR_CITATION, _load_usr("pc_usr_data.json")),
        BenchmarkSpec("usr-topical-reference", "turn", "USR Topical-Chat with each context's original human response as "
                      "the reference of its other 5 candidates (RADE Table 4).", "shikib/usr (tc_usr_data.json)",
                      "research release, see source", _USR_CITATION, _load_usr("tc_usr_data.json", True)),
        BenchmarkSpec("usr-persona-reference", "turn", "USR Persona-Chat with each context's original human response as "
                      "the reference of its other 4 candidates (RADE Table 4).", "shikib/usr (pc_usr_data.json)",
                      "research release, see source", _USR_CITATION, _load_usr("pc_usr_data.json", True)),
        BenchmarkSpec("predictive-engage", "turn", "PredictiveEngage: query-response pairs with a human engagement score.",
                      "PredictiveEngage (engage_all.csv)", "research release, see source", _ENGAGE_CITATION, _load_predictive_engage),
        BenchmarkSpec("holistic-context", "turn", "HolisticEval context coherence: query-response pairs, 10 annotators (1-5).",
                      "HolisticEval (context_data_release.csv)", "research release, see source", _HOLISTIC_CITATION, _load_holistic_context),
        BenchmarkSpec("holistic-fluency", "turn", "HolisticEval fluency: single responses (no context), 10 annotators.",
                      "HolisticEval (fluency_data_release.csv)", "research release, see source", _HOLISTIC_CITATION, _load_holistic_fluency),
        BenchmarkSpec("grade-convai2", "turn", "GRADE ConvAI2 coherence: 4 systems x 150 responses, with references.",
                      "li3cmz/GRADE (evaluation/eval_data/convai2)", "research release, see source", _GRADE_CITATION, _load_grade("convai2")),
        BenchmarkSpec("grade-dailydialog", "turn", "GRADE DailyDialog coherence: 2 systems x 150 responses, with references.",
                      "li3cmz/GRADE (evaluation/eval_data/dailydialog)", "research release, see source", _GRADE_CITATION, _load_grade("dailydialog_EVAL")),
        BenchmarkSpec("rade-chitchat", "turn", "RADE ChitChat: candidate + reference, 1-5 score; split by context 5/1/1.",
                      "RADE release (chitchat/data.jsonl)", "research release, see source", _RADE_CITATION, _load_rade("chitchat", (5, 1, 1)), RADE_SPLITS),
        BenchmarkSpec("rade-emotion", "turn", "RADE EmpatheticDialogues: candidate + reference, 1-5 score; split by context 6/1/1.",
                      "RADE release (emotion/data.jsonl)", "research release, see source", _RADE_CITATION, _load_rade("emotion", (6, 1, 1)), RADE_SPLITS),
        BenchmarkSpec("rade-persona", "turn", "RADE PersonaChat: candidate + reference, 1-5 score; split by context 6/1/1.",
                      "RADE release (persona/data.jsonl)", "research release, see source", _RADE_CITATION, _load_rade("persona", (6, 1, 1)), RADE_SPLITS),
    )
}


def load_benchmark(name: str, data_dir: str | os.PathLike | None = None, split: str = "test",
                   columns: Columns = Columns()) -> datasets.Dataset:
    """Load a benchmark by canonical name (see :data:`BENCHMARKS`) or ``json:<path>``, a rated set of the user's own
    (:func:`load_release`; ``columns`` names a table's columns).

    ``split`` matters only for the RADE benchmarks (``train``/``validation``/``test``); the others are
    evaluation-only and have just ``test``.
    """
    if name.startswith("json:"):
        return load_release(name[len("json:") :], columns)
    if columns != Columns():
        raise OptionError(f"the column options name the columns of a json: table of your own; {name} is read as "
                          "released: leave them out")
    if name not in BENCHMARKS:
        raise UnknownNameError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)} or 'json:<path>'")
    spec = BENCHMARKS[name]
    if split not in spec.splits:
        raise OptionError(f"benchmark {name!r} has the splits {list(spec.splits)}, not {split!r}")
    with data_files():
        return spec.load(resolve_data_dir(data_dir), split)


def normalised_text(text: str) -> str:
    """``text`` with its whitespace collapsed: how texts of corpora and benchmarks are compared."""
    return " ".join(text.split())


def benchmark_texts(names: Iterable[str], data_dir: str | os.PathLike | None = None) -> set[str]:
    """Every response and context utterance of the benchmarks ``names`` (:func:`normalised_text`): what a training
    set leaves out, so that a model has not read what it is then scored on."""
    texts: set[str] = set()
    for name in names:
        benchmark = load_benchmark(name, data_dir)
        texts.update(normalised_text(text) for text in benchmark["response"])
        texts.update(normalised_text(text) for context in benchmark["context"] for text in context)
    return texts
