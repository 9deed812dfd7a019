"""Does MiniLM's sentence similarity survive cross-encoding? On grade-convai2, the Spearman correlation with the
coherence ratings of the cosine between the mean context vector and the mean response vector taken *inside* the
joint ``[CLS] context [SEP] response [SEP]`` encoding QuantiDCE reads (special tokens left out), untrained.
Compare with the floor of ``run.py`` (the two encoded apart: Spearman 0.494).

    python benchmarks/quantidce/studies/joint_encoding_similarity.py --data-dir ../shared/data
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

from hf_dialeval import correlate, load_benchmark
from hf_dialeval.inference.model_metric import encode_context_response
from hf_dialeval.modeling.offline_models import offline_backbone_path

RESULTS = Path(__file__).resolve().parents[1] / "results"


@torch.inference_mode()
def joint_segment_cosines(contexts: list[list[str]], responses: list[str], max_length: int) -> list[float]:
    path = offline_backbone_path()
    tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
    encoding, _ = encode_context_response(tokenizer, contexts, responses, max_length)
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id}
    cosines = []
    for input_ids, segments in zip(encoding["input_ids"], encoding["token_type_ids"]):
        ids, segment = torch.tensor([input_ids]), torch.tensor(segments)
        hidden = model(input_ids=ids, token_type_ids=segment[None]).last_hidden_state[0]
        content = torch.tensor([token not in special for token in input_ids])
        context, response = hidden[content & (segment == 0)].mean(0), hidden[content & (segment == 1)].mean(0)
        cosines.append(float(F.cosine_similarity(context, response, dim=0)))
    return cosines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--max-length", type=int, nargs="+", default=[64, 128])
    args = parser.parse_args()
    dataset = load_benchmark("grade-convai2", args.data_dir)
    contexts, responses = [list(c) for c in dataset["context"]], list(dataset["response"])
    results = {}
    for max_length in args.max_length:
        result = correlate(joint_segment_cosines(contexts, responses, max_length), dataset["Coherence"])
        results[str(max_length)] = {k: result[k] for k in ("pearson", "spearman", "kendall")}
        print(f"max_length {max_length}: " + ", ".join(f"{k} {v:+.3f}" for k, v in results[str(max_length)].items()))
    (RESULTS / "joint_encoding_similarity.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
