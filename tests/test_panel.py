"""The panel: its CDF normalisation (hand-computed values, batch independence), its loss and pairs, its
renormalisation over the members present, and ``train panel`` → scoring, end to end with two light members (the
length floor and the untrained MiniLM similarity), through the score cache as well."""

import json
import math
import weakref

import pytest
import torch
from transformers import AutoModel

from hf_dialeval.cli import main
from hf_dialeval.errors import OptionError
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache
from hf_dialeval.metrics.panel.configuration_panel import PanelConfig
from hf_dialeval.metrics.panel.data import NO_WEIGHT, RatedScores, correlation_weights, preference_pairs
from hf_dialeval.metrics.panel.modeling_panel import PanelModel, apply_cdf, fit_cdf_knots
from hf_dialeval.metrics.panel.trainer import pairwise_ranking_loss
from hf_dialeval.modeling.checkpoints import CheckpointError

NAN = float("nan")


def two_member_panel(quantile_count=5):
    config = PanelConfig(members=[{"metric": "length", "dimensions": ["overall"]},
                                  {"metric": "similarity", "dimensions": ["similarity"]}],
                         quantile_count=quantile_count)
    model = PanelModel(config)
    model.set_cdfs([[1, 2, 3, 4, 5, 6, 7, 8], [0.1, 0.2, 0.2, 0.2, 0.9]])
    return model


def test_the_cdf_knots_are_quantiles_with_their_mid_rank_levels():
    knots, levels = fit_cdf_knots([0.1, 0.2, 0.2, 0.2, 0.9, NAN], 5)
    assert knots.tolist() == pytest.approx([0.1, 0.2, 0.2, 0.2, 0.9])
    # 0.1: none below, one at or below -> (0 + 1) / 10; 0.2: one below, four at or below -> 5 / 10
    assert levels.tolist() == pytest.approx([0.1, 0.5, 0.5, 0.5, 0.9])


def test_the_cdf_interpolates_between_knots_and_is_flat_outside():
    knots, levels = torch.tensor([[0.0, 1.0, 3.0]]), torch.tensor([[0.1, 0.5, 0.9]])
    values = torch.tensor([[-1.0], [0.0], [0.5], [2.0], [3.0], [4.0], [NAN]])
    normalised = apply_cdf(values, knots, levels)[:, 0].tolist()
    assert normalised[:6] == pytest.approx([0.0, 0.1, 0.3, 0.7, 0.9, 1.0])
    assert math.isnan(normalised[6])


def test_tied_knots_map_a_tied_score_to_its_mid_rank():
    model = two_member_panel()
    assert model.normalise(torch.tensor([[4.5, 0.2]]))[0].tolist() == pytest.approx([0.5, 0.5])


def test_an_items_score_does_not_depend_on_its_batch():
    model = two_member_panel()
    items = torch.tensor([[2.0, 0.15], [6.0, 0.5], [9.0, 0.05]])
    together = model(features=items).scores
    alone = torch.cat([model(features=items[i : i + 1]).scores for i in range(3)])
    assert torch.equal(together, alone)


def test_the_weights_are_renormalised_over_the_members_present():
    model = two_member_panel()
    with torch.no_grad():
        model.weight_logits.copy_(torch.log(torch.tensor([0.25, 0.75])))
    both, one = model(features=torch.tensor([[4.5, 0.9], [4.5, NAN]])).scores.tolist()
    assert both == pytest.approx(0.25 * 0.5 + 0.75 * 0.9)
    assert one == pytest.approx(0.5)
    assert math.isnan(model(features=torch.tensor([[NAN, NAN]])).scores.item())


