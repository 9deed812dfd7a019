"""The panel, chosen and measured by leave-one-release-out over the rated turn-level benchmarks.

    python benchmarks/panel/run.py [--data-dir DIR]

Every candidate member score (``CANDIDATES``) scores every benchmark once, through the score cache (what
``hf-dialeval leaderboard`` fills). Benchmarks of one release (same paper: they share items or conversations) are
held out together. For each held-out release, a panel fitted on the others alone (its CDFs on their items, its
weights on their ratings) scores it. What is chosen is chosen inside that loop, by the same leave-one-release-out
over the training releases only (nested): which member scores join (every subset of up to ``MOST_MEMBERS``
candidates, each as the plain mean of its CDF values), then the combiner's form (``FORMS``). So no held-out number
has seen its release, not even through a choice. The shipped choice is the same procedure run once over every
release (``hf-dialeval train panel`` then fits it on all of them: its card gives the command). Writes
``results/panel.json`` (every number, each fold's choice) and ``results/held_out_scores.json`` (the held-out panel's
score of every item of every rated turn-level benchmark, for ``hf-dialeval leaderboard --held-out``); the tables are
``summarize.py``'s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from hf_dialeval.data.benchmarks import BENCHMARKS, load_benchmark
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.data import RatedScores, finite_column
from hf_dialeval.metrics.panel.members import feature_rows, member_records, split_feature
from hf_dialeval.metrics.panel.modeling_panel import PanelModel
from hf_dialeval.metrics.panel.train import (
    PanelTrainingArguments,
    benchmark_scores,
    combiner_trainer,
    default_benchmarks,
)

RESULTS = Path(__file__).resolve().parent / "results"
#: Every member score a panel may take: the turn-level learned defaults' overall scores and HolisticEval's parts, the
#: two floors. (FineD-Eval, a dialogue-level model, is not a turn-level candidate.)
CANDIDATES = ("dial-m.overall", "holistic-eval.overall", "holistic-eval.context_coherence", "holistic-eval.fluency",
              "holistic-eval.diversity", "quantidce.overall", "similarity.overall", "length.overall")
#: The largest panel a subset search tries (every subset of up to this many candidates).
MOST_MEMBERS = 5
#: The combiner's forms: the plain mean of the CDF values; MME-CRS's correlation re-scaling (weights ∝ each score's
#: mean Spearman on the training sets, to the power k); the pairwise ranking loss through PanelTrainer.
FORMS = ("rank-mean", "mme-crs-1", "mme-crs-2", "mme-crs-4", "ranking")
#: Benchmarks a candidate member saw in training, and what it saw: marked in the table, left out of the check's mean.
SEEN_IN_TRAINING = {
    "holistic-context": "22 of its 200 query-reply pairs are DailyDialog train pairs, which Dial-M, HolisticEval and "
                        "QuantiDCE trained on (as text, without ratings)",
    "predictive-engage": "57 of its 1,800 query-reply pairs are DailyDialog train pairs, which Dial-M, HolisticEval "
                         "and QuantiDCE trained on (as text, without ratings)",
}


def spearman(scores: np.ndarray, ratings: np.ndarray) -> float:
    kept = ~np.isnan(scores)
    return float(spearmanr(scores[kept], ratings[kept])[0])


class Study:
    """The candidates' scores of every benchmark and the panels fitted on any set of them."""

    def __init__(self, data_dir: str | None) -> None:
        self.data_dir = data_dir
        names = list(dict.fromkeys(split_feature(feature)[0] for feature in CANDIDATES))
        self.metrics = {name: load_metric(name) for name in names}
        self.config = PanelConfig(members=member_records(CANDIDATES, {}, self.metrics))
        self.cache = ScoreCache()
        self.benchmarks = default_benchmarks(data_dir)
        self.sets = {name: benchmark_scores(name, self.config, self.metrics, data_dir, self.cache)
                     for name in self.benchmarks}
        #: every turn-level benchmark the panel scores: those fitted on and the variants of their items
        self.scored = [name for name, spec in BENCHMARKS.items() if spec.level == "turn"
                       and all(load_benchmark(name, data_dir)["context"])]
        self.release = {name: BENCHMARKS[name].citation for name in self.scored}
        self._normalised: dict[tuple[str, ...], dict[str, np.ndarray]] = {}

    def item_features(self, name: str) -> np.ndarray:
        """The candidates' scores of every item of benchmark ``name``, rated or not, in its order."""
        dataset = load_benchmark(name, self.data_dir)
        outputs = {member: self.cache.scores(metric, dataset, name)[0] for member, metric in self.metrics.items()}
        return np.array(feature_rows(self.config, outputs, len(dataset)), dtype=np.float32)

    def releases(self, benchmarks: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(self.release[name] for name in benchmarks))

    def cdf_model(self, train: Sequence[str], features: Sequence[str]) -> PanelModel:
        """A panel of ``features`` whose CDFs are fitted on the items of ``train`` (zero logits: the plain mean)."""
        columns = [CANDIDATES.index(feature) for feature in features]
        members = {}
        for feature in features:
            name, dimension = split_feature(feature)
            members.setdefault(name, {"metric": name, "dimensions": []})["dimensions"].append(dimension)
        model = PanelModel(PanelConfig(members=list(members.values())))
        model.set_cdfs([finite_column([self.sets[name] for name in train], column) for column in columns])
        return model

    def normalised(self, train: Sequence[str]) -> dict[str, np.ndarray]:
        """Every benchmark's candidate scores through the CDFs fitted on ``train``'s items."""
        key = tuple(sorted(train))
        if key not in self._normalised:
            model = self.cdf_model(train, CANDIDATES)
            self._normalised[key] = {name: model.normalise(torch.tensor(rated.features)).numpy()
                                     for name, rated in self.sets.items()}
        return self._normalised[key]

    def weights(self, form: str, features: Sequence[str], train: Sequence[str], seed: int = 0) -> np.ndarray:
        if form == "rank-mean":
            return np.ones(len(features))
        columns = [CANDIDATES.index(feature) for feature in features]
        if form.startswith("mme-crs-"):
            power = float(form.rsplit("-", 1)[1])
            correlations = np.array([np.mean([spearman(np.array(self.sets[name].features)[:, column],
                                                       np.array(self.sets[name].ratings)) for name in train])
                                     for column in columns])
            weights = np.clip(correlations, 0, None) ** power
            return weights if weights.sum() > 0 else np.ones(len(features))
        model = self.cdf_model(train, features)
        train_sets = [RatedScores(name, [[row[c] for c in columns] for row in self.sets[name].features],
                                  self.sets[name].ratings) for name in train]
        with tempfile.TemporaryDirectory() as folder:
            args = PanelTrainingArguments(output_dir=folder, report_to="none", seed=seed, save_strategy="no",
                                          disable_tqdm=True, logging_strategy="no")
            combiner_trainer(model, args, train_sets).train()
        return model.weights.detach().numpy()

    def held_out(self, features: Sequence[str], form: str, train: Sequence[str], test: Sequence[str],
                 weights: np.ndarray | None = None) -> dict[str, float]:
        """Spearman on each ``test`` benchmark of the panel of ``features`` and ``form`` fitted on ``train``."""
        weights = self.weights(form, features, train) if weights is None else weights
        columns = [CANDIDATES.index(feature) for feature in features]
        normalised = self.normalised(train)
        return {name: spearman(combine(normalised[name][:, columns], weights), np.array(self.sets[name].ratings))
                for name in test}

    def lobo(self, features: Sequence[str], form: str, benchmarks: Sequence[str]) -> dict[str, float]:
        """Leave-one-release-out within ``benchmarks``: each release scored by a panel fitted on the others."""
        scores = {}
        for release in self.releases(benchmarks):
            test = [name for name in benchmarks if self.release[name] == release]
            scores.update(self.held_out(features, form, [n for n in benchmarks if n not in test], test))
        return scores

    def choose(self, benchmarks: Sequence[str]) -> tuple[tuple[str, ...], str, dict]:
        """The member scores, then the form, with the best leave-one-release-out mean within ``benchmarks``."""
        subsets = [subset for size in range(1, MOST_MEMBERS + 1) for subset in itertools.combinations(CANDIDATES, size)]
        by_subset = {subset: np.mean(list(self.lobo(subset, "rank-mean", benchmarks).values())) for subset in subsets}
        features = max(by_subset, key=by_subset.get)
        by_form = {form: np.mean(list(self.lobo(features, form, benchmarks).values())) for form in FORMS}
        form = max(by_form, key=by_form.get)
        return features, form, {"subset_means": {" ".join(s): m for s, m in sorted(by_subset.items(),
                                                                                  key=lambda kv: -kv[1])[:10]},
                                "form_means": by_form}


