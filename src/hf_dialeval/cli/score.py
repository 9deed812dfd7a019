"""``hf-dialeval score``: score a file (or stdin) of dialogues or turns with a metric, streaming, resumable and
data-parallel under ``torchrun`` or ``accelerate launch`` (:mod:`hf_dialeval.inference.streaming`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from hf_dialeval.cli.errors import UsageError
from hf_dialeval.cli.options import (
    add_dataclass_options,
    add_model_options,
    check_writable,
    load_metric_from,
    positive_int,
    show_progress,
)
from hf_dialeval.training.data_options import columns_from, item_column_options

EPILOG = """\
input (JSONL, one item per line; --input FILE, or piped into stdin), either all dialogue level:
  {"dialogue": ["Hi!", "Hello, how are you?", "Fine."], "speakers": ["User", "System", "User"]}
or all turn level (condition and reference optional; reference-assisted metrics, rade and reference-similarity,
need the reference):
  {"context": ["Hi!", "Hello, how are you?"], "response": "Fine, thanks.", "condition": "...", "reference": "..."}
Empty utterances are data: they stay in place, and an empty response gets the metric's lowest score.

output (JSONL): each input item with "scores" (one value per dimension), "overall" (higher is better),
"truncated" (true when text was cut to fit the model) and "empty" (true when the item holds empty text).
The run's signature (metric, checkpoint, versions, settings, counts) goes to OUTPUT.signature.json, or to
stderr when the output is stdout.

CSV (.csv, .tsv: a header row naming the fields) and Parquet (.parquet, .pq) are read too. A field held in one text
(every CSV cell) is a JSON array of utterances, or the utterances split on --context-separator (one per line by
default). Columns named otherwise are mapped with --context-column, --response-column, --reference-column,
--condition-column (and --dialogue-column, --speakers-column), as adapt and train take them: a ratings file scores
with the flags it was adapted with.

Inputs of any size are read, scored and written --chunk-size items at a time, into OUTPUT.partial, renamed to
OUTPUT once every item is scored. One run at a time writes an output (OUTPUT.lock). After a kill, the same command
with --resume checks every kept line against the input and scores the rest; --overwrite discards the interrupted
run's OUTPUT.partial instead. Data-parallel:
  torchrun --nproc_per_node N -m hf_dialeval.cli score ... (or accelerate launch --multi_gpu --num_processes N)
scores whole chunks on each process, the output equal to one process's.

examples:
  hf-dialeval score --metric length --input examples/dialogues.jsonl --output scored.jsonl
  hf-dialeval score --metric quantidce --dtype bf16 --input turns.parquet --output scored.jsonl --resume
"""


def register(commands: argparse._SubParsersAction) -> None:
    """Adds ``score`` to the parser's sub-commands ``commands``."""
    score = commands.add_parser("score", help="score a JSONL file of dialogues or turns",
                                description="Score dialogue-level or turn-level items with a metric.",
                                epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    score.add_argument("--input", default=None,
                       help="JSONL, CSV (.csv, .tsv) or Parquet (.parquet) file of items, of any size (default: JSONL "
                            "on stdin, when it is a pipe)")
    score.add_argument("--output", default="-", help="JSONL file to write, '-' for stdout (default)")
    score.add_argument("--chunk-size", type=positive_int, default=1024,
                       help="items read, scored and written at a time; under torchrun or accelerate launch each "
                            "process scores one chunk at a time (default: 1024)")
    score.add_argument("--resume", action="store_true",
                       help="continue an --output that a killed run left: keep its complete lines (each checked against "
                            "the input), score the rest")
    score.add_argument("--overwrite", action="store_true",
                       help="discard OUTPUT.partial, the work of an interrupted run, and score from the start (without "
                            "--resume or --overwrite such a file is an error, never lost silently)")
    add_dataclass_options(score, item_column_options())
    add_model_options(score)
    score.set_defaults(func=run)


def check_input(path: str) -> None:
    """Fail before any scoring when ``--input`` is not a file this process can read."""
    if Path(path).is_dir():
        raise UsageError(f"--input {path} is a folder: give a JSONL, CSV or Parquet file")
    if not Path(path).is_file():
        raise UsageError(f"no such input file: {path}")
    if not os.access(path, os.R_OK):
        raise UsageError(f"cannot read --input {path}: permission denied")


def run(args: argparse.Namespace) -> None:
    from hf_dialeval.data.table_chunks import is_csv, is_parquet, stdin_source
    from hf_dialeval.inference.factory import check_checkpoints_for
    from hf_dialeval.inference.process_group import ProcessGroup
    from hf_dialeval.inference.score_output import json_ready
    from hf_dialeval.inference.streaming import ScoringRun
    from hf_dialeval.registry import entry

    if args.input is None or args.input == "-":
        source = stdin_source()
    else:
        check_input(args.input)
        source = args.input
    if args.output != "-":
        check_writable(args.output, "--output")
        if is_parquet(args.output) or is_csv(args.output):
            raise UsageError(f"--output {args.output}: the output is JSONL (one scored item per line); give a .jsonl "
                             "file")
    # before the seconds torch takes to import; loading the metric takes the checked names as they are
    args.checkpoint = check_checkpoints_for(args.metric, args.checkpoint)
    group = ProcessGroup(args.device)
    with ScoringRun(source, sys.stdout if args.output == "-" else args.output, resume=args.resume,
                    overwrite=args.overwrite, chunk_size=args.chunk_size, group=group,
                    columns=columns_from(args)) as scoring:
        # an input that does not parse, or items the metric cannot score, fail before its model loads
        scoring.check_first_chunk(entry(args.metric).metric_class)
        if args.device is None and group.device is not None:
            args.device = group.device  # the launcher's device for this process
        result = scoring.score(load_metric_from(args), progress=show_progress(args.quiet))
    if group.is_main and args.resume:
        print(f"resumed after {result.resumed} scored items; scored {result.scored} more", file=sys.stderr)
    if group.is_main and args.output == "-":
        print(f"signature: {json.dumps(result.signature, ensure_ascii=False)}", file=sys.stderr)
        if result.system_scores:
            print(f"system scores: {json.dumps(json_ready(result.system_scores), ensure_ascii=False)}",
                  file=sys.stderr)
