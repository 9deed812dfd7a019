"""What ``hf-dialeval adapt`` measured, as the user reads it: agreement with the held-out ratings (:func:`agreement`),
the report's markdown page (:func:`report_markdown`, which ends with what the numbers say: whether the adapted
checkpoint beats the base and every floor, and the contrasts it lost) and the adapted folder's model card
(:func:`model_card`).

The report is a dict (``adaptation_report.json``) with ``metric``, ``base`` (the checkpoint adapted), ``seed``,
``data`` (per kind of data: its source, rows, sha256 and how many were trained on and held out), ``steps`` (each
train command's arguments, seconds and ``peak_memory_mb``), ``held_out`` (``before``/``after`` and the ``floors`` on
the held-out ratings), ``checklist`` (``before``/``after`` win rates on the held-out dialogues), and the whole run's
``seconds`` and ``peak_memory_mb``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Files the report is written to, in the adapted folder.
REPORT_JSON = "adaptation_report.json"
REPORT_MARKDOWN = "adaptation_report.md"
MODEL_CARD = "README.md"
#: The correlations the report gives, each with its interval.
AGREEMENT_METHODS = ("spearman", "pearson")


def agreement(metric_scores: Sequence[float], human_scores: Sequence[float], seed: int = 0) -> dict[str, Any]:
    """``n``, Spearman and Pearson of the metric with the human scores, each with a percentile bootstrap 95% interval
    over items (``None`` where undefined: a constant score): the item level of
    :func:`~hf_dialeval.evaluation.statistics.level_summary`."""
    from hf_dialeval.evaluation.statistics import RatedItems, level_summary  # numpy, scipy

    summary = level_summary(RatedItems.of(list(human_scores), list(metric_scores)), seed=seed,
                            interval_methods=AGREEMENT_METHODS)["item"]
    return {"n": summary["n"], **{key: summary[key] for method in AGREEMENT_METHODS
                                  for key in (method, f"{method}_ci95")}}


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _with_interval(entry: Mapping[str, Any], method: str) -> str:
    interval = entry.get(f"{method}_ci95")
    shown = _number(entry.get(method))
    return shown if not interval else f"{shown} [{_number(interval[0])}, {_number(interval[1])}]"


def _agreement_table(held_out: Mapping[str, Any]) -> list[str]:
    lines = ["| scored by | Spearman [95% CI] | Pearson [95% CI] |", "|---|---|---|"]
    rows = [("the base checkpoint (before)", held_out["before"]), ("the adapted checkpoint (after)", held_out["after"])]
    rows += [(f"floor: {name}", entry) for name, entry in held_out["floors"].items()]
    lines += [f"| {label} | {_with_interval(entry, 'spearman')} | {_with_interval(entry, 'pearson')} |"
              for label, entry in rows]
    return lines


def _checklist_table(checklist: Mapping[str, Any]) -> list[str]:
    floors = checklist["floors"]
    lines = ["| perturbation | pairs | before | after |" + "".join(f" floor: {name} |" for name in floors),
             "|---|---|---|---|" + "---|" * len(floors)]
    for name, before in checklist["before"].items():
        rates = [before, checklist["after"][name], *(floor[name] for floor in floors.values())]
        cells = [name, str(before["n"]), *(_number(rate.get("win_rate")) for rate in rates)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _listed(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _agreement_reading(held_out: Mapping[str, Any]) -> str:
    """Whether the adapted checkpoint's Spearman beats the base's and every floor's, and by how much."""
    after, before = held_out["after"].get("spearman"), held_out["before"].get("spearman")
    if after is None:
        return "- Agreement: the adapted checkpoint gives every held-out rating the same score; it cannot rank them."
    rivals = [("the base checkpoint", before)] + [(f"the {name} floor", entry.get("spearman"))
                                                   for name, entry in held_out["floors"].items()]
    beaten = [name for name, value in rivals if value is not None and value >= after]
    margins = [f"{after - value:+.3f} over {name}" for name, value in rivals if value is not None]
    verdict = ("beats the base checkpoint and every floor" if not beaten else
               f"does not beat {' or '.join(beaten)}: on data like this "
               f"{beaten[0] if len(beaten) == 1 else 'the best of them'} agrees with the ratings at least as well")
    low, high = held_out["after"].get("spearman_ci95") or (None, None)
    inside = low is not None and any(value is not None and low <= value <= high for _, value in rivals)
    return (f"- Agreement: the adapted checkpoint {verdict}" + (f" (Spearman {_listed(margins)})." if margins else ".")
            + (" A difference inside its 95% interval may be noise: adapt again with another --seed to see."
               if inside else ""))