def test_a_mark_down_only_score_lowers_an_item_but_never_lifts_it_above_the_others(tmp_path):
    config = PanelConfig(members=[{"metric": "length", "dimensions": ["overall"]},
                                  {"metric": "similarity", "dimensions": ["similarity"]}],
                         quantile_count=5, mark_down_only=["length.overall"])
    model = PanelModel(config)
    model.set_cdfs([[1, 2, 3, 4, 5, 6, 7, 8], [0.1, 0.2, 0.2, 0.2, 0.9]])
    model.set_weights([1, 3])
    # CDF values: length 4.5 -> 0.5, 9 -> 1; similarity 0.2 -> 0.5, 0.9 -> 0.9
    low, high, alone = model(features=torch.tensor([[4.5, 0.9], [9.0, 0.2], [9.0, NAN]])).scores.tolist()
    assert low == pytest.approx(0.25 * 0.5 + 0.75 * 0.9)  # below the others' mean: it counts as it is
    assert high == pytest.approx(0.5)  # above it: it counts at the others' mean, 0.5, not at 1
    assert alone == pytest.approx(1.0)  # no other score present: nothing to hold it to
    plain = two_member_panel()
    plain.set_weights([1, 3])
    assert plain(features=torch.tensor([[9.0, 0.2]])).scores.item() == pytest.approx(0.25 + 0.75 * 0.5)
    model.save_pretrained(tmp_path)
    assert AutoModel.from_pretrained(tmp_path)(features=torch.tensor([[9.0, 0.2]])).scores.item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="are not among the panel's scores"):
        PanelConfig(members=config.members, mark_down_only=["dial-m.overall"])
    with pytest.raises(ValueError, match="leave at least one out"):
        PanelConfig(members=config.members, mark_down_only=config.features)


def test_the_panel_round_trips_through_automodel(tmp_path):
    model = two_member_panel()
    model.save_pretrained(tmp_path)
    loaded = AutoModel.from_pretrained(tmp_path)
    assert isinstance(loaded, PanelModel) and loaded.config.features == ["length.overall", "similarity.similarity"]
    assert all(torch.equal(value, loaded.state_dict()[key]) for key, value in model.state_dict().items())


def test_the_ranking_loss_is_bradley_terry_weighted_by_set():
    preferred, other = torch.tensor([0.6, 0.2]), torch.tensor([0.4, 0.3])
    weights = torch.tensor([1.0, 3.0])
    expected = (1 * math.log1p(math.exp(-2.0)) + 3 * math.log1p(math.exp(1.0))) / 4
    assert pairwise_ranking_loss(preferred, other, weights, 0.1).item() == pytest.approx(expected, rel=1e-6)


def test_pairs_are_drawn_within_each_set_and_every_set_weighs_the_same():
    small = RatedScores("small", [[0.0], [1.0], [2.0]], [1.0, 3.0, 3.0])
    large = RatedScores("large", [[float(i)] for i in range(30)], [float(i % 7) for i in range(30)])
    pairs = preference_pairs([small, large], pairs_per_set=50, seed=0)
    by_set = {name: [row for row in pairs if row["set"] == name] for name in ("small", "large")}
    assert len(by_set["small"]) == 2  # the two tied items make no pair
    assert len(by_set["large"]) == 50
    for rows in by_set.values():
        assert sum(row["weight"] for row in rows) == pytest.approx(1.0)
    ratings = {row[0]: rating for rated in (small, large) for row, rating in zip(rated.features, rated.ratings)}
    assert all(ratings[row["preferred"][0]] > ratings[row["other"][0]] for row in by_set["large"])


def test_the_correlation_weights_are_mme_crs_re_scaling():
    nan = float("nan")
    sets = [RatedScores("a", [[1, 5, 0], [2, 4, 0], [3, 3, 0], [4, 1, 0]], [1, 2, 3, 4]),
            RatedScores("b", [[1, nan, 2], [2, 1, 1], [3, 2, 3]], [1, 2, 3])]
    # first: Spearman 1 in both sets; second: -1 and 1 (its finite items only), a mean of 0; third: constant in a
    # (0), 0.5 in b
    assert correlation_weights(sets) == pytest.approx([1 / 1.25, NO_WEIGHT, 0.25 / 1.25])
    against = [RatedScores("c", [[1, 3], [2, 2], [3, 1]], [3, 2, 1])]
    assert correlation_weights(against) == pytest.approx([NO_WEIGHT, 1.0])
    assert correlation_weights([RatedScores("d", [[1, 1], [2, 2]], [2, 1])]) == [0.5, 0.5]  # none correlates


