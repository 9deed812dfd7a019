"""The two readers of consecutive utterances that the shipped FineD-Eval adds to its encoder (this package's addition,
not in the paper), and how they are trained: the adjacency encoder, a sentence encoder fine-tuned to pick each
utterance's neighbours among the other utterances of a batch (``config.adjacency_encoder``), and the pair
cross-encoder, which reads a previous utterance and a candidate together and learns to pick the true next utterance
(``config.pair_encoder``). Both train the linear maps of their Transformer layers
(:func:`~hf_dialeval.training.model_preparation.train_layers_only`: the changes a FineD-Eval adapter carries) on DailyDialog train,
by ``hf-dialeval train fined-eval-adjacency-encoder`` and ``fined-eval-pair-encoder`` (:mod:`.reader_training`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn
from tqdm.auto import tqdm
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from hf_dialeval.metrics.fined_eval.constants import PAIR_HEAD_FILE
from hf_dialeval.metrics.fined_eval.modeling_fined_eval import embed_pieces
from hf_dialeval.modeling.checkpoint_sources import from_pretrained, resolve_backbone_path
from hf_dialeval.modeling.checkpoints import CheckpointError
from hf_dialeval.modeling.offline_models import MINILM_HUB_ID

#: Utterances of a training dialogue (its first ones), tokens per utterance, tokens per pair, pairs per scoring batch.
MAX_UTTERANCES = 12
MAX_TOKENS = 64
MAX_PAIR_TOKENS = 128
SCORING_BATCH = 128


def load_encoder(encoder: str | None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A sentence encoder (Hub id or folder; ``None``: the offline MiniLM) and its tokenizer, on the CPU."""
    path = resolve_backbone_path(encoder or MINILM_HUB_ID)
    return from_pretrained(AutoModel, path), AutoTokenizer.from_pretrained(path)


class SentenceReader:
    """The adjacency encoder: unit-length, mean-pooled embeddings of utterances, each encoded alone (with its special
    tokens), under bf16 autocast. A dialogue's score is the mean cosine of its consecutive utterances."""

    def __init__(self, encoder: str | None) -> None:
        self.model, self.tokenizer = load_encoder(encoder)
        self.pad_id = self.tokenizer.pad_token_id or 0

    def __call__(self, texts: list[str]) -> torch.Tensor:
        ids = self.tokenizer(texts, truncation=True, max_length=MAX_TOKENS)["input_ids"]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            pooled = embed_pieces(self.model, [torch.tensor(i) for i in ids], self.pad_id)
        return F.normalize(pooled, dim=-1)

    @torch.no_grad()
    def dialogue_scores(self, dialogues: list[list[str]]) -> np.ndarray:
        """Mean cosine of consecutive utterances, per dialogue."""
        texts = list(dict.fromkeys(u for d in dialogues for u in d))
        vectors = dict(zip(texts, torch.cat([self(texts[i:i + 512]) for i in range(0, len(texts), 512)])))
        return np.array([float(np.mean([float(vectors[a] @ vectors[b]) for a, b in zip(d[:-1], d[1:])]))
                         for d in dialogues])

    def save(self, folder: str | Path) -> None:
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))


def next_utterance_loss(embeddings: torch.Tensor, owner: list[int], scale: float) -> torch.Tensor:
    """Cross-entropy of each consecutive pair's scaled cosine against every other utterance of the batch (the rest of
    the same dialogue among them: the utterances a shuffle puts in the wrong place), both ways."""
    logits = (embeddings @ embeddings.T * scale).fill_diagonal_(-1e4)
    anchors, targets = [], []
    for index in range(1, len(owner)):
        if owner[index] == owner[index - 1]:
            anchors += [index - 1, index]
            targets += [index, index - 1]
    return F.cross_entropy(logits[anchors], torch.tensor(targets))


def load_pair_head(pair_encoder: str | Path) -> nn.Linear:
    """The trained one-logit pair layer saved beside a pair cross-encoder (:meth:`PairReader.save`)."""
    path = Path(pair_encoder) / PAIR_HEAD_FILE
    if not path.is_file():
        raise CheckpointError(f"the pair encoder's trained pair layer {path} does not exist: give the folder "
                              "hf-dialeval train fined-eval-pair-encoder --output-dir wrote")
    weights = load_file(str(path))
    head = nn.Linear(weights["weight"].shape[1], 1)
    head.load_state_dict(weights)
    return head


