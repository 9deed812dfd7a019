"""Can a pretrained causal LM stand in for HolisticEval's NLI model (§3.4)? Asked, zero-shot, whether two statements
contradict each other, its contradiction probability is ``P(" yes") / (P(" yes") + P(" no"))`` of the next token after
a fixed prompt. Scored as the consistency score is (1 − the mean contradiction probability of the reply against each
earlier utterance of its speaker) on the checklist's ``negate`` pairs (a reply replaced by the speaker's own earlier
statement negated): the share of pairs where the human reply is the more consistent one.

    python benchmarks/holistic_eval/studies/lm_nli_judge.py --data-dir ../shared/data --backbone google/gemma-3-270m

Writes ``results/lm_nli_judge-<backbone>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.data.text import detokenize
from hf_dialeval.evaluation.checklist import build_pairs, load_checklist_corpus, win_rate
from hf_dialeval.inference.metric import length_sorted_batches
from hf_dialeval.metrics.holistic_eval.consistency import NLIConsistencyScorer
from hf_dialeval.modeling.checkpoint_sources import from_pretrained, resolve_backbone_path

RESULTS = Path(__file__).resolve().parents[1] / "results"
PROMPT = ("Statement 1: {premise}\nStatement 2: {hypothesis}\n"
          "Question: Do Statement 1 and Statement 2 contradict each other? Answer yes or no.\nAnswer:")


class LMContradictionJudge(NLIConsistencyScorer):
    """:class:`NLIConsistencyScorer` with a causal LM's next-token probabilities in place of an NLI classifier."""

    def __init__(self, backbone: str, batch_size: int = 16) -> None:  # the LM in place of the classifier
        self.tokenizer = AutoTokenizer.from_pretrained(resolve_backbone_path(backbone))
        self.tokenizer.padding_side = "left"  # the next token is read at the last position of every row
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.lm = from_pretrained(AutoModelForCausalLM, backbone).eval()
        self.answers = [self.tokenizer(word, add_special_tokens=False)["input_ids"][0] for word in (" yes", " no")]
        self.batch_size = batch_size
        self.checkpoint = backbone

    @torch.inference_mode()
    def contradiction_probabilities(self, premises, hypotheses) -> list[float]:
        prompts = [PROMPT.format(premise=detokenize(p), hypothesis=detokenize(h)) for p, h in zip(premises, hypotheses)]
        probabilities = [0.0] * len(prompts)
        for indices in length_sorted_batches([len(p) for p in prompts], self.batch_size):
            batch = self.tokenizer([prompts[i] for i in indices], return_tensors="pt", padding=True)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = self.lm(**batch).logits[:, -1].float()
            yes_no = torch.softmax(logits[:, self.answers], dim=-1)[:, 0]
            for i, value in zip(indices, yes_no.tolist()):
                probabilities[i] = value
        return probabilities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--backbone", required=True)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dialogues = load_checklist_corpus("dailydialog", args.data_dir)
    pairs = build_pairs(PERTURBATIONS["negate"], dialogues, "turn", args.pairs, args.seed)
    judge = LMContradictionJudge(args.backbone)
    start = time.perf_counter()
    original = judge.score(pairs.contexts, pairs.originals)
    perturbed = judge.score(pairs.contexts, pairs.perturbed)
    result = {"backbone": args.backbone, "prompt": PROMPT, "corpus": "dailydialog test", "pairs": len(pairs.originals),
              "seed": args.seed, **win_rate(original, perturbed, args.seed),
              "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(result, indent=2))
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = args.backbone.rstrip("/").split("/")[-1]
    (RESULTS / f"lm_nli_judge-{name}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