@pytest.fixture(scope="module")
def ratings_file(tmp_path_factory):
    """Replies rated by how many words they have and how much they share with the context: both members see it."""
    rows = []
    for index in range(48):  # 48 contexts: enough to hold out a share that tells before from after
        topic = ("music", "football", "cooking", "travel")[index % 4]
        context = [f"Hello, this is chat number {index}.", f"Do you like {topic}?"]
        words = ["I", "really", "like", "it", "a", "lot", "every", "day"][: 1 + index % 8]
        response = " ".join(words + ([topic] if index % 2 else []))
        rows.append({"context": context, "response": response, "score": len(words) + 3 * (index % 2)})
    path = tmp_path_factory.mktemp("panel") / "ratings.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def trained_panel(ratings_file, tmp_path_factory):
    output = tmp_path_factory.mktemp("panel-run") / "panel"
    assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", "--ratings",
                 str(ratings_file), "--held-out-share", "0", "--output-dir", str(output), "--epochs", "20",
                 "--batch-size", "64", "--learning-rate", "0.1", "--report-to", "none"]) == 0
    return output


def test_train_panel_fits_cdfs_and_weights_that_rank_the_ratings(trained_panel):
    record = json.loads((trained_panel / "training_record.json").read_text())
    assert list(record["trained_on"].values()) == [48]
    assert sum(record["weights"].values()) == pytest.approx(1.0)
    config = json.loads((trained_panel / "config.json").read_text())
    assert [member["metric"] for member in config["members"]] == ["length", "similarity"]
    assert config["members"][0]["identity"] is None  # the length floor has no weights
    assert len(config["members"][1]["identity"]) == 64  # MiniLM's content hash


@pytest.fixture
def member_loads(monkeypatch):
    """Per member load, in order: its name and how many members were alive then."""
    from hf_dialeval.metrics.panel import members, train

    live, loads = weakref.WeakSet(), []

    def tracked(name, *args, **kwargs):
        loads.append((name, len(live)))
        metric = load_metric(name, *args, **kwargs)
        live.add(metric)
        return metric

    monkeypatch.setattr(train, "load_metric", tracked)
    monkeypatch.setattr(members, "load_metric", tracked)
    return loads


@pytest.mark.parametrize("start", ["new", "continued"])
def test_train_panel_holds_one_member_at_a_time(start, trained_panel, ratings_file, tmp_path, member_loads):
    panel = (["--features", "length.overall", "similarity.similarity"] if start == "new"
             else ["--init-from", str(trained_panel)])
    assert main(["train", "panel", *panel, "--ratings", str(ratings_file), "--held-out-share", "0.25",
                 "--output-dir", str(tmp_path / "panel"), "--max-steps", "1", "--report-to", "none"]) == 0
    assert member_loads == [("length", 0), ("similarity", 0)]  # the first freed before the second loaded
    record = json.loads((tmp_path / "panel" / "training_record.json").read_text())
    assert sum(record["trained_on"].values()) + sum(record["validated_on"].values()) == 48


def test_the_panel_scores_with_one_member_loaded_at_a_time(trained_panel, member_loads):
    panel = load_metric("panel", str(trained_panel))
    contexts, responses = [["Do you like music?"], ["Where do you go?"]], ["I really like it a lot music", "ok"]
    first = panel.score_turns(contexts, responses).overall
    assert panel.score_turns(contexts, responses).overall == first
    # each loaded once to check it; then each call starts with the member still loaded and loads the other
    assert member_loads == [("length", 0), ("similarity", 0), ("length", 0), ("similarity", 0)]
    assert panel.signature(2, 0, 0)["members"]["similarity"]["metric"] == "similarity"


def test_the_trained_panel_scores_through_every_path(trained_panel, ratings_file, tmp_path):
    panel = load_metric("panel", checkpoint=str(trained_panel), device="cpu")
    contexts = [["Hi.", "Do you like music?"], ["Hi.", "Do you like cooking?"]]
    responses = ["I really like music a lot every day", "no"]
    output = panel.score_turns(contexts, responses)
    assert output.overall[0] > output.overall[1]
    assert set(output.scores) == {"length.overall", "similarity.similarity"}
    assert all(0.0 <= value <= 1.0 for value in output.overall)
    # a subset of the members: the weights renormalised over the one left
    length_only = load_metric("panel", checkpoint=str(trained_panel), device="cpu", members="length")
    alone = length_only.score_turns(contexts, responses)
    assert alone.overall == pytest.approx(output.scores["length.overall"])
    assert all(math.isnan(value) for value in alone.scores["similarity.similarity"])
    # the command line gives the same scores
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(json.dumps({"context": c, "response": r}) + "\n" for c, r in zip(contexts, responses)))
    assert main(["score", "--metric", "panel", "--checkpoint", str(trained_panel), "--input", str(source),
                 "--output", str(target)]) == 0
    assert [json.loads(line)["overall"] for line in target.read_text().splitlines()] == pytest.approx(output.overall)


