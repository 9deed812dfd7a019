"""``hf-dialeval checklist``: does the metric prefer held-out human replies to the same replies degraded
(:mod:`hf_dialeval.evaluation.checklist`)?"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hf_dialeval.cli.errors import UsageError
from hf_dialeval.cli.options import (
    add_model_options,
    check_writable,
    load_metric_from,
    positive_int,
    show_progress,
)
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import CORPORA, DEFAULT_PAIRS, REFERENCE_CORPORA
from hf_dialeval.registry import METRICS

EPILOG = """\
perturbations (each changes only the system's turns, the second speaker's):
{perturbations}

output: a markdown table on stdout: per perturbation, the share of pairs in which the original scores higher
(ties count half: 0.5 is a metric that cannot tell), with a bootstrap 95% interval, on "overall" and on each
dimension the perturbation should hurt; --output writes the same as JSON, signature included.

example:
  hf-dialeval checklist --metric length --corpus dailydialog --data-dir ../shared/data --pairs 50
"""


def register(commands: argparse._SubParsersAction) -> None:
    """Adds ``checklist`` to the parser's sub-commands ``commands``."""
    width = max(map(len, PERTURBATIONS))
    checklist = commands.add_parser(
        "checklist", help="does the metric prefer human replies to degraded ones? (perturbation pairs)",
        description="Score pairs of a held-out human dialogue and the same dialogue with the system's turns degraded.",
        epilog=EPILOG.format(perturbations="\n".join(
            f"  {p.name:<{width}} {p.description} (should hurt: {', '.join(p.hurts)})" for p in PERTURBATIONS.values())),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    checklist.add_argument("--corpus", default="dailydialog", choices=sorted({**CORPORA, **REFERENCE_CORPORA}),
                           help="held-out dialogues the pairs come from (default: dailydialog, its test split); "
                                "reference-assisted metrics (rade, reference-similarity) need "
                                f"{', '.join(REFERENCE_CORPORA)}, whose contexts have several human replies: one is "
                                "the original, another the reference")
    checklist.add_argument("--split", default=None,
                           help="the corpus split the pairs come from (default: its held-out one, DailyDialog test, "
                                "Topical-Chat test_freq and DailyDialog++ test; e.g. validation to choose between "
                                "models)")
    checklist.add_argument("--pairs", type=positive_int, default=DEFAULT_PAIRS,
                           help=f"pairs per perturbation (default: {DEFAULT_PAIRS})")
    checklist.add_argument("--perturbations", nargs="+", default=None, choices=list(PERTURBATIONS),
                           help="the perturbations to run (default: all)")
    checklist.add_argument("--seed", type=int, default=0, help="seed of the pair sampling (default: 0)")
    checklist.add_argument("--data-dir", default=None,
                           help="folder holding corpora/ (default: $HF_DIALEVAL_DATA_DIR or ../shared/data)")
    checklist.add_argument("--output", default=None, help="write the results as JSON here")
    checklist.add_argument("--cache-dir", default=None,
                           help="where the turn-level pairs' scores are cached, so that a re-run (or a panel of "
                                "metrics that scored them) reads them back (default: scores/ in $HF_DIALEVAL_CACHE, "
                                "else ~/.cache/hf-dialeval/scores)")
    add_model_options(checklist)
    checklist.set_defaults(func=run)


def run(args: argparse.Namespace) -> None:
    from hf_dialeval.evaluation.checklist import (
        checklist_record,
        format_checklist,
        load_checklist_corpus,
        load_checklist_references,
        run_checklist,
    )
    from hf_dialeval.inference.factory import check_checkpoints_for
    from hf_dialeval.inference.score_cache import ScoreCache

    if args.output:
        check_writable(args.output, "--output")
    args.checkpoint = check_checkpoints_for(args.metric, args.checkpoint)
    # the metric's class says whether it reads a reference (importing its module, loading no weights)
    if args.corpus not in REFERENCE_CORPORA and METRICS[args.metric].metric_class.needs_reference:
        raise UsageError(f"--metric {args.metric} scores a reply against a reference reply, and --corpus {args.corpus} "
                         "has one human reply per turn (the original: as the reference it would win every pair); give "
                         f"--corpus {' or '.join(REFERENCE_CORPORA)}, whose contexts have several human replies")
    dialogues = load_checklist_corpus(args.corpus, args.data_dir, args.split)
    references = load_checklist_references(args.corpus, args.data_dir, args.split)
    metric = load_metric_from(args)
    rows = run_checklist(metric, dialogues, args.pairs, args.seed, args.perturbations,
                         progress=show_progress(args.quiet), references=references,
                         cache=ScoreCache(args.cache_dir))
    corpus = args.corpus if args.split is None else f"{args.corpus} ({args.split})"
    print(format_checklist(rows, args.metric, metric.dimensions, corpus))
    if args.output:
        record = checklist_record(metric, args.metric, rows, args.corpus, args.pairs, args.seed, args.split)
        Path(args.output).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
