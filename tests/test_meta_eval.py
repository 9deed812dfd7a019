import json

import pytest
from scipy import stats

from hf_dialeval import load_benchmark, load_metric, meta_evaluate
from hf_dialeval.evaluation.meta_evaluation import format_markdown
from hf_dialeval.evaluation.plots import plot_scatter
from hf_dialeval.evaluation.statistics import compare_spearman, correlate
from hf_dialeval.registry import METRICS, MetricEntry, paper_results

METRIC = [0.1, 0.4, 0.35, 0.8, 0.7, 0.2, 0.9, 0.55]
HUMAN = [1.0, 2.0, 3.0, 4.0, 3.5, 1.5, None, 2.5]


def test_correlate_matches_scipy_and_skips_missing():
    result = correlate(METRIC, HUMAN)
    x, y = [m for m, h in zip(METRIC, HUMAN) if h is not None], [h for h in HUMAN if h is not None]
    assert result["n"] == 7
    assert result["pearson"] == pytest.approx(stats.pearsonr(x, y).statistic)
    assert result["pearson_p"] == pytest.approx(stats.pearsonr(x, y).pvalue)
    assert result["spearman"] == pytest.approx(stats.spearmanr(x, y).statistic)
    assert result["kendall"] == pytest.approx(stats.kendalltau(x, y).statistic)
    # By hand: ranks x = [1, 4, 3, 7, 6, 2, 5], y = [1, 3, 5, 7, 6, 2, 4]; sum d^2 = 6;
    # rho = 1 - 6 * 6 / (7 * 48) = 25/28.
    assert result["spearman"] == pytest.approx(25 / 28)


def test_bootstrap_interval_is_deterministic_and_brackets_the_estimate():
    first, second = correlate(METRIC, HUMAN), correlate(METRIC, HUMAN)
    assert first["spearman_ci95"] == second["spearman_ci95"]
    low, high = first["spearman_ci95"]
    assert low <= first["spearman"] <= high
    assert correlate(METRIC, HUMAN, seed=1)["spearman_ci95"] != first["spearman_ci95"]


def test_compare_spearman_is_the_paired_difference_with_an_interval():
    human = [1.0, 2.0, None, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    good = [0.1, 0.2, 9.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]     # same order as people
    worse = [0.1, 0.3, -9.0, 0.2, 0.4, 0.6, 0.5, 0.8, 0.7]   # three adjacent swaps
    result = compare_spearman(good, worse, human, n_resamples=200)
    kept = [i for i, h in enumerate(human) if h is not None]
    expected = 1.0 - stats.spearmanr([worse[i] for i in kept], [human[i] for i in kept]).statistic
    assert result["spearman_difference"] == pytest.approx(expected)
    assert result["n"] == 8 and result["items_scored_differently"] == 6
    assert result["ci95"][0] <= result["spearman_difference"] <= result["ci95"][1]
    same = compare_spearman(good, good, human, n_resamples=50)
    assert same["spearman_difference"] == 0.0 and same["ci95"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="metric scores"):
        compare_spearman(good, worse[:-1], human)


def test_correlate_rejects_bad_input():
    with pytest.raises(ValueError, match="non-finite"):
        correlate([0.1, float("nan"), 0.3], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 3"):
        correlate([0.1, 0.2, 0.3], [1.0, None, None])
    with pytest.raises(ValueError, match="3 metric scores for 2"):
        correlate([0.1, 0.2, 0.3], [1.0, 2.0])


def test_constant_scores_give_null_not_nan():
    result = correlate([0.5, 0.5, 0.5, 0.5], [1.0, 2.0, 3.0, 4.0])
    assert result["spearman"] is None
    json.dumps(result, allow_nan=False)


def test_length_floor_on_fed_dialogue(data_dir, tmp_path):
    dataset = load_benchmark("fed-dialogue", data_dir)
    result, output = meta_evaluate(load_metric("length"), dataset, "fed-dialogue")
    assert set(result) == {"metric", "checkpoint", "benchmark", "n", "truncated", "empty", "dimensions", "signature",
                           "score"}
    assert result["score"] == "overall"
    assert result["n"] == 125 and result["checkpoint"] == "default"
    assert result["truncated"] == 0 and result["empty"] == 0 and result["signature"]["items"] == 125
    overall = result["dimensions"]["Overall"]
    assert overall["n"] == 125
    assert overall["spearman"] == pytest.approx(0.233, abs=0.005)
    assert result["dimensions"]["Depth"]["spearman"] == pytest.approx(0.430, abs=0.005)
    assert result["dimensions"]["Error recovery"]["n"] == 124
    assert set(overall) == {"pearson", "pearson_p", "spearman", "spearman_p", "kendall", "kendall_p",
                            "spearman_ci95", "n"}
    written = plot_scatter(result, {"overall": output.overall, **output.scores}, dataset, tmp_path)
    assert len(written) == 11 and all(p.stat().st_size > 1000 for p in written)


#: A paper table, as a metric's registry entry holds one.
TOY_PAPER = {("toy", "toy-bench"): {"Overall": {"spearman": 0.66}}}
#: a toy entry's metric: the length floor's class, by import path
LENGTH_METRIC = "hf_dialeval.metrics.length.scoring:LengthMetric"


def test_markdown_shows_paper_numbers_when_registered(monkeypatch):
    result = {"metric": "toy", "checkpoint": "default", "benchmark": "toy-bench", "n": 8, "truncated": 0, "empty": 0,
              "dimensions": {"Overall": correlate(METRIC, HUMAN)}}
    assert "paper Spearman" not in format_markdown(result)
    monkeypatch.setitem(METRICS, "toy", MetricEntry("toy", "turn", "a toy metric", metric=LENGTH_METRIC,
                                                    paper_results=TOY_PAPER))
    table = format_markdown(result)
    assert "paper Spearman" in table and "+0.660" in table and "+0.893" in table


def test_paper_numbers_are_shown_beside_the_same_score_only(monkeypatch):
    """HolisticEval's Table 3 is of context coherence: beside its ``overall`` (the mean with fluency) it would compare
    two different scores."""
    monkeypatch.setitem(METRICS, "toy", MetricEntry("toy", "turn", "a toy metric", metric=LENGTH_METRIC,
                                                    paper_results={("toy", "toy-bench"): {
                                                        "Overall": {"spearman": 0.66, "score": "coherence"}}}))
    result = {"metric": "toy", "checkpoint": "default", "benchmark": "toy-bench", "n": 8, "truncated": 0, "empty": 0,
              "score": "overall", "dimensions": {"Overall": correlate(METRIC, HUMAN)}}
    assert paper_results("toy", "toy-bench") == {} and "paper Spearman" not in format_markdown(result)
    assert paper_results("toy", "toy-bench", "coherence") == {"Overall": {"spearman": 0.66, "score": "coherence"}}
    assert "+0.660" in format_markdown({**result, "score": "coherence"})
    assert paper_results("holistic-eval", "holistic-context") == {}
    assert paper_results("holistic-eval", "holistic-context", "context_coherence")["Coherence"]["spearman"] == 0.76