def test_a_benchmark_scored_through_the_cache_matches_the_panel_and_reuses_its_members(trained_panel, tmp_path):
    import datasets

    panel = load_metric("panel", checkpoint=str(trained_panel), device="cpu")
    dataset = datasets.Dataset.from_list([
        {"context": ["Do you like music?"], "response": "Yes, music every day", "condition": None, "reference": None},
        {"context": ["Do you like cooking?"], "response": "", "condition": None, "reference": None},
        {"context": ["Hi"], "response": "Hello there, nice to meet you", "condition": None, "reference": None}])
    cache = ScoreCache(tmp_path)
    cached, hit = cache.scores(panel, dataset, "toy")
    assert not hit
    direct = panel.score_dataset(dataset)
    assert cached.overall == pytest.approx(direct.overall) and cached.overall[1] == 0.0  # no reply: the lowest
    assert sorted(p.parent.name for p in tmp_path.glob("*/*.json")) == ["length", "panel", "similarity"]
    assert cache.scores(panel.member_loaders["similarity"](batch_size=32), dataset, "toy")[1]  # the member's scores were kept


def test_a_checklist_loads_each_member_once_and_a_rerun_from_the_cache_loads_none(trained_panel, member_loads,
                                                                                  tmp_path):
    from hf_dialeval.evaluation.checklist import run_checklist

    topics = ["music", "football", "cooking", "travel"] * 3
    dialogues = [[f"Hello, this is chat {i}.", f"Do you like {topic}?", f"I like {topic} a lot, every day.",
                  "Why is that?", f"Because {topic} makes me happy."] for i, topic in enumerate(topics)]
    perturbations = ["generic", "random", "repeat", "long"]
    panel = load_metric("panel", str(trained_panel))
    rows = run_checklist(panel, dialogues, count=6, perturbations=perturbations, cache=ScoreCache(tmp_path))
    # each loaded once to check it; then each scores every perturbation's pairs, the one still loaded first
    assert member_loads == [("length", 0), ("similarity", 0), ("length", 0)]
    panel.release()
    again = run_checklist(load_metric("panel", str(trained_panel)), dialogues, count=6, perturbations=perturbations,
                          cache=ScoreCache(tmp_path))
    assert member_loads[3:] == [("length", 0), ("similarity", 0)]  # the checks alone: every score read back
    assert again == rows
    alone = run_checklist(panel, dialogues, count=6, perturbations=perturbations)  # no cache: set by set
    assert [row["wins"] for row in alone] == [row["wins"] for row in rows]
    assert all(row["n"] == 6 for row in rows) and rows[3]["wins"]["overall"]["win_rate"] < 0.5  # length rewards it


def test_filling_the_cache_leaves_a_set_it_refuses_to_the_scoring_that_names_the_mistake(trained_panel, tmp_path):
    import datasets

    from hf_dialeval.data.model import DialogueValidationError

    panel = load_metric("panel", checkpoint=str(trained_panel))
    good = datasets.Dataset.from_list([{"context": ["Hi"], "response": "Hello there", "condition": None,
                                        "reference": None}])
    no_context = datasets.Dataset.from_list([{"context": [], "response": "Hello", "condition": None,
                                              "reference": None}])
    cache = ScoreCache(tmp_path)
    cache.fill(panel, [(no_context, "bad"), (good, "good")])
    assert sorted(p.name.split("-")[0] for p in tmp_path.glob("*/*.json")) == ["good", "good"]  # each member's
    with pytest.raises(DialogueValidationError, match="item 0, field 'context'"):
        cache.scores(panel, no_context, "bad")


