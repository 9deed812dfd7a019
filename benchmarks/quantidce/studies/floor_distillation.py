"""Diagnostic: can the QuantiDCE cross-encoder absorb what the similarity floor knows?

The floor's knowledge of which reply fits which message lives in MiniLM's separate sentence embeddings, not in a
joint ``[CLS] context [SEP] response [SEP]`` encoding. Here an unchanged QuantiDCE model (MiniLM, mean pooling,
64 tokens, Transformer layers fine-tuned in full) learns to reproduce the floor: on DailyDialog *train* dialogues
(no benchmark text), one position per dialogue gives three pairs — the real reply, a random utterance of another
dialogue, a non-adjacent utterance of the same dialogue — each labelled with the floor's cosine of the last
context utterance and the candidate, clipped to [0, 1] and put on the 1–5 scale; the loss is the MSE of the
model's 1–5 score: ``hf-dialeval train quantidce-kd``'s training (``train_kd``) with ``no_distillation``, the
untrained model as its starting point and these pairs as its ratings. Then every coherence benchmark compares the
student with the floor, as ``floor_complementarity.py`` does: if the student tracks the floor out of DailyDialog's
domain, pair relevance can be moved into the cross-encoder from DailyDialog text alone.

    python benchmarks/quantidce/studies/floor_distillation.py --data-dir ../shared/data \\
        --output-dir runs/qd-floor-distill

Writes ``results/floor_distillation.json`` (with the labels' mean and variance and the logged training losses,
to read the MSE against); the run goes to ``<output-dir>`` (the untrained starting model to ``<output-dir>/untrained``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import datasets
import numpy as np
from transformers import AutoTokenizer, set_seed

from hf_dialeval import load_metric
from hf_dialeval.data.corpora import load_dailydialog
from hf_dialeval.metrics.quantidce.modeling_quantidce import QuantiDCEModel
from hf_dialeval.metrics.quantidce.train import QuantiDCEKDTrainingArguments, train_kd
from hf_dialeval.modeling.checkpoint_sources import resolve_backbone_path
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository root, for benchmarks/common/
from benchmarks.common.coherence_comparison import floor_comparison  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results" / "floor_distillation.json"
MAX_SEQ_LENGTH = 64
SEED = 42


def floor_labelled_pairs(dialogues: list[list[str]], seed: int = SEED) -> datasets.Dataset:
    """Three (context, candidate) pairs per dialogue of at least three utterances, at one random position: the
    real reply, a random utterance of another dialogue, and a same-dialogue utterance at least two turns away."""
    rng = random.Random(seed)
    contexts, responses = [], []
    for index, dialogue in enumerate(dialogues):
        if len(dialogue) < 3:
            continue
        position = rng.randrange(1, len(dialogue))
        other_index = rng.randrange(len(dialogues) - 1)
        other = dialogues[other_index + (other_index >= index)]
        far = [i for i in range(len(dialogue)) if abs(i - position) >= 2]
        candidates = [dialogue[position], rng.choice(other)] + ([dialogue[rng.choice(far)]] if far else [])
        contexts += [dialogue[:position]] * len(candidates)
        responses += candidates
    return datasets.Dataset.from_dict({"context": contexts, "response": responses})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--max-dialogues", type=int, default=None, help="use at most this many train dialogues")
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    set_seed(SEED)
    output_dir = Path(args.output_dir)

    corpus = load_dailydialog("train", args.data_dir).shuffle(seed=SEED)
    if args.max_dialogues is not None:
        corpus = corpus.select(range(min(args.max_dialogues, len(corpus))))
    pairs = floor_labelled_pairs(corpus["dialogue"])
    floor = load_metric("similarity", device="cpu")
    cosine = floor.score_turns(pairs["context"], pairs["response"]).overall
    pairs = pairs.add_column("score", [1.0 + 4.0 * min(max(value, 0.0), 1.0) for value in cosine])
    print(f"{len(pairs)} floor-labelled pairs from {len(corpus)} dialogues", flush=True)

    untrained = output_dir / "untrained"
    QuantiDCEModel.from_backbone(MINILM_HUB_ID, max_seq_length=MAX_SEQ_LENGTH, pooling="mean").save_pretrained(untrained)
    AutoTokenizer.from_pretrained(resolve_backbone_path(MINILM_HUB_ID)).save_pretrained(untrained)
    training_args = QuantiDCEKDTrainingArguments(
        output_dir=str(output_dir), teacher=str(untrained), no_distillation=True, num_train_epochs=1.0,
        per_device_train_batch_size=args.batch_size, learning_rate=args.learning_rate, seed=SEED, logging_steps=50,
        eval_strategy="no", held_out_share=0)
    train_kd(training_args, ratings=pairs)
    record = json.loads((output_dir / "training_record.json").read_text())

    student = load_metric("quantidce", checkpoint=str(output_dir), device="cpu")
    # the training MSE means little without the spread of what is imitated: a constant guess scores the variance
    results = {"pairs": len(pairs), "dialogues": len(corpus), "learning_rate": args.learning_rate,
               "batch_size": args.batch_size,
               "label_mean": float(np.mean(pairs["score"])), "label_variance": float(np.var(pairs["score"])),
               "training_loss": [{"step": entry["step"], "loss": entry["loss"]}
                                 for entry in record["log_history"] if "loss" in entry],
               "benchmarks": floor_comparison(student, floor, args.data_dir)}
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
