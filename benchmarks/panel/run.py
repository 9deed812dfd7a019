"""The panel, chosen and measured by leave-one-release-out over the rated turn-level benchmarks.

    python benchmarks/panel/run.py [--data-dir DIR]

Every member score read (``SCORES``) scores every benchmark once, through the score cache (what
``hf-dialeval leaderboard`` fills); a panel takes ``CANDIDATES``, those of ``MARK_DOWN_ONLY`` marking a reply down
only. Benchmarks of one release (same paper: they share items or conversations) are
held out together. For each held-out release, a panel fitted on the others alone (its CDFs on their items, its
weights on their ratings) scores it. What is chosen is chosen inside that loop, by the same leave-one-release-out
over the training releases only (nested): which member scores join and whether each counts in full or half
(every subset of up to ``MOST_MEMBERS`` candidates, each as the weighted mean of its CDF values), then the
combiner's form (``FORMS``). Only a panel that passes the trust check is a candidate (``TRUST``: it must prefer the
human reply to each degraded one on the checklist's validation pairs). So no held-out number has seen its release,
not even through a choice, and no checklist test pair was seen by any choice. The shipped choice is the same
procedure run once over every release (``hf-dialeval train panel`` then fits it on all of them: its card gives the
command). Writes ``results/panel.json`` (every number, each fold's choice) and ``results/held_out_scores.json`` (the
held-out panel's score of every item of every rated turn-level benchmark, for ``hf-dialeval leaderboard
--held-out``); the tables are ``summarize.py``'s. A dialogue-level benchmark of one of these releases (FED's) is
scored by the panel that release's fold chose and fitted, as the panel scores a dialogue: the mean of its scores of
the dialogue's system turns (nothing is chosen or fitted at dialogue level). The validation pairs' member scores come
through the score cache too (``hf-dialeval checklist --split`` fills it; otherwise this scores them first).
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
from hf_dialeval.data.model import is_blank
from hf_dialeval.data.perturbations import PERTURBATIONS
from hf_dialeval.evaluation.checklist import build_pairs, load_checklist_corpus, pair_cache_name, pair_items
from hf_dialeval.freed_memory import trim_freed_memory
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.data import RatedScores, finite_column
from hf_dialeval.metrics.panel.members import feature_rows, member_dimensions, member_record, split_feature
from hf_dialeval.metrics.panel.modeling_panel import PanelModel, apply_cdf, combine, fit_cdf_knots
from hf_dialeval.metrics.panel.reference_dialogues import system_turn_items
from hf_dialeval.metrics.panel.scoring import PanelMetric
from hf_dialeval.metrics.panel.train import (
    PanelTrainingArguments,
    combiner_trainer,
    default_benchmarks,
    headline,
    rated_scores,
)

RESULTS = Path(__file__).resolve().parent / "results"
#: Every member score the study reads: the turn-level learned defaults' overall scores, HolisticEval's parts, the two
#: floors. (FineD-Eval, a dialogue-level model, is not a turn-level candidate.)
SCORES = ("dial-m.overall", "holistic-eval.overall", "holistic-eval.context_coherence", "holistic-eval.fluency",
          "holistic-eval.diversity", "quantidce.overall", "similarity.overall", "length.overall")
#: The scores a panel may take: HolisticEval by its parts only, since its ``overall`` (the mean of its parts) would
#: carry its diversity into a panel past the rule below.
CANDIDATES = tuple(score for score in SCORES if score != "holistic-eval.overall")
#: Candidates that reward a long reply whatever it says: in any panel each marks a reply down only
#: (``PanelConfig.mark_down_only``: it counts at most at the weighted mean of the panel's other scores), so it can
#: lower a dull reply but cannot lift a run-on one above what the content-reading members make of it.
MARK_DOWN_ONLY = ("holistic-eval.diversity", "length.overall")
#: The blind baseline a panel must beat: the plain mean of the CDF values of the three learned turn-level defaults'
#: overall scores, no choice made.
BLIND_MEAN = ("dial-m.overall", "holistic-eval.overall", "quantidce.overall")
#: The largest panel a subset search tries (every subset of up to this many candidates).
MOST_MEMBERS = 5
#: What a score may count for in a subset's weighted mean (relative to the subset's other scores): in full or half.
SHARES = (1.0, 0.5)
#: The combiner's forms: the subset's weighted mean of the CDF values, as chosen; MME-CRS's correlation re-scaling
#: (weights ∝ each score's mean Spearman on the training sets, to the power k); the pairwise ranking loss through
#: PanelTrainer.
FORMS = ("chosen", "mme-crs-1", "mme-crs-2", "mme-crs-4", "ranking")
#: Trust before correlation: a panel is a candidate only if it prefers the human reply in at least ``TRUST`` of the
#: pairs of every turn-level perturbation a reply can fail (``TRUST_PERTURBATIONS``), on the validation splits of the
#: checklist's corpora (``TRUST_SPLITS``; its test pairs are the committed checklist's), with CDFs fitted on the
#: training releases; where no single candidate reaches ``TRUST`` on a pair set, at least the best of them does
#: (Topical-Chat's validation random replies: every candidate 0.82 or less). A mean can inherit a member's blind
#: spot: HolisticEval's diversity rewards any long reply. The bar is 0.90 with a margin: the panel chosen among
#: thousands is the one whose 200 pairs a set happened to pass (at 0.90 exactly, the pick won 0.900 and 0.905 of
#: two validation sets and 0.890 and 0.820 of their test pairs, which is why the margin was added); 0.92 is about
#: one standard error of 200 pairs above 0.90.
TRUST = 0.92
TRUST_PERTURBATIONS = ("generic", "random", "echo", "repeat", "phrase-repeat", "word-repeat", "gibberish", "long")
TRUST_SPLITS = {"dailydialog": "validation", "topical-chat": "valid_freq"}
TRUST_PAIRS = 200
#: Benchmarks a candidate member saw in training, and what it saw: marked in the table, left out of the check's mean.
SEEN_IN_TRAINING = {
    "holistic-context": "22 of its 200 query-reply pairs are DailyDialog train pairs, which Dial-M, HolisticEval and "
                        "QuantiDCE trained on (as text, without ratings)",
    "predictive-engage": "57 of its 1,800 query-reply pairs are DailyDialog train pairs, which Dial-M, HolisticEval "
                         "and QuantiDCE trained on (as text, without ratings)",
}


def dialogue_means(turn_scores: Sequence[float], counts: Sequence[int]) -> list[float]:
    """Per dialogue, the mean of its ``counts`` turns' scores (``turn_scores`` in dialogue order)."""
    bounds = np.cumsum([0, *counts])
    return [float(np.mean(turn_scores[start:end])) for start, end in zip(bounds[:-1], bounds[1:])]


