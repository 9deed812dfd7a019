"""What ``hf-dialeval adapt`` measured, as the user reads it: agreement with the held-out ratings (:func:`agreement`),
the report's markdown page (:func:`report_markdown`) and the adapted folder's model card (:func:`model_card`).

The report is a dict (``adaptation_report.json``) with ``metric``, ``base`` (the checkpoint adapted), ``seed``,
``data`` (per kind of data: its source, rows, sha256 and how many were trained on and held out), ``steps`` (each
train command's arguments and seconds), ``held_out`` (``before``/``after`` and the ``floors`` on the held-out
ratings) and ``checklist`` (``before``/``after`` win rates on the held-out dialogues).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Files the report is written to, in the adapted folder.
REPORT_JSON = "adaptation_report.json"
REPORT_MARKDOWN = "adaptation_report.md"
MODEL_CARD = "README.md"


def agreement(metric_scores: Sequence[float], human_scores: Sequence[float], seed: int = 0) -> dict[str, Any]:
    """``n``, Spearman and Pearson of the metric with the human scores, each with a percentile bootstrap 95% interval
    over items (``None`` where undefined: a constant score)."""
    from hf_dialeval.evaluation.statistics import RatedItems, bootstrap_interval, finite_or_none  # numpy, scipy

    items = RatedItems.of(list(human_scores), list(metric_scores))
    result: dict[str, Any] = {"n": len(items)}
    for method in ("spearman", "pearson"):
        result[method] = finite_or_none(items.correlation("item", 0, method))
        result[f"{method}_ci95"] = bootstrap_interval(items, "item", unit="items", method=method, seed=seed)["ci95"]
    return result


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


def _data_lines(data: Mapping[str, Any]) -> list[str]:
    return [f"- {kind}: `{entry['source']}`, {entry['rows']} rows (sha256 `{entry['sha256'][:16]}…`), "
            f"{entry['trained_on']} trained on, {entry['held_out']} held out" for kind, entry in data.items()]


def report_markdown(report: Mapping[str, Any]) -> str:
    """The report as a short markdown page."""
    lines = [f"# {report['metric']} adapted to your domain", "", f"Base: `{report['base']}`; seed {report['seed']}.",
             "", "## Data", "", *_data_lines(report["data"]), "", "## Training", ""]
    lines += [f"- `hf-dialeval train {step['command']} {' '.join(step['arguments'])}`: {step['seconds']:.0f} s"
              for step in report["steps"]]
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