def combine(normalised: np.ndarray, weights: np.ndarray) -> np.ndarray:
    present = ~np.isnan(normalised)
    total = (weights * present).sum(axis=1)
    return np.where(total > 0, (weights * np.nan_to_num(normalised)).sum(axis=1) / np.where(total > 0, total, 1),
                    np.nan)


def nested(study: Study) -> tuple[dict, dict[str, list[float]]]:
    """For each release, the choice made on the others, its held-out Spearman on the release's benchmarks, and every
    scored benchmark's held-out scores (a score per item, ``None`` where it does not apply)."""
    rows, scores = {}, {}
    for release in study.releases(study.benchmarks):
        test = [name for name in study.benchmarks if study.release[name] == release]
        train = [name for name in study.benchmarks if name not in test]
        features, form, trace = study.choose(train)
        weights = study.weights(form, features, train)
        rows[release] = {"features": features, "form": form, "weights": weights.tolist(), "trace": trace,
                         "held_out": study.held_out(features, form, train, test, weights)}
        model = study.cdf_model(train, features)
        columns = [CANDIDATES.index(feature) for feature in features]
        for name in (n for n in study.scored if study.release[n] == release):
            normalised = model.normalise(torch.tensor(study.item_features(name)[:, columns])).numpy()
            scores[name] = [None if np.isnan(v) else float(v) for v in combine(normalised, weights)]
        print(release[:40], features, form, rows[release]["held_out"], flush=True)
    return rows, scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    study = Study(args.data_dir)
    singles = {feature: study.lobo((feature,), "rank-mean", study.benchmarks) for feature in CANDIDATES}
    rows, scores = nested(study)
    record = {"benchmarks": study.benchmarks, "releases": study.release, "seen_in_training": SEEN_IN_TRAINING,
              "singles": singles, "nested": rows}
    features, form, trace = study.choose(study.benchmarks)
    record["shipped"] = {"features": features, "form": form, "trace": trace,
                         "fixed_lobo": {f: study.lobo(features, f, study.benchmarks) for f in FORMS}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "panel.json").write_text(json.dumps(record, indent=2, default=list) + "\n", encoding="utf-8")
    (RESULTS / "held_out_scores.json").write_text(json.dumps(
        {"metric": "panel", "procedure": "each release scored by a panel chosen and fitted without it (run.py)",
         "benchmarks": scores}) + "\n", encoding="utf-8")
    print(json.dumps(record["shipped"], indent=1, default=list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