def cdf_values(values: np.ndarray, reference: np.ndarray, quantile_count: int) -> np.ndarray:
    """``values`` through the empirical CDF of ``reference`` as the panel normalises a member score."""
    knots, levels = fit_cdf_knots(reference.tolist(), quantile_count)
    column = torch.tensor(values, dtype=torch.float32).unsqueeze(1)
    return apply_cdf(column, knots.unsqueeze(0), levels.unsqueeze(0)).squeeze(1).double().numpy()


def spearman(scores: np.ndarray, ratings: np.ndarray) -> float:
    kept = ~np.isnan(scores)
    return float(spearmanr(scores[kept], ratings[kept])[0])


class Study:
    """The candidates' scores of every benchmark and the panels fitted on any set of them, trust checked on the pairs
    of ``trust_splits`` (corpus → split; ``None``: the corpus's test split, for a study that chooses nothing)."""

    def __init__(self, data_dir: str | None, trust_splits: dict[str, str | None] = TRUST_SPLITS) -> None:
        self.cache = ScoreCache()
        self.benchmarks = default_benchmarks(data_dir)
        #: every turn-level benchmark the panel scores: those fitted on and the variants of their items
        turn_level = {name: load_benchmark(name, data_dir) for name, spec in BENCHMARKS.items() if spec.level == "turn"}
        self.scored = [name for name, dataset in turn_level.items() if all(dataset["context"])]
        self.release = {name: BENCHMARKS[name].citation for name in self.scored}
        # what the candidates score: the benchmarks, and per "CORPUS PERTURBATION" of the trust check the originals
        # then the perturbed replies of its validation pairs (``hf-dialeval checklist --split`` caches them too)
        scored = {name: (turn_level[name], name) for name in self.scored}
        originals = {}
        for corpus, split in trust_splits.items():
            dialogues = load_checklist_corpus(corpus, data_dir, split)
            for perturbation in TRUST_PERTURBATIONS:
                pairs = build_pairs(PERTURBATIONS[perturbation], dialogues, "turn", TRUST_PAIRS)
                scored[f"{corpus} {perturbation}"] = (pair_items(pairs), pair_cache_name(perturbation))
                originals[f"{corpus} {perturbation}"] = len(pairs.originals)
        #: the dialogue-level benchmarks of these releases, scored as the panel scores a dialogue: the mean of its
        #: scores of the system turns, each after the turns before it
        self.dialogues = {name: load_benchmark(name, data_dir) for name, spec in BENCHMARKS.items()
                          if spec.level == "dialogue" and spec.citation in self.release.values()}
        self.turn_counts: dict[str, list[int]] = {}
        for name, dataset in self.dialogues.items():
            items, self.turn_counts[name] = system_turn_items(dataset["dialogue"], dataset["speakers"])
            scored[f"{name} turns"] = (items, f"{name}-turns")
        features, records = self.member_features(scored)
        self.config = PanelConfig(members=records)
        self.sets = {name: rated_scores(name, features[name], scored[name][0][headline(scored[name][0])])
                     for name in self.benchmarks}
        #: the candidates' scores of every item of each scored benchmark, rated or not, in its order (a dialogue-level
        #: benchmark's: of its system turns, "NAME turns")
        self.item_features = {name: features[name].astype(np.float32)
                              for name in [*self.scored, *(f"{n} turns" for n in self.dialogues)]}
        self.blank = {name: np.array([is_blank(r) for r in scored[name][0]["response"]]) for name in self.item_features}
        self.trust_pairs = {name: (features[name][:count].astype(np.float32),
                                   features[name][count:].astype(np.float32)) for name, count in originals.items()}
        self._normalised: dict[tuple[str, ...], dict[str, np.ndarray]] = {}
        self._floors: dict[tuple[str, ...], dict[str, float]] = {}

    def member_features(self, scored: dict[str, tuple]) -> tuple[dict[str, np.ndarray], list[dict]]:
        """Per ``scored`` set (items, score cache name), the raw value of every score of each item (items ×
        scores), through the score cache, and the members' config records. The members load one at a time, only
        their scores are kept, and each member's memory is handed back before the next loads (keeping every output
        and handing nothing back, the study peaked at 4.4 GB)."""
        features = {key: np.full((len(items), len(SCORES)), np.nan) for key, (items, _) in scored.items()}
        records = []
        for name, dimensions in member_dimensions(SCORES).items():
            metric = load_metric(name)
            records.append(member_record(name, None, metric, dimensions))
            member = PanelConfig(members=records[-1:])
            columns = [SCORES.index(feature) for feature in member.features]
            for key, (items, cache_name) in scored.items():
                output = self.cache.scores(metric, items, cache_name)[0]
                features[key][:, columns] = feature_rows(member.features, {name: output}, len(items))
            del metric  # freed, its memory handed back, before the next member loads
            trim_freed_memory()
        return features, records

    def fitted_model(self, train: Sequence[str], features: Sequence[str], weights: np.ndarray) -> PanelModel:
        """The panel of ``features`` with ``weights`` (a score weighted 0 left out), its CDFs fitted on ``train``."""
        kept = [index for index, weight in enumerate(weights) if weight > 0]
        model = self.cdf_model(train, [features[index] for index in kept])
        model.set_weights([float(weights[index]) for index in kept])
        return model

    def panel_scores(self, model: PanelModel, name: str) -> np.ndarray:
        """The panel ``model``'s score of every item of scored set ``name`` (a benchmark, or a dialogue-level
        benchmark's system turns, "NAME turns") from the candidates' scores, as the panel scores an item: an empty
        reply scores the panel's lowest."""
        columns = [SCORES.index(feature) for feature in model.config.features]
        with torch.inference_mode():
            scores = model(features=torch.tensor(self.item_features[name][:, columns])).scores.numpy()
        return np.where(self.blank[name], PanelMetric.lowest_score, scores)

    def dialogue_scores(self, name: str, model: PanelModel) -> list[float]:
        """The panel ``model``'s score of each dialogue of dialogue-level benchmark ``name`` as the panel scores a
        dialogue: the mean of its scores of the dialogue's system turns."""
        return dialogue_means(self.panel_scores(model, f"{name} turns"), self.turn_counts[name])

    def releases(self, benchmarks: Sequence[str]) -> list[str]:
        return list(dict.fromkeys(self.release[name] for name in benchmarks))

    def cdf_model(self, train: Sequence[str], features: Sequence[str]) -> PanelModel:
        """A panel of ``features`` whose CDFs are fitted on the items of ``train`` (zero logits: the plain mean)."""
        columns = [SCORES.index(feature) for feature in features]
        members = {}
        for feature in features:
            name, dimension = split_feature(feature)
            members.setdefault(name, {"metric": name, "dimensions": []})["dimensions"].append(dimension)
        model = PanelModel(PanelConfig(members=list(members.values()),
                                       mark_down_only=[f for f in features if f in MARK_DOWN_ONLY]))
        model.set_cdfs([finite_column([self.sets[name] for name in train], column) for column in columns])
        return model

    def normalised(self, train: Sequence[str]) -> dict[str, np.ndarray]:
        """Every benchmark's member scores (``SCORES``) through the CDFs fitted on ``train``'s items."""
        key = tuple(sorted(train))
        if key not in self._normalised:
            model = self.cdf_model(train, SCORES)
            self._normalised[key] = {name: model.normalise(torch.tensor(rated.features)).numpy()
                                     for name, rated in self.sets.items()}
            for name, pair in self.trust_pairs.items():
                for side, features in zip(("original", "perturbed"), pair):
                    self._normalised[key][f"{name} {side}"] = model.normalise(torch.tensor(features)).numpy()
        return self._normalised[key]

    def win_rates(self, features: Sequence[str], weights: np.ndarray, train: Sequence[str]) -> dict[str, float]:
        """Per trust pair set, the share of pairs whose original the panel of ``features`` and ``weights`` (CDFs
        fitted on ``train``) scores higher (ties half, as the checklist counts)."""
        columns = [SCORES.index(feature) for feature in features]
        normalised = self.normalised(train)
        rates = {}
        for name in self.trust_pairs:
            original = self.combined(normalised[f"{name} original"][:, columns], features, weights)
            perturbed = self.combined(normalised[f"{name} perturbed"][:, columns], features, weights)
            rates[name] = float(np.mean((original > perturbed) + 0.5 * (original == perturbed)))
        return rates

    def trust_floors(self, train: Sequence[str]) -> dict[str, float]:
        """Per trust pair set, the win rate a panel must reach: ``TRUST``, or the best single candidate's if lower."""
        key = tuple(sorted(train))
        if key not in self._floors:
            singles = [self.win_rates((feature,), np.ones(1), train) for feature in CANDIDATES]
            self._floors[key] = {name: min(TRUST, max(rates[name] for rates in singles)) for name in self.trust_pairs}
        return self._floors[key]

    def trusted(self, features: Sequence[str], weights: np.ndarray, train: Sequence[str]) -> bool:
        rates = self.win_rates(features, weights, train)
        return all(rates[name] >= floor for name, floor in self.trust_floors(train).items())

    def weights(self, form: str, features: Sequence[str], train: Sequence[str], shares: Sequence[float] | None = None,
                seed: int = 0) -> np.ndarray:
        """The weights of ``features`` under ``form``, fitted on ``train`` (``chosen``: ``shares``, normalised)."""
        if form == "chosen":
            shares = np.ones(len(features)) if shares is None else np.asarray(shares, dtype=float)
            return shares / shares.sum()
        columns = [SCORES.index(feature) for feature in features]
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
        columns = [SCORES.index(feature) for feature in features]
        normalised = self.normalised(train)
        return {name: spearman(self.combined(normalised[name][:, columns], features, weights),
                               np.array(self.sets[name].ratings)) for name in test}

    def lobo(self, features: Sequence[str], form: str, benchmarks: Sequence[str], shares: Sequence[float] | None = None
             ) -> dict[str, float]:
        """Leave-one-release-out within ``benchmarks``: each release scored by a panel fitted on the others."""
        scores = {}
        for release in self.releases(benchmarks):
            test = [name for name in benchmarks if self.release[name] == release]
            train = [n for n in benchmarks if n not in test]
            scores.update(self.held_out(features, form, train, test, self.weights(form, features, train, shares)))
        return scores

    def combined(self, normalised: np.ndarray, features: Sequence[str], weights: np.ndarray) -> np.ndarray:
        """The panel's score from the CDF values ``normalised`` of ``features`` weighted by ``weights``, as
        :class:`PanelModel` combines them (those of ``MARK_DOWN_ONLY`` marking down only)."""
        mark_down_only = torch.tensor([feature in MARK_DOWN_ONLY for feature in features])
        return combine(torch.from_numpy(normalised).double(), torch.from_numpy(np.asarray(weights, dtype=float)),
                       mark_down_only).numpy()

    def choose(self, benchmarks: Sequence[str]) -> tuple[tuple[str, ...], str, np.ndarray, dict]:
        """The member scores and their shares, then the form, with the best leave-one-release-out mean within
        ``benchmarks`` among the trusted panels (fitted on ``benchmarks``), and the form's weights fitted on them."""
        subsets = [(subset, shares) for size in range(1, MOST_MEMBERS + 1)
                   for subset in itertools.combinations(CANDIDATES, size)
                   for shares in itertools.product(SHARES, repeat=size) if max(shares) == SHARES[0]
                   if self.trusted(subset, np.array(shares), benchmarks)]
        if not subsets:
            raise RuntimeError(f"no panel of up to {MOST_MEMBERS} candidates passes the trust check on these releases")
        by_subset = {(subset, shares): np.mean(list(self.lobo(subset, "chosen", benchmarks, shares).values()))
                     for subset, shares in subsets}
        features, shares = max(by_subset, key=by_subset.get)
        weights = {form: self.weights(form, features, benchmarks, shares) for form in FORMS}
        forms = [form for form in FORMS if self.trusted(features, weights[form], benchmarks)]
        by_form = {form: np.mean(list(self.lobo(features, form, benchmarks, shares).values())) for form in forms}
        form = max(by_form, key=by_form.get)
        best = sorted(by_subset.items(), key=lambda kv: -kv[1])[:10]
        return features, form, weights[form], {
            "trusted_subsets": len(subsets), "shares": shares,
            "subset_means": {" ".join(f"{f}*{s:g}" for f, s in zip(*key)): mean for key, mean in best},
            "form_means": by_form, "win_rates": self.win_rates(features, weights[form], benchmarks),
            "trust_floors": self.trust_floors(benchmarks)}




