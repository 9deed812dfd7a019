from __future__ import annotations

import datasets
import matplotlib.pyplot as plt
import numpy as np
import pytest

from hf_dialeval.evaluation.plots import (
    heatmap_figure,
    matching_dimension,
    plot_leaderboard_heatmap,
    plot_scatter,
    scatter_figure,
)
from hf_dialeval.evaluation.statistics import correlate

N = 30
DISCRETE = [1.0 + 0.5 * (i % 9) for i in range(N)]  # 1.0, 1.5, ... 5.0: 9 distinct values


def _items(seed: int = 1) -> tuple[datasets.Dataset, dict[str, list[float]]]:
    rng = np.random.default_rng(seed)
    coherent: list[float | None] = list(DISCRETE)
    coherent[4] = None
    likeable = [DISCRETE[(i * 7) % N] for i in range(N)]
    scores = {
        "overall": rng.normal(size=N).tolist(),
        "coherence": (np.array(DISCRETE) + rng.normal(scale=1.0, size=N)).tolist(),
        "likability": (np.array(likeable) + rng.normal(scale=2.0, size=N)).tolist(),
    }
    dataset = datasets.Dataset.from_dict({"Coherent": coherent, "Likeable": likeable, "Overall": DISCRETE})
    return dataset, scores


def _result(dataset: datasets.Dataset, scores: dict[str, list[float]], dimensions: list[str]) -> dict:
    return {"metric": "fined-eval", "benchmark": "data/fed dialogue.jsonl",
            "dimensions": {d: correlate(scores["overall"], dataset[d]) for d in dimensions}}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize(("metric_dimensions", "human", "expected"), [
    (["coherence", "likability", "topic_depth"], "Coherent", "coherence"),
    (["coherence", "likability", "topic_depth"], "Likeable", "likability"),
    (["coherence", "likability", "topic_depth"], "Depth", "topic_depth"),
    (["coherence", "likability", "topic_depth"], "Overall", None),
    (["coherence", "likability", "topic_depth"], "Error recovery", None),
    (["context_coherence", "fluency"], "Coherence", "context_coherence"),
    (["context_coherence", "fluency"], "Maintains Context", "context_coherence"),
    (["context_coherence", "fluency"], "Fluent", "fluency"),
    (["context_coherence", "fluency"], "fluency", "fluency"),
    (["context_coherence", "fluency", "consistency"], "Consistent", "consistency"),
    (["coherence"], "Relevant", "coherence"),
    (["length"], "Overall", None),
    (["length"], "Coherent", None),
    (["dial_m"], "Engagement", None),
    (["score"], "Understandable", None),
])
def test_matching_dimension(metric_dimensions: list[str], human: str, expected: str | None) -> None:
    assert matching_dimension(metric_dimensions, human) == expected


def test_matching_dimension_needs_a_whole_word_suffix() -> None:
    # "incoherence" does not end with "_coherence": it must not be read as measuring coherence.
    assert matching_dimension(["incoherence"], "Coherent") is None


def _scatter(figure) -> tuple[np.ndarray, np.ndarray]:
    (axes, *_) = figure.axes
    (collection,) = axes.collections
    offsets = np.asarray(collection.get_offsets())
    return offsets[:, 0], offsets[:, 1]


def test_scatter_plots_the_matched_dimension_with_its_own_spearman() -> None:
    dataset, scores = _items()
    result = _result(dataset, scores, ["Coherent"])
    human = dataset["Coherent"]
    figure = scatter_figure(result, scores, human, "Coherent")

    kept = [i for i, h in enumerate(human) if h is not None]
    x_raw = np.array([human[i] for i in kept])
    x, y = _scatter(figure)
    np.testing.assert_array_equal(y, [scores["coherence"][i] for i in kept])
    gap = 0.5
    assert not np.array_equal(x, x_raw)
    assert np.all(np.abs(x - x_raw) < 0.4 * gap)

    expected = correlate(scores["coherence"], human)
    overall = result["dimensions"]["Coherent"]["spearman"]
    assert f"{expected['spearman']:+.3f}" != f"{overall:+.3f}"  # else the title check below proves nothing
    (axes, *_) = figure.axes
    low, high = expected["spearman_ci95"]
    assert axes.get_title() == (f"data/fed dialogue.jsonl / Coherent: ρ = {expected['spearman']:+.3f} "
                                f"[{low:+.2f}, {high:+.2f}] (n = {len(kept)})")
    assert axes.get_xlabel() == "mean human rating: Coherent (jittered)"
    assert axes.get_ylabel() == "fined-eval coherence"

    (line,) = axes.lines
    line_x, line_y = line.get_data()
    slope, intercept = np.polyfit(x_raw, y, 1)
    assert (line_y[1] - line_y[0]) / (line_x[1] - line_x[0]) == pytest.approx(slope)
    assert list(line_x) == [x_raw.min(), x_raw.max()]