def test_a_dialogue_scores_the_mean_of_its_system_turns_scores(trained_panel):
    """What benchmarks/panel/run.py computes for a dialogue-level benchmark's held-out cell."""
    panel = load_metric("panel", checkpoint=str(trained_panel), device="cpu")
    dialogue = ["Hi, do you like music?", "Yes, I like music a lot every day.", "Which kind?", "",
                "And cooking?", "No."]
    output = panel.score_dialogues([dialogue], [["User", "System"] * 3])
    turns = panel.score_turns([dialogue[:1], dialogue[:3], dialogue[:5]], [dialogue[1], dialogue[3], dialogue[5]])
    assert turns.overall[1] == 0.0  # an empty reply scores the lowest
    assert output.overall == pytest.approx([sum(turns.overall) / 3])
    assert 0.0 < output.overall[0] < 1.0


def test_a_member_whose_weights_changed_is_refused(trained_panel, tmp_path):
    import shutil

    copy = tmp_path / "panel"
    shutil.copytree(trained_panel, copy)
    config = json.loads((copy / "config.json").read_text())
    config["members"][1]["identity"] = "0" * 64
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="similarity .* is not the model the panel was fitted with"):
        load_metric("panel", checkpoint=str(copy), device="cpu")


def test_unknown_members_and_features_are_one_line_errors(trained_panel, tmp_path, capsys):
    assert main(["score", "--metric", "panel", "--checkpoint", str(trained_panel), "--members", "dial-m",
                 "--input", str(tmp_path / "none.jsonl"), "--output", str(tmp_path / "o.jsonl")]) == 2
    assert main(["train", "panel", "--features", "length.nothing", "--benchmarks", "grade-convai2",
                 "--output-dir", str(tmp_path / "p")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2
    assert "--features length.nothing: length gives ['overall', 'length'], not 'nothing'" in errors[1]


def test_feature_weights_set_a_new_panels_weights(ratings_file, tmp_path, capsys):
    output = tmp_path / "weighted"
    assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", "--feature-weights", "2",
                 "1", "--combiner", "rank-mean", "--ratings", str(ratings_file), "--held-out-share", "0",
                 "--output-dir", str(output), "--report-to", "none"]) == 0
    weights = json.loads((output / "training_record.json").read_text())["weights"]
    assert weights == pytest.approx({"length.overall": 2 / 3, "similarity.similarity": 1 / 3})
    panel = load_metric("panel", str(output))
    out = panel.score_turns([["Do you like music?"]], ["I really like it a lot music"])
    normalised = [out.scores["length.overall"][0], out.scores["similarity.similarity"][0]]
    assert out.overall[0] == pytest.approx((2 * normalised[0] + normalised[1]) / 3, abs=1e-6)
    for wrong in (["--feature-weights", "1"], ["--feature-weights", "1", "0"]):
        assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", *wrong,
                     "--ratings", str(ratings_file), "--output-dir", str(tmp_path / "no")]) == 2
    assert main(["train", "panel", "--feature-weights", "1", "--ratings", str(ratings_file),
                 "--output-dir", str(tmp_path / "no")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert [line for line in errors if "--feature-weights" in line] == [
        "hf-dialeval: error: --feature-weights: 1 given for 2 --features; give one weight per feature",
        "hf-dialeval: error: --feature-weights must all be positive, not [1.0, 0.0]",
        "hf-dialeval: error: --feature-weights weighs --features: give --features too"]
    assert not (tmp_path / "no").exists()


def test_train_panel_marks_a_score_down_only(ratings_file, tmp_path, capsys):
    output = tmp_path / "down-only"
    assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", "--mark-down-only",
                 "length.overall", "--combiner", "rank-mean", "--ratings", str(ratings_file), "--held-out-share", "0",
                 "--output-dir", str(output), "--report-to", "none"]) == 0
    panel = load_metric("panel", str(output))
    assert panel.model.config.mark_down_only == ["length.overall"]
    out = panel.score_turns([["Do you like music?"]] * 2, ["I really like it a lot music", "no"])
    for index in range(2):
        length, similarity = out.scores["length.overall"][index], out.scores["similarity.similarity"][index]
        assert out.overall[index] == pytest.approx((min(length, similarity) + similarity) / 2, abs=1e-6)
    for wrong in (["--mark-down-only", "quantidce.overall"], ["--mark-down-only", "length.overall",
                                                            "similarity.similarity"]):
        assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", *wrong,
                     "--ratings", str(ratings_file), "--output-dir", str(tmp_path / "no")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-2:] == [
        "hf-dialeval: error: --mark-down-only: ['quantidce.overall'] are not among the panel's scores "
        "(length.overall similarity.similarity)",
        "hf-dialeval: error: --mark-down-only: it names every score of the panel, each counting at most at the others' "
        "mean: leave at least one out"]
    assert not (tmp_path / "no").exists()


