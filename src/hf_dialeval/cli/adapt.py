"""``hf-dialeval adapt METRIC``: a metric fine-tuned on the user's own dialogues and/or ratings by its paper's route
to a new domain, measured before and after on a held-out share (:mod:`hf_dialeval.adaptation.workflow`)."""

from __future__ import annotations

import argparse
import dataclasses
import json

from hf_dialeval.adaptation.workflow import DEFAULT_CHECKLIST_PAIRS, DEFAULT_HELD_OUT_SHARE
from hf_dialeval.cli.options import add_dataclass_options, add_run_options, positive_int, show_progress
from hf_dialeval.registry import METRICS
from hf_dialeval.training.data_options import DialoguesOptions, RatingsOptions, columns_from

EPILOG = """\
routes (the stages run for the data given; ratings alone are enough where a route reads ratings):
{routes}

Any option of a stage's train command (--max-steps, --learning-rate, --epochs, --bf16, ...) is passed on to it and
wins over the CPU-sized defaults above ('hf-dialeval train COMMAND --help' lists them).

output: OUTPUT_DIR holds the adapted checkpoint (what --checkpoint, evaluate and AutoModel take),
adaptation_report.json and adaptation_report.md (on the held-out share: agreement with the ratings before and after,
beside the similarity and length floors, with 95% intervals; the checklist's random-reply and generic-reply win
rates before and after; each stage's seconds and peak memory) and a model card (README.md) naming the base
checkpoint, the data and those numbers. Once a stage has timed its second step, one line on stderr says how long it
will take.

example:
  hf-dialeval adapt quantidce --ratings my_ratings.csv --score-column rating --output-dir runs/my-quantidce
"""


@dataclasses.dataclass
class AdaptDataOptions(RatingsOptions, DialoguesOptions):
    """The options of the user's ratings and dialogues, and of which of their columns holds what."""


#: The options of the user's data (the train commands' own), but the share held out, which adapt gives its own.
USER_DATA_OPTIONS = [option for option in dataclasses.fields(AdaptDataOptions) if option.name != "held_out_share"]


def _routes() -> str:
    lines = []
    for name, spec in sorted(METRICS.items()):
        stages = "; ".join(f"{step.data}: train {step.command} {' '.join(step.arguments)}".rstrip()
                           for step in spec.adaptation)
        if stages:
            lines.append(f"  {name:<14} {stages}")
    return "\n".join(lines)


def register(commands: argparse._SubParsersAction) -> None:
    """Adds ``adapt`` to the parser's sub-commands ``commands``."""
    adapt = commands.add_parser(
        "adapt", help="fine-tune a metric on your own dialogues or ratings, measured before and after",
        usage="%(prog)s METRIC (--dialogues DIALOGUES | --ratings RATINGS) --output-dir OUTPUT_DIR [options] "
              "[train options]",
        description="Fine-tune a metric on your own domain by its paper's route, from its shipped default (or "
                    "--init-from), holding out a share of your data to measure it before and after.",
        epilog=EPILOG.format(routes=_routes()), formatter_class=argparse.RawDescriptionHelpFormatter)
    adapt.add_argument("metric", metavar="METRIC", choices=sorted(name for name, spec in METRICS.items()
                                                                   if spec.adaptation),
                       help="the metric to adapt: %(choices)s")
    adapt.add_argument("--output-dir", required=True,
                       help="the adapted folder (written in OUTPUT_DIR.partial/ beside it, swapped in whole when the "
                            "run ends)")
    adapt.add_argument("--overwrite-output-dir", action="store_true",
                       help="replace an --output-dir that an earlier run wrote, once this run has finished")
    add_dataclass_options(adapt, USER_DATA_OPTIONS)  # what the train commands take, as they take it
    adapt.add_argument("--init-from", default=None,
                       help="the checkpoint to adapt (default: the metric's shipped default)")
    adapt.add_argument("--held-out-share", type=float, default=DEFAULT_HELD_OUT_SHARE,
                       help="share of the ratings' contexts and of the dialogues held out, never trained on, to "
                            f"measure before and after (default: {DEFAULT_HELD_OUT_SHARE})")
    adapt.add_argument("--checklist-pairs", type=positive_int, default=DEFAULT_CHECKLIST_PAIRS,
                       help=f"checklist pairs per perturbation, at most (default: {DEFAULT_CHECKLIST_PAIRS})")
    adapt.add_argument("--seed", type=int, default=0, help="seed of the held-out share and of training (default: 0)")
    adapt.add_argument("--data-dir", default=None,
                       help="folder holding corpora/, for a shipped corpus name (default: $HF_DIALEVAL_DATA_DIR or "
                            "../shared/data)")
    add_run_options(adapt, progress_bars=True)
    adapt.set_defaults(func=run, passes_on_unknown_options=True)


def run(args: argparse.Namespace) -> None:
    from hf_dialeval.adaptation.workflow import adapt

    report = adapt(
        args.metric, args.output_dir, overwrite=args.overwrite_output_dir, dialogues=args.dialogues,
        ratings=args.ratings, base=args.init_from, columns=columns_from(args), ratings_split=args.ratings_split,
        dialogues_split=args.dialogues_split, held_out_share=args.held_out_share, seed=args.seed,
        training_flags=args.unknown_options, checklist_pairs=args.checklist_pairs, data_dir=args.data_dir,
        progress=show_progress(args.quiet))
    summary = {"output_dir": args.output_dir, "seconds": report["seconds"]}
    if "held_out" in report:
        summary |= {f"spearman_{when}": report["held_out"][when]["spearman"] for when in ("before", "after")}
        summary |= {f"spearman_{name}": floor["spearman"] for name, floor in report["held_out"]["floors"].items()}
    print(json.dumps(summary))