def test_scatter_jitter_is_seeded() -> None:
    dataset, scores = _items()
    result = _result(dataset, scores, ["Likeable"])
    first, _ = _scatter(scatter_figure(result, scores, dataset["Likeable"], "Likeable", seed=3))
    again, _ = _scatter(scatter_figure(result, scores, dataset["Likeable"], "Likeable", seed=3))
    other, _ = _scatter(scatter_figure(result, scores, dataset["Likeable"], "Likeable", seed=4))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_scatter_falls_back_to_overall_and_does_not_jitter_continuous_ratings() -> None:
    rng = np.random.default_rng(2)
    human = rng.uniform(1, 5, size=N).round(3).tolist()  # far more than 12 distinct values
    scores = {"overall": rng.normal(size=N).tolist(), "coherence": rng.normal(size=N).tolist()}
    dataset = datasets.Dataset.from_dict({"Overall": human})
    result = _result(dataset, scores, ["Overall"])
    figure = scatter_figure(result, scores, human, "Overall")

    x, y = _scatter(figure)
    np.testing.assert_array_equal(x, human)
    np.testing.assert_array_equal(y, scores["overall"])
    (axes, *_) = figure.axes
    r = result["dimensions"]["Overall"]
    assert f"ρ = {r['spearman']:+.3f} [" in axes.get_title()
    assert axes.get_xlabel() == "mean human rating: Overall"
    assert axes.get_ylabel() == "fined-eval overall"


@pytest.mark.filterwarnings("ignore::Warning")  # scipy warns about the constant input on purpose here
def test_scatter_title_says_n_a_for_constant_scores() -> None:
    dataset, _ = _items()
    scores = {"overall": [0.5] * N}
    result = _result(dataset, scores, ["Likeable"])
    (axes, *_) = scatter_figure(result, scores, dataset["Likeable"], "Likeable").axes
    assert axes.get_title() == f"data/fed dialogue.jsonl / Likeable: ρ = n/a (n = {N})"


def test_plot_scatter_writes_one_png_per_dimension(tmp_path) -> None:
    dataset, scores = _items()
    result = _result(dataset, scores, ["Coherent", "Likeable", "Overall"])
    paths = plot_scatter(result, scores, dataset, tmp_path / "plots")
    assert [p.name for p in paths] == ["fined-eval_fed_dialogue.jsonl_Coherent.png",
                                       "fined-eval_fed_dialogue.jsonl_Likeable.png",
                                       "fined-eval_fed_dialogue.jsonl_Overall.png"]
    for path in paths:
        assert path.parent == tmp_path / "plots"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert path.stat().st_size > 1000
    assert plt.get_fignums() == []


def _cell(spearman: float | None, best: bool = False, tied: bool = False) -> dict:
    return {"spearman": spearman, "ci95": None if spearman is None else [spearman - 0.1, spearman + 0.1],
            "n": 100, "best": best, "tied_with_best": tied, "paper": None}


LEADERBOARD = {
    "metrics": ["fined-eval", "holistic-eval", "length"],
    "benchmarks": [{"name": "fed-dialogue", "dimension": "Overall"}, {"name": "usr-topicalchat", "dimension": "Overall"}],
    "cells": {
        "fined-eval": {"fed-dialogue": _cell(0.41, best=True), "usr-topicalchat": _cell(0.2, tied=True)},
        "holistic-eval": {"fed-dialogue": _cell(0.38, tied=True), "usr-topicalchat": _cell(0.55, best=True)},
        "length": {"fed-dialogue": _cell(-0.62)},
    },
}


def _texts(figure) -> dict[tuple[int, int], object]:
    axes = figure.axes[0]
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t for t in axes.texts}


def test_heatmap_annotates_cells_marks_best_and_ties_and_leaves_missing_cells_blank() -> None:
    figure = heatmap_figure(LEADERBOARD)
    texts = _texts(figure)
    assert {k: t.get_text() for k, t in texts.items()} == {
        (0, 0): "0.41", (0, 1): "0.20*", (1, 0): "0.38*", (1, 1): "0.55", (2, 0): "-0.62"}
    assert (2, 1) not in texts  # length cannot score usr-topicalchat: no text
    bold = {k for k, t in texts.items() if t.get_fontweight() == "bold"}
    assert bold == {(0, 0), (1, 1)}
    # Dark cells (|ρ| > 0.5 on RdBu) get white text, pale ones black.
    assert texts[(2, 0)].get_color() == "white" and texts[(0, 0)].get_color() == "black"

    axes = figure.axes[0]
    values = axes.images[0].get_array()
    assert np.ma.is_masked(values[2, 1]) and values[0, 0] == pytest.approx(0.41)
    assert axes.images[0].get_clim() == (-1.0, 1.0)
    assert [t.get_text() for t in axes.get_xticklabels()] == ["fed-dialogue\n(Overall)", "usr-topicalchat\n(Overall)"]
    assert [t.get_text() for t in axes.get_yticklabels()] == LEADERBOARD["metrics"]
    assert len(figure.axes) == 2  # the heatmap and its colorbar
    assert any("paired permutation test" in t.get_text() for t in figure.texts)


def test_plot_leaderboard_heatmap_writes_the_png(tmp_path) -> None:
    path = plot_leaderboard_heatmap(LEADERBOARD, tmp_path / "new" / "leaderboard.png")
    assert path == tmp_path / "new" / "leaderboard.png"
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert plt.get_fignums() == []