def test_the_ranking_loss_starts_from_the_scores_correlations_with_the_ratings(trained_panel, ratings_file, tmp_path):
    items = [json.loads(line) for line in ratings_file.read_text().splitlines()]
    scores = [load_metric("length").score_turns([i["context"] for i in items], [i["response"] for i in items]).overall,
              load_metric("similarity").score_turns([i["context"] for i in items],
                                                    [i["response"] for i in items]).scores["similarity"]]
    expected = correlation_weights([RatedScores("ratings", [list(row) for row in zip(*scores)],
                                                [i["score"] for i in items])])
    starts = {}
    for start in ("correlation", "given"):
        assert main(["train", "panel", "--init-from", str(trained_panel), "--ratings", str(ratings_file),
                     "--held-out-share", "0", "--start-weights", start, "--output-dir", str(tmp_path / start),
                     "--max-steps", "1", "--report-to", "none"]) == 0
        starts[start] = json.loads((tmp_path / start / "training_record.json").read_text())["start_weights"]
    assert list(starts["correlation"].values()) == pytest.approx(expected, rel=1e-5)
    given = json.loads((trained_panel / "training_record.json").read_text())["weights"]
    assert starts["given"] == pytest.approx(given)  # the continued panel's weights
    assert main(["train", "panel", "--features", "length.overall", "similarity.similarity", "--feature-weights", "2",
                 "1", "--ratings", str(ratings_file), "--output-dir", str(tmp_path / "refused")]) == 2


def test_adapt_panel_refits_the_weights_on_the_users_ratings(trained_panel, ratings_file, tmp_path, data_dir, capsys):
    output = tmp_path / "adapted"
    assert main(["adapt", "panel", "--ratings", str(ratings_file), "--init-from", str(trained_panel),
                 "--output-dir", str(output), "--checklist-pairs", "5", "--held-out-share", "0.34",
                 "--data-dir", str(data_dir), "--epochs", "3"]) == 0
    written = capsys.readouterr().err
    assert "\r" not in written and "item/s" not in written, written  # stderr is no terminal: lines, not bars
    report = json.loads((output / "adaptation_report.json").read_text())
    assert report["metric"] == "panel"
    base, adapted = (json.loads((folder / "config.json").read_text()) for folder in (trained_panel, output))
    assert adapted["members"] == base["members"]  # the members and their CDFs kept: only the weights refitted
    base_model, adapted_model = (PanelModel.from_pretrained(folder) for folder in (trained_panel, output))
    assert torch.equal(base_model.knots, adapted_model.knots)
    assert not torch.equal(base_model.weight_logits, adapted_model.weight_logits)


@pytest.fixture(scope="module")
def dialogue_panel(ratings_file, data_dir, tmp_path_factory):
    """A panel whose dialogue score joins a member scoring whole dialogues (the similarity floor, as the shipped panel
    joins FineD-Eval), its CDFs fitted on 5 reference dialogues of each corpus."""
    output = tmp_path_factory.mktemp("panel-dialogue") / "panel"
    assert main(["train", "panel", "--features", "length.overall", "--dialogue-features", "similarity.similarity",
                 "--reference-dialogues", "5", "--data-dir", str(data_dir), "--ratings", str(ratings_file),
                 "--held-out-share", "0", "--combiner", "rank-mean", "--output-dir", str(output),
                 "--report-to", "none"]) == 0
    return output