class PairReader(nn.Module):
    """The pair cross-encoder: a logit per (previous utterance, utterance) pair, read together by one encoder as the
    tokenizer frames a text pair, under bf16 autocast. ``encoder`` is a sentence encoder (a new pair layer) or a
    folder :meth:`save` wrote (its trained pair layer). A dialogue's score is the mean logit of its pairs."""

    def __init__(self, encoder: str | None) -> None:
        super().__init__()
        self.encoder, self.tokenizer = load_encoder(encoder)
        trained = encoder is not None and (Path(encoder) / PAIR_HEAD_FILE).is_file()
        self.head = load_pair_head(encoder) if trained else nn.Linear(self.encoder.config.hidden_size, 1)

    def forward(self, previous: list[str], utterances: list[str]) -> torch.Tensor:
        inputs = self.tokenizer(previous, utterances, truncation=True, max_length=MAX_PAIR_TOKENS, padding=True,
                                return_tensors="pt")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            hidden = self.encoder(**inputs).last_hidden_state
        mask = inputs["attention_mask"].unsqueeze(-1).float()
        pooled = (hidden.float() * mask).sum(1) / mask.sum(1)
        return self.head(pooled).squeeze(-1)

    @torch.no_grad()
    def dialogue_scores(self, dialogues: list[list[str]]) -> np.ndarray:
        """Mean logit of consecutive utterance pairs, per dialogue."""
        # longest first, so that each batch pads to lengths near its own
        pairs = sorted(dict.fromkeys(pair for d in dialogues for pair in zip(d[:-1], d[1:])),
                       key=lambda pair: -len(pair[0]) - len(pair[1]))
        logits = torch.cat([self([a for a, _ in pairs[i:i + SCORING_BATCH]], [b for _, b in pairs[i:i + SCORING_BATCH]])
                            for i in range(0, len(pairs), SCORING_BATCH)])
        by_pair = dict(zip(pairs, logits.tolist()))
        return np.array([float(np.mean([by_pair[pair] for pair in zip(d[:-1], d[1:])])) for d in dialogues])

    def save(self, folder: str | Path) -> None:
        """The encoder and tokenizer, and the pair layer as ``pair_head.safetensors``: what ``hf-dialeval train
        fined-eval --pair-encoder`` reads."""
        self.encoder.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
        save_file(self.head.state_dict(), str(Path(folder) / PAIR_HEAD_FILE))


def candidate_batch(batch: list[list[str]], corpus: list[list[str]], negatives: int, rng: random.Random,
                    echo: bool = False) -> tuple[list[str], list[str]]:
    """Per dialogue: its previous utterance once per candidate, and as candidates the true next utterance first,
    then ``negatives`` others of the same dialogue (padded from other dialogues), then one of another, then with
    ``echo`` the previous utterance itself (one of another dialogue where it equals the true one)."""
    previous, candidates = [], []
    for dialogue in batch:
        position = rng.randrange(1, len(dialogue))
        target, before = dialogue[position], dialogue[position - 1]
        same = [u for p, u in enumerate(dialogue) if p not in (position - 1, position) and u != target]
        chosen = rng.sample(same, min(negatives, len(same)))
        while len(chosen) < negatives + 1:
            chosen.append(rng.choice(rng.choice(corpus)))
        if echo:
            chosen.append(before if before != target else rng.choice(rng.choice(corpus)))
        previous += [before] * (len(chosen) + 1)
        candidates += [target] + chosen
    return previous, candidates


def train_reader(model: nn.Module, step_loss: Callable[[], torch.Tensor], optimizer: torch.optim.Optimizer,
                 steps: int, eval_steps: int, evaluate: Callable[[], dict[str, float]], description: str) -> dict:
    """Train ``model`` for ``steps`` steps of ``step_loss()`` (a contrastive batch drawn anew each step: no dataset
    the Trainer could page through). Before training, every ``eval_steps`` steps and at the end ``evaluate()`` runs
    with ``model`` in eval mode (the train commands: win rates on held-out checklist pairs, to choose the steps). Returns
    the evaluations per step, the ``loss`` every 50 steps and the training ``seconds``."""

    def evaluated() -> dict[str, float]:
        model.eval()
        result = evaluate()
        model.train()
        return result

    record: dict = {"win_rates": {0: evaluated()}, "loss": {}}
    print(0, record["win_rates"][0], flush=True)
    start = time.time()
    for step in tqdm(range(1, steps + 1), desc=description):
        loss = step_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            record["loss"][step] = round(loss.item(), 4)
        if step % eval_steps == 0 or step == steps:
            record["win_rates"][step] = evaluated()
            print(step, record["win_rates"][step], flush=True)
    record["seconds"] = round(time.time() - start)
    return record