def nested(study: Study) -> tuple[dict, dict[str, list[float]]]:
    """For each release, the choice made on the others, its held-out Spearman on the release's benchmarks, and every
    scored benchmark's held-out scores (a score per item, ``None`` where it does not apply)."""
    rows, scores = {}, {}
    for release in study.releases(study.benchmarks):
        test = [name for name in study.benchmarks if study.release[name] == release]
        train = [name for name in study.benchmarks if name not in test]
        features, form, weights, trace = study.choose(train)
        rows[release] = {"features": features, "form": form, "weights": weights.tolist(), "trace": trace,
                         "held_out": study.held_out(features, form, train, test, weights)}
        model = study.fitted_model(train, features, weights)
        for name in (n for n in study.scored if study.release[n] == release):
            scores[name] = [None if np.isnan(v) else float(v) for v in study.panel_scores(model, name)]
        rows[release]["dialogue_held_out"] = {}
        for name in (n for n in study.dialogues if BENCHMARKS[n].citation == release):
            scores[name] = study.dialogue_scores(name, model)
            ratings = np.array(study.dialogues[name][headline(study.dialogues[name])], dtype=float)
            rows[release]["dialogue_held_out"][name] = spearman(np.array(scores[name]), ratings)
        print(release[:40], features, form, rows[release]["held_out"], rows[release]["dialogue_held_out"], flush=True)
    return rows, scores


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    args = parser.parse_args()
    study = Study(args.data_dir)
    singles = {feature: study.lobo((feature,), "chosen", study.benchmarks) for feature in SCORES}
    rows, scores = nested(study)
    record = {"benchmarks": study.benchmarks, "releases": study.release, "seen_in_training": SEEN_IN_TRAINING,
              "trust_pairs": {name: len(originals) for name, (originals, _) in study.trust_pairs.items()},
              "singles": singles, "nested": rows}
    features, form, weights, trace = study.choose(study.benchmarks)
    record["shipped"] = {"features": features, "form": form, "weights": weights.tolist(), "trace": trace,
                         "fixed_lobo": {f: study.lobo(features, f, study.benchmarks, trace["shares"]) for f in FORMS}}
    record["members_overall_mean"] = {
        "features": BLIND_MEAN, "lobo": study.lobo(BLIND_MEAN, "chosen", study.benchmarks),
        "win_rates": study.win_rates(BLIND_MEAN, np.ones(len(BLIND_MEAN)), study.benchmarks)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "panel.json").write_text(json.dumps(record, indent=2, default=list) + "\n", encoding="utf-8")
    (RESULTS / "held_out_scores.json").write_text(json.dumps(
        {"metric": "panel", "procedure": "each release scored by a panel chosen and fitted without it (run.py)",
         "benchmarks": scores}) + "\n", encoding="utf-8")
    print(json.dumps(record["shipped"], indent=1, default=list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
