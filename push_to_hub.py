"""Publish hf-dialeval's datasets, models and evaluate Spaces to the Hugging Face Hub.

  python push_to_hub.py datasets --dry-run --out hub/            # write every dataset repo folder, upload nothing
  python push_to_hub.py datasets --namespace my-org              # build and upload them to my-org/<name>
  python push_to_hub.py models --metric fined-eval --dry-run --out hub/
  python push_to_hub.py models --metric fined-eval --checkpoint runs/fined --namespace my-org
  python push_to_hub.py spaces --dry-run --out hub/              # each evaluate module's Gradio Space folder
  python push_to_hub.py spaces --namespace my-org                # to my-org/<module>: evaluate.load("my-org/<module>")

A dry run writes exactly the folders that would be uploaded (cards included); an upload sends those folders.
Uploading needs a token (`huggingface-cli login` or $HF_TOKEN).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from huggingface_hub import HfApi

from hf_dialeval.errors import DialEvalError
from hf_dialeval.publishing import (
    SPACE_SDK,
    dataset_names,
    export_models,
    space_metrics,
    write_dataset_folder,
    write_space_folder,
)
from hf_dialeval.registry import exportable_metrics

#: The Hub's repo type for each kind of folder.
REPO_TYPES = {"datasets": "dataset", "models": "model", "spaces": "space"}


def _upload(folders: list[Path], namespace: str, repo_type: str) -> None:
    api = HfApi()
    # a new Space needs its SDK named when created; the README's front matter says the same
    created_as = {"space_sdk": SPACE_SDK} if repo_type == "space" else {}
    for folder in folders:
        repo_id = f"{namespace}/{folder.name}"
        api.create_repo(repo_id, repo_type=repo_type, exist_ok=True, **created_as)
        api.upload_folder(repo_id=repo_id, folder_path=folder, repo_type=repo_type,
                          commit_message="Upload with hf-dialeval push_to_hub.py")
        print(f"uploaded {folder} -> {repo_type} {repo_id}")


def _publish(args: argparse.Namespace) -> None:
    """Write the folders of ``args.kind`` (to ``args.out``, or a scratch folder) and upload them unless a dry run."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(args.out) if args.out else Path(scratch)
        if args.kind == "datasets":
            folders = [write_dataset_folder(name, out, args.data_dir) for name in (args.name or dataset_names())]
        elif args.kind == "models":
            folders = export_models(args.metric, args.checkpoint, out)
        else:
            folders = [write_space_folder(name, out) for name in (args.metric or space_metrics())]
        for folder in folders:
            print(f"wrote {folder}")
        if not args.dry_run:
            _upload(folders, args.namespace, REPO_TYPES[args.kind])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = parser.add_subparsers(dest="kind", required=True)
    data = kinds.add_parser("datasets", help="benchmarks and corpora as DatasetDicts with dataset cards")
    data.add_argument("--name", action="append", choices=dataset_names(), help="only these datasets (repeatable)")
    data.add_argument("--data-dir", default=None, help="folder with benchmarks/ and corpora/ (default: ../shared/data)")
    models = kinds.add_parser("models", help="a metric's model repo folder(s): config, safetensors, tokenizer, card")
    models.add_argument("--metric", required=True, choices=exportable_metrics())
    models.add_argument("--checkpoint", default=None, help="trained checkpoint folder (default: the shipped default)")
    spaces = kinds.add_parser("spaces", help="each metric's evaluate module as a Gradio Space: card, app, module "
                                             "script, requirements (hf-dialeval pinned to this version)")
    spaces.add_argument("--metric", action="append", choices=space_metrics(), help="only these metrics' Spaces "
                                                                                  "(repeatable)")
    for sub in (data, models, spaces):
        sub.add_argument("--dry-run", action="store_true", help="write the repo folders to --out and upload nothing")
        sub.add_argument("--out", default=None, help="where to write the repo folders (required with --dry-run)")
        sub.add_argument("--namespace", default=None, help="Hub user or organisation to upload to")
    args = parser.parse_args(argv)
    if args.dry_run and not args.out:
        parser.error("--dry-run needs --out DIR")
    if not args.dry_run and not args.namespace:
        parser.error("an upload needs --namespace (or use --dry-run --out DIR)")

    try:
        _publish(args)
    except DialEvalError as error:  # the user's to fix: one line, as the command line says it
        print(f"push_to_hub.py: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