def _checklist_reading(checklist: Mapping[str, Any]) -> str:
    """The contrasts whose pairs the adapted checkpoint wins fewer of than the base did, and than a floor does."""
    lost, floors_ahead = [], {name: [] for name in checklist["floors"]}
    for name, before in checklist["before"].items():
        was, now = before.get("win_rate"), checklist["after"][name].get("win_rate")  # none: no pair found
        if now is None:
            continue
        if was is not None and now < was:
            lost.append(f"{name} ({was:.3f} → {now:.3f} of {before['n']} pairs)")
        for floor, rates in checklist["floors"].items():
            if rates[name].get("win_rate") is not None and rates[name]["win_rate"] > now:
                floors_ahead[floor].append(f"{name} ({rates[name]['win_rate']:.3f} against {now:.3f})")
    reading = (f"- Checklist: the adapted checkpoint wins fewer pairs than the base on {_listed(lost)}." if lost else
               "- Checklist: the adapted checkpoint wins at least as many pairs as the base on every contrast.")
    for floor, ahead in floors_ahead.items():
        if ahead:
            reading += f" The {floor} floor wins more pairs than it on {_listed(ahead)}."
    return reading


def _data_lines(data: Mapping[str, Any]) -> list[str]:
    return [f"- {kind}: `{entry['source']}`, {entry['rows']} rows (sha256 `{entry['sha256'][:16]}…`), "
            f"{entry['trained_on']} trained on, {entry['held_out']} held out" for kind, entry in data.items()]


def _truncation(truncated: Mapping[str, Any] | None) -> str:
    """What a stage cut to fit its model, as the end of its line."""
    if truncated is None:
        return ""
    return (f"; {truncated['items']} of its {truncated['of']} training inputs cut to {truncated['token_limit']} "
            f"tokens ({truncated['cut']})")


def report_markdown(report: Mapping[str, Any]) -> str:
    """The report as a short markdown page."""
    lines = [f"# {report['metric']} adapted to your domain", "", f"Base: `{report['base']}`; seed {report['seed']}.",
             "", "## Data", "", *_data_lines(report["data"]), "", "## Training", ""]
    lines += [f"- `hf-dialeval train {step['command']} {' '.join(step['arguments'])}`: {step['seconds']:.0f} s, "
              f"peak memory {step['peak_memory_mb']} MB{_truncation(step.get('truncated'))}" for step in report["steps"]]
    if report.get("held_out"):
        held_out = report["held_out"]
        lines += ["", f"## Agreement with the held-out ratings ({held_out['n']} ratings of contexts never trained on)",
                  "", *_agreement_table(held_out)]
    if report.get("checklist"):
        checklist = report["checklist"]
        lines += ["", "## Checklist on the held-out dialogues", "",
                  (f"Share of pairs in which the dialogue's own reply scores higher than the degraded one (ties half); "
                   f"dialogues: {checklist['dialogues']}. The floors need no training: where they win few pairs, "
                   "the contrast is hard on these dialogues."), "", *_checklist_table(checklist)]
    readings = ([_agreement_reading(report["held_out"])] if report.get("held_out") else []) + \
        ([_checklist_reading(report["checklist"])] if report.get("checklist") else [])
    if readings:
        lines += ["", "## What it says", "", *readings]
    return "\n".join(lines) + "\n"


def model_card(report: Mapping[str, Any]) -> str:
    """The adapted folder's model card: what it was adapted from, on which data, and the report's numbers."""
    front_matter = ["---", "library_name: transformers", "tags:", "- hf-dialeval", f"- {report['metric']}",
                    "- dialogue-evaluation", "---", ""]
    usage = ["## Use", "", "```bash", f"hf-dialeval score --metric {report['metric']} --checkpoint THIS_FOLDER "
             "--input items.jsonl", "```", ""]
    body = report_markdown(report).splitlines()
    return "\n".join(front_matter + body[:1] + ["", f"`{report['metric']}` fine-tuned by `hf-dialeval adapt` from "
                                                     f"`{report['base']}` on the data below.", ""]
                     + usage + body[2:]) + "\n"