def test_a_dialogue_member_joins_through_cdfs_of_the_reference_dialogues(dialogue_panel, data_dir):
    from hf_dialeval.metrics.panel.reference_dialogues import reference_dialogues

    config = json.loads((dialogue_panel / "config.json").read_text())
    assert [member["metric"] for member in config["dialogue_members"]] == ["similarity"]
    assert config["reference_dialogues"] == 10
    reference = [d for dialogues in reference_dialogues(data_dir, 5).values() for d in dialogues]
    assert config["reference_turns"] == sum(len(d) // 2 for d in reference)  # every system turn of each
    panel = load_metric("panel", str(dialogue_panel))
    similarity = load_metric("similarity")
    # the reference as the panel's members score it, apart: the mean of each dialogue's system turns' panel scores
    # (the length member's CDF values) and the similarity floor's dialogue scores
    turn_means = torch.tensor(panel.score_dialogues(reference).scores["length.overall"])
    similarities = torch.tensor(similarity.score_dialogues(reference).scores["similarity"])
    dialogues = [["Hi, do you like music?", "Yes, I like music a lot, jazz every day.", "Which kind?", "Jazz."],
                 ["Hi there.", "ok", "What do you do?", "ok"]]
    output = panel.score_dialogues(dialogues)
    expected = []
    for index, dialogue in enumerate(dialogues):
        similarity_of_it = similarity.score_dialogues([dialogue]).scores["similarity"][0]
        values = [output.scores["length.overall"][index], similarity_of_it]
        cdfs = [apply_cdf(torch.tensor([[value]]), *(part.unsqueeze(0) for part in fit_cdf_knots(column.tolist(), 257)))
                for value, column in zip(values, (turn_means, similarities))]
        expected.append(float(sum(cdfs) / 2))
        assert output.scores["similarity.similarity"][index] == pytest.approx(float(cdfs[1]), abs=1e-6)
    assert output.overall == pytest.approx(expected, abs=1e-6)
    assert output.overall[0] > output.overall[1]
    # a turn is no dialogue: the dialogue member's score does not apply
    assert math.isnan(panel.score_turns([dialogues[0][:1]], [dialogues[0][1]]).scores["similarity.similarity"][0])
    # without the dialogue member, a dialogue scores its turn mean's CDF value alone
    with pytest.raises(OptionError, match=r"--members similarity: give at least one of the panel's members that "
                                          r"score turns, \['length'\]"):
        load_metric("panel", str(dialogue_panel), members="similarity")
    alone = load_metric("panel", str(dialogue_panel), members="length").score_dialogues(dialogues)
    assert all(math.isnan(value) for value in alone.scores["similarity.similarity"])
    assert alone.overall[0] == pytest.approx(float(apply_cdf(
        torch.tensor([[output.scores["length.overall"][0]]]),
        *(part.unsqueeze(0) for part in fit_cdf_knots(turn_means.tolist(), 257)))), abs=1e-6)


def test_refitting_the_weights_keeps_the_dialogue_member_and_its_reference(dialogue_panel, ratings_file, tmp_path):
    assert main(["train", "panel", "--init-from", str(dialogue_panel), "--ratings", str(ratings_file),
                 "--held-out-share", "0", "--output-dir", str(tmp_path / "refit"), "--max-steps", "1",
                 "--report-to", "none"]) == 0
    base, refit = (PanelModel.from_pretrained(folder) for folder in (dialogue_panel, tmp_path / "refit"))
    assert refit.config.dialogue_members == base.config.dialogue_members
    for name in ("reference_turn_features", "reference_turn_dialogue", "reference_dialogue_features"):
        assert torch.equal(getattr(base, name), getattr(refit, name))


def test_dialogue_features_are_refused_where_they_cannot_apply(ratings_file, dialogue_panel, tmp_path, capsys):
    for wrong in (["--features", "length.overall", "--dialogue-features", "length.overall"],
                  ["--init-from", str(dialogue_panel), "--dialogue-features", "similarity.similarity"],
                  ["--dialogue-features", "fined-eval"]):
        assert main(["train", "panel", *wrong, "--ratings", str(ratings_file),
                     "--output-dir", str(tmp_path / "no")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "hf-dialeval: error: --dialogue-features: ['length'] already score turns (--features); a member scores "
        "either turns or whole dialogues",
        "hf-dialeval: error: --init-from keeps its panel's members: leave out --features, --dialogue-features, "
        "--mark-down-only and --member-checkpoints",
        "hf-dialeval: error: --dialogue-features takes METRIC.SCORE (e.g. quantidce.overall), not 'fined-eval'"]
    assert not (tmp_path / "no").exists()
