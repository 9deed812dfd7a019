"""The meta-evaluation statistics of :mod:`hf_dialeval.evaluation.statistics` against hand-computed values.

Every expected number below is derived by hand from the published definitions (Deutsch et al. 2021 for the levels
and resampling units, Williams 1959 / Graham & Baldwin 2014 for the Williams test, Deutsch et al. 2023 for pairwise
accuracy with tie calibration); the arithmetic is written in the comments. The inputs are tiny so the file runs in
seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from hf_dialeval.evaluation.statistics import (
    MIN_GROUP_SIZE,
    MIN_SYSTEMS,
    RatedItems,
    bootstrap_difference,
    bootstrap_interval,
    default_resampling,
    level_correlation,
    pairwise_accuracy,
    permutation_test,
    resample,
    tie_calibrated_accuracy,
    williams_compare,
    williams_test,
)


def test_constants():
    # two candidates of one context are always ordered ±1, so a context needs 3; a system-level correlation over
    # 2 systems is always ±1, so it needs 3
    assert MIN_GROUP_SIZE == 3
    assert MIN_SYSTEMS == 3


# ---------------------------------------------------------------------------------------------------------------
# 1. Levels
# ---------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("method, reference", [
    ("pearson", stats.pearsonr), ("spearman", stats.spearmanr), ("kendall", stats.kendalltau)])
def test_item_level_is_scipys_coefficient(method, reference):
    metric = np.array([0.3, 0.1, 0.7, 0.7, 0.2, 0.9, 0.4])  # a tie in the metric
    human = np.array([2.0, 1.0, 4.0, 3.0, 1.0, 5.0, 3.0])  # ties in the human scores
    expected = reference(metric, human).statistic
    assert level_correlation("item", metric, human, method=method) == pytest.approx(expected, abs=1e-12)
    assert RatedItems.of(list(human), list(metric)).correlation("item", method=method) == pytest.approx(
        expected, abs=1e-12)


def test_item_level_is_nan_for_a_constant_side():
    assert math.isnan(level_correlation("item", np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])))
    assert math.isnan(level_correlation("item", np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])))


# 4 systems x 2 items, the items of a system not next to each other:
#   system A: metric 0.1, 0.3 -> mean 0.2;  human 1, 2 -> mean 1.5
#   system B: metric 0.4, 0.6 -> mean 0.5;  human 2, 3 -> mean 2.5
#   system C: metric 0.2, 0.6 -> mean 0.4;  human 3, 4 -> mean 3.5
#   system D: metric 0.8, 1.0 -> mean 0.9;  human 4, 5 -> mean 4.5
SYSTEM_LABELS = ["A", "B", "C", "D", "A", "B", "C", "D"]
SYSTEM_METRIC = [0.1, 0.4, 0.2, 0.8, 0.3, 0.6, 0.6, 1.0]
SYSTEM_HUMAN = [1.0, 2.0, 3.0, 4.0, 2.0, 3.0, 4.0, 5.0]


def test_system_level_by_hand():
    items = RatedItems.of(SYSTEM_HUMAN, SYSTEM_METRIC, systems=SYSTEM_LABELS)
    # means: metric m = [0.2, 0.5, 0.4, 0.9], human h = [1.5, 2.5, 3.5, 4.5]
    # Spearman: ranks of m = [1, 3, 2, 4], of h = [1, 2, 3, 4]; d = [0, 1, -1, 0], sum d^2 = 2;
    #   rho = 1 - 6 * 2 / (4 * (16 - 1)) = 1 - 12/60 = 0.8
    assert items.correlation("system", method="spearman") == pytest.approx(0.8)
    # Pearson: mean(m) = 2.0 / 4 = 0.5, deviations [-0.3, 0, -0.1, 0.4]; mean(h) = 3, deviations [-1.5, -0.5, 0.5, 1.5]
    #   sum xy = 0.45 + 0 - 0.05 + 0.6 = 1.0; sum x^2 = 0.09 + 0 + 0.01 + 0.16 = 0.26; sum y^2 = 2.25+0.25+0.25+2.25 = 5
    #   r = 1.0 / sqrt(0.26 * 5) = 1 / sqrt(1.3) = 0.877058...
    assert items.correlation("system", method="pearson") == pytest.approx(1 / math.sqrt(1.3))
    assert items.correlation("system", method="pearson") == pytest.approx(0.877058, abs=1e-6)
    # Kendall: pairs of m against increasing h: (0.2,0.5)+ (0.2,0.4)+ (0.2,0.9)+ (0.5,0.4)- (0.5,0.9)+ (0.4,0.9)+
    #   C = 5, D = 1, no ties: tau = (5 - 1) / 6 = 2/3
    assert items.correlation("system", method="kendall") == pytest.approx(2 / 3)


def test_system_level_needs_min_systems():
    # 2 systems: the system means are two points, always correlated ±1 -> undefined (nan)
    metric = np.array([0.1, 0.2, 0.5, 0.9])
    human = np.array([1.0, 2.0, 3.0, 5.0])
    assert math.isnan(level_correlation("system", metric, human, systems=np.array([0, 0, 1, 1])))
    # 3 systems are enough: metric [0.1, 0.2, 0.5, 0.9, 1.0], human [1, 2, 3, 5, 6], systems [0, 0, 1, 2, 2]
    #   means m = [0.15, 0.5, 0.95], h = [1.5, 3, 5.5]: both increasing -> Spearman 1
    metric3, human3 = np.append(metric, 1.0), np.append(human, 6.0)
    systems3 = np.array([0, 0, 1, 2, 2])
    assert level_correlation("system", metric3, human3, systems=systems3) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="system"):
        level_correlation("system", metric, human)
    with pytest.raises(ValueError, match="level"):
        level_correlation("document", metric, human)


# Grouped level. Contexts (items interleaved, labels not in appearance order):
#   c1 (3 items): metric [0.1, 0.4, 0.2], human [1, 3, 2]
#   c2 (3 items): metric [0.4, 0.2, 0.1], human [2, 2, 1]    (a tie in the human scores)
#   c3 (2 items): metric [0.9, 0.1], human [1, 2]            (too small: ignored; it would add -1)
#   c4 (3 items): metric [0.5, 0.6, 0.7], human [3, 3, 3]    (constant human scores: ignored)
#   c5 (3 items): metric [0.5, 0.5, 0.5], human [1, 2, 3]    (constant metric: ignored)
GROUPED = [  # (context, metric, human)
    ("c2", 0.4, 2), ("c1", 0.1, 1), ("c4", 0.5, 3), ("c3", 0.9, 1), ("c5", 0.5, 1),
    ("c1", 0.4, 3), ("c2", 0.2, 2), ("c4", 0.6, 3), ("c5", 0.5, 2), ("c3", 0.1, 2),
    ("c2", 0.1, 1), ("c1", 0.2, 2), ("c4", 0.7, 3), ("c5", 0.5, 3),
]


def _grouped_items() -> RatedItems:
    contexts, metric, human = zip(*GROUPED)
    return RatedItems.of(list(human), list(metric), contexts=list(contexts))


def test_grouped_level_spearman_by_hand():
    # c1: ranks of metric [1, 3, 2], of human [1, 3, 2] -> rho = 1
    # c2: ranks of metric [3, 2, 1]; human [2, 2, 1] -> average ranks [2.5, 2.5, 1]
    #   deviations from the mean rank 2: x = [1, 0, -1], y = [0.5, 0.5, -1]
    #   sum xy = 0.5 + 0 + 1 = 1.5, sum x^2 = 2, sum y^2 = 0.25 + 0.25 + 1 = 1.5
    #   rho = 1.5 / sqrt(2 * 1.5) = 1.5 / sqrt(3) = sqrt(3)/2 = 0.866025...
    # mean over the usable contexts c1, c2: (1 + sqrt(3)/2) / 2 = 0.933013...
    assert _grouped_items().correlation("grouped", method="spearman") == pytest.approx((1 + math.sqrt(3) / 2) / 2)


def test_grouped_level_pearson_by_hand():
    # c1: metric x10 = [1, 4, 2], mean 7/3; use x30 = [3, 12, 6], mean 7, deviations [-4, 5, -1]
    #   human [1, 3, 2], deviations [-1, 1, 0]
    #   sum xy = 4 + 5 + 0 = 9, sum x^2 = 16 + 25 + 1 = 42, sum y^2 = 2 -> r = 9 / sqrt(84) = 0.981981...
    # c2: metric x10 = [4, 2, 1], mean 7/3, deviations [5/3, -1/3, -4/3]
    #   human [2, 2, 1], mean 5/3, deviations [1/3, 1/3, -2/3]
    #   sum xy = 5/9 - 1/9 + 8/9 = 4/3, sum x^2 = (25 + 1 + 16)/9 = 14/3, sum y^2 = (1 + 1 + 4)/9 = 2/3
    #   r = (4/3) / sqrt(28/9) = 4 / sqrt(28) = 2 / sqrt(7) = 0.755929...
    # mean: (0.981981 + 0.755929) / 2 = 0.868955...
    expected = (9 / math.sqrt(84) + 2 / math.sqrt(7)) / 2
    assert expected == pytest.approx(0.868955, abs=1e-6)
    assert _grouped_items().correlation("grouped", method="pearson") == pytest.approx(expected)


def test_grouped_level_kendall_by_hand():
    # c1: metric [0.1, 0.4, 0.2] vs human [1, 3, 2]: all 3 pairs concordant -> tau = 1
    # c2: metric [0.4, 0.2, 0.1] vs human [2, 2, 1]:
    #   (1,2): metric ordered, human tied -> tie in y only; (1,3), (2,3): concordant
    #   tau_b = (C - D) / sqrt((n0 - n_x)(n0 - n_y)) = (2 - 0) / sqrt((3 - 0)(3 - 1)) = 2 / sqrt(6) = 0.816497...
    # mean: (1 + 2/sqrt(6)) / 2 = 0.908248...
    assert _grouped_items().correlation("grouped", method="kendall") == pytest.approx((1 + 2 / math.sqrt(6)) / 2)


def test_grouped_spearman_ranks_ties_within_each_group_only():
    # The same values appear in both groups; ranks must be taken inside each context.
    #   g1: metric [0.2, 0.2, 0.5] -> ranks [1.5, 1.5, 3]; human [1, 2, 3] -> ranks [1, 2, 3]
    #       x = [-0.5, -0.5, 1], y = [-1, 0, 1]: sum xy = 0.5 + 0 + 1 = 1.5, sum x^2 = 1.5, sum y^2 = 2
    #       rho = 1.5 / sqrt(3) = sqrt(3)/2
    #   g2: metric [0.5, 0.2, 0.3] -> ranks [3, 1, 2]; human [3, 3, 1] -> ranks [2.5, 2.5, 1]
    #       x = [1, -1, 0], y = [0.5, 0.5, -1]: sum xy = 0.5 - 0.5 + 0 = 0 -> rho = 0
    #   mean: sqrt(3)/4 = 0.433013...
    metric = np.array([0.2, 0.5, 0.2, 0.2, 0.5, 0.3])
    human = np.array([1.0, 3.0, 2.0, 3.0, 3.0, 1.0])
    contexts = np.array([0, 1, 0, 1, 0, 1])
    assert level_correlation("grouped", metric, human, contexts=contexts) == pytest.approx(math.sqrt(3) / 4)


def test_grouped_level_undefined_and_errors():
    # every context has fewer than MIN_GROUP_SIZE candidates -> nan
    metric, human = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 4.0, 3.0])
    assert math.isnan(level_correlation("grouped", metric, human, contexts=np.array([0, 0, 1, 1])))
    with pytest.raises(ValueError, match="context"):
        level_correlation("grouped", metric, human)


def _partition(codes) -> set[frozenset[int]]:
    """The items (by position) that share a code, whatever the codes' values."""
    groups: dict[int, set[int]] = {}
    for position, code in enumerate(np.asarray(codes).tolist()):
        groups.setdefault(code, set()).add(position)
    return {frozenset(g) for g in groups.values()}


def test_rated_items_of_drops_unrated_items_with_their_labels():
    items = RatedItems.of([1.0, None, 3.0, 4.0, None], [0.1, 0.2, 0.3, 0.4, 0.5], [5.0, 4.0, 3.0, 2.0, 1.0],
                          systems=["s2", "s1", "s2", "s3", "s1"], contexts=["x", "y", "y", "x", "z"])
    assert len(items) == 3
    np.testing.assert_array_equal(items.human, [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(items.metrics[0], [0.1, 0.3, 0.4])
    np.testing.assert_array_equal(items.metrics[1], [5.0, 3.0, 2.0])
    # kept items: (s2, x), (s2, y), (s3, x)
    assert _partition(items.systems) == {frozenset({0, 1}), frozenset({2})}
    assert _partition(items.contexts) == {frozenset({0, 2}), frozenset({1})}
    assert items.systems.dtype.kind in "iu" and items.contexts.dtype.kind in "iu"


def test_rated_items_of_rejects_bad_input():
    with pytest.raises(ValueError, match="2 metric scores for 3 human scores"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="non-finite"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, float("nan"), 0.3])
    with pytest.raises(ValueError, match="non-finite"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], [0.1, float("inf"), 0.3])
    with pytest.raises(ValueError, match="no system"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], systems=["a", None, "b"])
    with pytest.raises(ValueError, match="no context"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], contexts=["a", "b", None])
    with pytest.raises(ValueError, match="2 systems for 3 items"):
        RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], systems=["a", "b"])


def test_levels_follow_the_design():
    human, metric = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]
    assert RatedItems.of(human, metric).levels() == ["item"]
    # 3 systems (2 items each) -> system level; every context unique -> no grouped level
    three_systems = RatedItems.of(human, metric, systems=list("aabbcc"), contexts=list("uvwxyz"))
    assert three_systems.levels() == ["item", "system"]
    # 2 systems only -> no system level; two contexts with 3 candidates -> grouped level
    two_systems = RatedItems.of(human, metric, systems=list("ababab"), contexts=list("pppqqq"))
    assert two_systems.levels() == ["item", "grouped"]
    # one context with 3 candidates only: grouping would be the item level again -> no grouped level
    assert RatedItems.of(human, metric, contexts=list("pppqqr")).levels() == ["item"]
    both = RatedItems.of(human, metric, systems=list("abcabc"), contexts=list("pppqqq"))
    assert both.levels() == ["item", "system", "grouped"]
    # dropping the unrated items of system c leaves 2 systems -> no system level, and the level is nan
    dropped = RatedItems.of([1.0, 2.0, 3.0, 4.0, None, None], metric, systems=list("aabbcc"))
    assert dropped.levels() == ["item"]
    assert math.isnan(dropped.correlation("system"))


# ---------------------------------------------------------------------------------------------------------------
# 2. Resampling
# ---------------------------------------------------------------------------------------------------------------

# 2 systems x 3 contexts, one item per cell; the human score identifies the item:
#   item i: system i // 3, context i % 3, human score i
def _design() -> RatedItems:
    return RatedItems.of([float(i) for i in range(6)], [0.5 * i for i in range(6)],
                         systems=[f"s{i // 3}" for i in range(6)], contexts=[f"c{i % 3}" for i in range(6)])


def _origin(sample: RatedItems) -> np.ndarray:
    return sample.human.astype(int)  # the original item of each resampled item


def test_resample_items_keeps_size_and_labels():
    items = _design()
    for seed in range(5):
        sample = resample(items, "items", np.random.default_rng(seed))
        assert len(sample) == len(items)
        origin = _origin(sample)
        np.testing.assert_array_equal(sample.metrics[0], 0.5 * origin)
        np.testing.assert_array_equal(sample.systems, items.systems[origin])
        np.testing.assert_array_equal(sample.contexts, items.contexts[origin])


def test_resample_systems_draws_whole_systems_and_recodes_copies():
    items, duplicated = _design(), 0
    for seed in range(20):
        sample = resample(items, "systems", np.random.default_rng(seed))
        origin = _origin(sample)
        assert len(sample) == 6  # 2 drawn systems x 3 items each
        # contexts keep their codes
        np.testing.assert_array_equal(sample.contexts, items.contexts[origin])
        codes = np.unique(sample.systems)
        assert len(codes) == 2  # one code per draw, even when a system is drawn twice
        drawn = []
        for code in codes:
            members = origin[sample.systems == code]
            originals = set(items.systems[members].tolist())
            assert len(originals) == 1  # a code holds one original system ...
            system = originals.pop()
            assert sorted(members.tolist()) == [3 * system + k for k in range(3)]  # ... and all of its items
            drawn.append(members.min())
        duplicated += drawn[0] == drawn[1]
    assert 0 < duplicated < 20  # some seeds drew one system twice, some drew both


def test_resample_inputs_draws_whole_contexts_and_recodes_copies():
    items, duplicated = _design(), 0
    for seed in range(20):
        sample = resample(items, "inputs", np.random.default_rng(seed))
        origin = _origin(sample)
        assert len(sample) == 6  # 3 drawn contexts x 2 items each
        np.testing.assert_array_equal(sample.systems, items.systems[origin])
        codes = np.unique(sample.contexts)
        assert len(codes) == 3
        drawn = []
        for code in codes:
            members = origin[sample.contexts == code]
            originals = set(items.contexts[members].tolist())
            assert len(originals) == 1
            context = originals.pop()
            assert sorted(members.tolist()) == [context, context + 3]
            drawn.append(context)
        duplicated += len(set(drawn)) < 3
    assert duplicated > 0


def test_resample_both_returns_the_cross_of_drawn_systems_and_contexts():
    # an unbalanced design: cell (s0, c1) has 2 items, cell (s1, c2) none
    labels = [("s0", "c0"), ("s0", "c1"), ("s0", "c1"), ("s0", "c2"), ("s1", "c0"), ("s1", "c1")]
    items = RatedItems.of([float(i) for i in range(6)], [0.1 * i for i in range(6)],
                          systems=[s for s, _ in labels], contexts=[c for _, c in labels])
    cell_size = {(0, 0): 1, (0, 1): 2, (0, 2): 1, (1, 0): 1, (1, 1): 1, (1, 2): 0}
    for seed in range(10):
        sample = resample(items, "both", np.random.default_rng(seed))
        # the same draws, made here: systems first, then contexts, with replacement
        rng = np.random.default_rng(seed)
        drawn_systems, drawn_contexts = rng.choice([0, 1], 2), rng.choice([0, 1, 2], 3)
        expected = sum(cell_size[(int(s), int(c))] for s in drawn_systems for c in drawn_contexts)
        assert len(sample) == expected
        origin = _origin(sample)
        for item, s, c in zip(origin, sample.systems, sample.contexts):
            # the item's original system and context are the ones drawn at positions s and c
            assert items.systems[item] == drawn_systems[s]
            assert items.contexts[item] == drawn_contexts[c]
        # and every item of every drawn (system, context) cell is there once per pair of draws
        for s, system in enumerate(drawn_systems):
            for c, context in enumerate(drawn_contexts):
                got = origin[(sample.systems == s) & (sample.contexts == c)]
                want = np.flatnonzero((items.systems == system) & (items.contexts == context))
                assert sorted(got.tolist()) == want.tolist()


def test_resample_rejects_unknown_units_and_missing_labels():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown resampling unit"):
        resample(_design(), "documents", rng)
    bare = RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="system"):
        resample(bare, "systems", rng)
    with pytest.raises(ValueError, match="context"):
        resample(bare, "inputs", rng)
    with pytest.raises(ValueError):
        resample(RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.2, 0.3], systems=["a", "b", "c"]), "both", rng)


def test_default_resampling():
    human, metric = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.3, 0.2, 0.5, 0.4, 0.6]
    crossed = RatedItems.of(human, metric, systems=list("abcabc"), contexts=list("ppqqrr"))
    unique_contexts = RatedItems.of(human, metric, systems=list("abcabc"), contexts=list("uvwxyz"))
    no_contexts = RatedItems.of(human, metric, systems=list("abcabc"))
    assert default_resampling("item", crossed) == "items"
    assert default_resampling("grouped", crossed) == "inputs"
    assert default_resampling("system", crossed) == "both"
    assert default_resampling("system", unique_contexts) == "systems"
    assert default_resampling("system", no_contexts) == "systems"


def test_bootstrap_interval_is_deterministic_and_covers_the_estimate():
    rng = np.random.default_rng(7)
    human = rng.normal(size=40)
    metric = human + 0.5 * rng.normal(size=40)
    items = RatedItems.of(list(human), list(metric))
    first = bootstrap_interval(items, "item", n_resamples=200, seed=3)
    assert first == bootstrap_interval(items, "item", n_resamples=200, seed=3)
    assert first["resampling"] == "items" and first["resamples"] == 200
    low, high = first["ci95"]
    estimate = items.correlation("item")
    assert low < estimate < high
    assert 0 < low and high < 1
    assert bootstrap_interval(items, "item", n_resamples=200, seed=4)["ci95"] != first["ci95"]


def test_bootstrap_interval_of_a_perfect_correlation_is_one():
    # the metric is increasing in the human score: every resample with 2 distinct items has Spearman 1
    items = RatedItems.of([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.2, 0.4, 0.5, 0.8, 0.9],
                          systems=list("abcabc"), contexts=list("ppqqrr"))
    result = bootstrap_interval(items, "item", n_resamples=100)
    assert result["ci95"] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert 0 < result["resamples"] <= 100


def test_bootstrap_difference_of_identical_metrics_is_zero():
    items = RatedItems.of([1.0, 3.0, 2.0, 5.0, 4.0, 6.0], [0.1, 0.2, 0.4, 0.5, 0.8, 0.9],
                          [0.1, 0.2, 0.4, 0.5, 0.8, 0.9])
    result = bootstrap_difference(items, "item", n_resamples=50)
    assert result["ci95"] == [0.0, 0.0]


def test_bootstrap_both_on_an_incomplete_design_does_not_crash():
    # 3 systems, 3 contexts, each context answered by 2 of the systems: c1 by A, B; c2 by B, C; c3 by A, C.
    # Contexts repeat, so default_resampling picks "both"; drawing systems [A, A, A] and contexts [c2, c2, c2]
    # (probability (1/27) * (1/27) per system/context pattern of that kind) selects no item at all.
    items = RatedItems.of([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.3, 0.2, 0.5, 0.4, 0.6],
                          systems=["A", "B", "B", "C", "A", "C"], contexts=["c1", "c1", "c2", "c2", "c3", "c3"])
    assert default_resampling("system", items) == "both"
    result = bootstrap_interval(items, "system", n_resamples=200)
    assert result["resampling"] == "both"
    assert 0 < result["resamples"] < 200


# ---------------------------------------------------------------------------------------------------------------
# 3. Permutation test
# ---------------------------------------------------------------------------------------------------------------

# Standardised values (mean 0, population standard deviation 1): Z = [-1.4, -0.2, 0.2, 1.4]
#   mean = 0; variance = (1.96 + 0.04 + 0.04 + 1.96) / 4 = 4 / 4 = 1
Z = np.array([-1.4, -0.2, 0.2, 1.4])
HUMAN4 = [1.0, 2.0, 3.0, 4.0]


def test_permutation_test_exact_with_a_reversed_metric():
    # metric 0 = Z (Spearman 1 with the human scores), metric 1 = -Z (Spearman -1). Both already standardised.
    # A swap set S gives a_i = -Z_i on S and Z_i elsewhere, and b = -a, so r(b) = -r(a) and Δ = 2 r(a).
    # Observed (S empty): Δ = 1 - (-1) = 2.
    # |Δ| >= 2 needs r(a) = ±1, i.e. a strictly monotone in the item order:
    #   increasing: a1 in {±1.4} must be -1.4 and a4 in {±1.4} must be 1.4, then a2 < a3 with a2, a3 in {±0.2}
    #   forces a2 = -0.2, a3 = 0.2 -> only S = {} ; decreasing likewise only S = {1, 2, 3, 4}.
    # So of the 2^4 = 16 swaps: two-sided hits 2 -> p = 2/16 = 0.125; "greater" (Δ >= 2) hits 1 -> p = 1/16.
    items = RatedItems.of(HUMAN4, list(Z), list(-Z))
    two_sided = permutation_test(items, "item")
    assert two_sided["difference"] == pytest.approx(2.0)
    assert two_sided["p"] == pytest.approx(2 / 16)
    assert two_sided["exact"] is True and two_sided["permutations"] == 2 ** 4
    assert two_sided["alternative"] == "two-sided"
    greater = permutation_test(items, "item", alternative="greater")
    assert greater["p"] == pytest.approx(1 / 16)
    assert greater["exact"] is True and greater["permutations"] == 16
    # metric 1 better: observed Δ = -2; "greater" counts Δ >= -2, i.e. all 16 swaps -> p = 1
    reversed_items = RatedItems.of(HUMAN4, list(-Z), list(Z))
    assert permutation_test(reversed_items, "item", alternative="greater")["p"] == pytest.approx(1.0)
    assert permutation_test(reversed_items, "item")["p"] == pytest.approx(2 / 16)


def test_permutation_test_standardises_each_metric_first():
    # 10 + 5 Z standardises to Z (mean 10, population sd 5) and 3 - 2 Z to -Z: the same 16 swaps as above.
    # Without standardising, swapping would mix scales (e.g. a = [-2, 9, 11, 17] for S = {1}) and change the hits.
    items = RatedItems.of(HUMAN4, list(10 + 5 * Z), list(3 - 2 * Z))
    result = permutation_test(items, "item")
    assert result["difference"] == pytest.approx(2.0)
    assert result["p"] == pytest.approx(2 / 16)


def test_permutation_test_exact_with_metrics_that_differ_on_two_items():
    # metric 0 = Z (ranks [1, 2, 3, 4]); metric 1 = [-0.2, -1.4, 0.2, 1.4] (ranks [2, 1, 3, 4]), also standardised.
    # Items 3 and 4 have equal scores in both metrics, so swapping them changes nothing: 4 copies of each
    # swap of items {1, 2}:
    #   S = {}:     r(a) = 1; r(b): d = [1, -1, 0, 0], rho = 1 - 6 * 2 / (4 * 15) = 0.8 -> Δ = 0.2 (observed)
    #   S = {1}:    a = [-0.2, -0.2, 0.2, 1.4], b = [-1.4, -1.4, 0.2, 1.4]: equal ranks [1.5, 1.5, 3, 4] -> Δ = 0
    #   S = {2}:    a = [-1.4, -1.4, ...], b = [-0.2, -0.2, ...]: equal ranks -> Δ = 0
    #   S = {1, 2}: a = metric 1, b = metric 0 -> Δ = -0.2
    # two-sided: |Δ| >= 0.2 in 4 + 4 = 8 of 16 -> p = 0.5; greater: Δ >= 0.2 in 4 of 16 -> p = 0.25
    items = RatedItems.of(HUMAN4, list(Z), [-0.2, -1.4, 0.2, 1.4])
    two_sided = permutation_test(items, "item")
    assert two_sided["difference"] == pytest.approx(0.2)
    assert two_sided["p"] == pytest.approx(0.5)
    assert two_sided["permutations"] == 16 and two_sided["exact"] is True
    greater = permutation_test(items, "item", alternative="greater")
    assert greater["p"] == pytest.approx(0.25)


def test_permutation_test_of_identical_metrics():
    # every swap leaves both metrics unchanged: Δ = 0 each time, all 2^5 = 32 swaps are hits -> p = 1
    items = RatedItems.of([1.0, 3.0, 2.0, 5.0, 4.0], [0.3, 0.1, 0.4, 0.9, 0.5], [0.3, 0.1, 0.4, 0.9, 0.5])
    for alternative in ("two-sided", "greater"):
        result = permutation_test(items, "item", alternative=alternative)
        assert result["difference"] == pytest.approx(0.0, abs=1e-12)
        assert result["p"] == pytest.approx(1.0)
        assert result["permutations"] == 32 and result["exact"] is True


def test_permutation_test_monte_carlo():
    rng = np.random.default_rng(11)
    human = rng.normal(size=40)
    good = human + 0.3 * rng.normal(size=40)
    noise = rng.normal(size=40)
    items = RatedItems.of(list(human), list(good), list(noise))
    # 2^40 swaps > 200 permutations -> Monte Carlo, p = (1 + hits) / (1 + 200)
    result = permutation_test(items, "item", n_permutations=200, seed=5)
    assert result["exact"] is False and result["permutations"] == 200
    hits = result["p"] * 201 - 1
    assert hits == pytest.approx(round(hits)) and 0 <= round(hits) <= 200
    assert 0 < result["p"] <= 1
    assert result["p"] < 0.02  # a clearly better metric: few or no swaps reach the observed difference
    assert result == permutation_test(items, "item", n_permutations=200, seed=5)
    # the reverse comparison: metric 0 is the noise; "greater" is then nearly certain to be not significant
    reverse = permutation_test(RatedItems.of(list(human), list(noise), list(good)), "item", alternative="greater",
                               n_permutations=200, seed=5)
    assert reverse["p"] > 0.9
    # random swaps of a large sample: a different seed draws different swaps but agrees on the verdict
    assert permutation_test(items, "item", n_permutations=200, seed=6)["p"] < 0.02
    # a few items but too few permutations for 2^n: also Monte Carlo
    small = RatedItems.of(HUMAN4 + [5.0], [0.1, 0.2, 0.3, 0.4, 0.5], [0.5, 0.1, 0.2, 0.4, 0.3])
    mc = permutation_test(small, "item", n_permutations=20, seed=0)  # 2^5 = 32 > 20
    assert mc["exact"] is False and mc["permutations"] == 20
    assert (mc["p"] * 21 - 1) == pytest.approx(round(mc["p"] * 21 - 1))


def test_permutation_test_rejects_an_unknown_alternative():
    with pytest.raises(ValueError, match="alternative"):
        permutation_test(RatedItems.of(HUMAN4, list(Z), list(-Z)), "item", alternative="less")


# ---------------------------------------------------------------------------------------------------------------
# 4. Williams test
# ---------------------------------------------------------------------------------------------------------------

def test_williams_test_by_hand():
    # r12 = 0.6, r13 = 0.4, r23 = 0.5, n = 50
    # |R| = 1 - 0.36 - 0.16 - 0.25 + 2 * 0.6 * 0.4 * 0.5 = 0.23 + 0.24 = 0.47
    # 2 (n-1)/(n-3) |R| = 2 * 49/47 * 0.47 = 98 * 0.01 = 0.98
    # ((r12 + r13)/2)^2 (1 - r23)^3 = 0.5^2 * 0.5^3 = 0.03125
    # t = (0.6 - 0.4) * sqrt(49 * 1.5) / sqrt(0.98 + 0.03125) = 0.2 * sqrt(73.5 / 1.01125) = 0.2 * 8.525391 = 1.705078
    t = 0.2 * math.sqrt(73.5 / 1.01125)
    assert t == pytest.approx(1.705078, abs=1e-6)
    result = williams_test(0.6, 0.4, 0.5, 50)
    assert result["t"] == pytest.approx(t)
    assert result["df"] == 47
    p = stats.t.sf(t, 47)  # one-sided P(T_47 > t), about 0.047
    assert result["p"] == pytest.approx(p)
    assert 0.04 < result["p"] < 0.05
    assert result["p_two_sided"] == pytest.approx(2 * p)


def test_williams_test_symmetries():
    equal = williams_test(0.5, 0.5, 0.3, 20)
    assert equal["t"] == pytest.approx(0.0, abs=1e-15)
    assert equal["p"] == pytest.approx(0.5)
    assert equal["p_two_sided"] == pytest.approx(1.0)
    forward, backward = williams_test(0.6, 0.4, 0.5, 50), williams_test(0.4, 0.6, 0.5, 50)
    assert backward["t"] == pytest.approx(-forward["t"])
    assert backward["p"] == pytest.approx(1 - forward["p"])
    assert backward["p_two_sided"] == pytest.approx(forward["p_two_sided"])


@pytest.mark.parametrize("args", [(0.6, 0.4, 0.5, 3), (0.6, 0.4, 0.5, 2), (1.2, 0.4, 0.5, 50),
                                  (0.6, -1.01, 0.5, 50), (0.6, 0.4, float("nan"), 50)])
def test_williams_test_rejects_bad_input(args):
    with pytest.raises(ValueError):
        williams_test(*args)


def test_williams_compare_spearman_is_williams_on_rank_pearson():
    # human [1..5]; metric A ranks [1, 3, 2, 5, 4]; metric B ranks [5, 1, 2, 3, 4] (raw values far from linear)
    #   r12 = rho(human, A): d = [0, -1, 1, -1, 1], sum d^2 = 4 -> 1 - 6 * 4 / (5 * 24) = 1 - 0.2 = 0.8
    #   r13 = rho(human, B): d = [-4, 1, 1, 1, 1], sum d^2 = 20 -> 1 - 120/120 = 0
    #   r23 = rho(A, B): d = [-4, 2, 0, 2, 0], sum d^2 = 24 -> 1 - 144/120 = -0.2
    # |R| = 1 - 0.64 - 0 - 0.04 + 0 = 0.32; 2 * 4/2 * 0.32 = 1.28; (0.8/2)^2 * 1.2^3 = 0.16 * 1.728 = 0.27648
    # t = 0.8 * sqrt(4 * 0.8) / sqrt(1.28 + 0.27648) = 0.8 * sqrt(3.2 / 1.55648) = 1.147078...
    items = RatedItems.of([1.0, 2.0, 3.0, 4.0, 5.0], [0.1, 0.35, 0.3, 0.9, 0.5], [10.0, 1.0, 2.0, 3.0, 4.0])
    result = williams_compare(items, "item", method="spearman")
    t = 0.8 * math.sqrt(3.2 / 1.55648)
    assert t == pytest.approx(1.147078, abs=1e-6)
    assert result["t"] == pytest.approx(t)
    assert result["df"] == 2
    assert result == pytest.approx(williams_test(0.8, 0.0, -0.2, 5))
    # the Pearson version correlates the raw scores, not the ranks
    assert williams_compare(items, "item", method="pearson")["t"] != pytest.approx(t)


def test_williams_compare_system_level_and_too_few_values():
    # 4 systems (the hand example above) -> the system means enter the test
    items = RatedItems.of(SYSTEM_HUMAN, SYSTEM_METRIC, [1.0, 0.0, 2.0, 3.0, 1.0, 0.0, 2.0, 3.0], systems=SYSTEM_LABELS)
    # metric 1 means: A 1, B 0, C 2, D 3; against human means [1.5, 2.5, 3.5, 4.5] and metric 0 means
    # [0.2, 0.5, 0.4, 0.9]: the Spearman correlations are Pearson of ranks
    #   r12 = 0.8 (above); metric 1 ranks [2, 1, 3, 4]: r13: d = [-1, 1, 0, 0] -> 1 - 12/60 = 0.8
    #   r23: metric 0 ranks [1, 3, 2, 4] vs [2, 1, 3, 4]: d = [-1, 2, -1, 0], sum 6 -> 1 - 36/60 = 0.4
    result = williams_compare(items, "system", method="spearman")
    assert result == pytest.approx(williams_test(0.8, 0.8, 0.4, 4))
    assert result["t"] == pytest.approx(0.0, abs=1e-12)
    # 3 systems, or 3 items, are too few
    three = RatedItems.of([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0.1, 0.3, 0.2, 0.5, 0.4, 0.6],
                          [0.6, 0.5, 0.4, 0.3, 0.2, 0.1],
                          systems=list("aabbcc"))
    assert williams_compare(three, "system") is None
    assert williams_compare(RatedItems.of([1.0, 2.0, 3.0], [0.1, 0.3, 0.2], [0.3, 0.2, 0.1]), "item") is None
    with pytest.raises(ValueError):
        williams_compare(three, "item", method="kendall")


# ---------------------------------------------------------------------------------------------------------------
# 5. Pairwise accuracy and tie calibration (Deutsch et al. 2023)
# ---------------------------------------------------------------------------------------------------------------

# metric [0.1, 0.2, 0.2, 0.9], human [1, 1, 2, 3]; the 6 pairs (metric difference, human difference):
#   (1,2): -0.1, 0 (people tie)    (1,3): -0.1, -1    (1,4): -0.8, -2
#   (2,3):  0,  -1                 (2,4): -0.7, -2    (3,4): -0.7, -1
@pytest.mark.parametrize("epsilon, right", [
    # eps 0: metric ties only (2,3), which people order -> wrong; (1,2) ordered but tied by people -> wrong;
    #        (1,3), (1,4), (2,4), (3,4) ordered as people do -> 4 right
    (0.0, 4),
    # eps 0.1: ties (1,2) right, (1,3) wrong, (2,3) wrong; (1,4), (2,4), (3,4) right -> 4
    (0.1, 4),
    # eps 0.7: ties (1,2) right, (1,3), (2,3), (2,4), (3,4) wrong; (1,4) ordered right -> 2
    (0.7, 2),
    # eps 1: every pair tied, only (1,2) is tied by people -> 1
    (1.0, 1),
])
def test_pairwise_accuracy_by_hand(epsilon, right):
    assert pairwise_accuracy([0.1, 0.2, 0.2, 0.9], [1, 1, 2, 3], epsilon) == pytest.approx(right / 6)


def test_pairwise_accuracy_counts_misordered_pairs_wrong():
    # metric [3, 2, 1] vs human [1, 2, 3]: every pair reversed -> 0; human all tied and metric distinct -> 0
    assert pairwise_accuracy([3.0, 2.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    assert pairwise_accuracy([3.0, 2.0, 1.0], [2.0, 2.0, 2.0]) == 0.0
    # all tied on both sides -> every pair right
    assert pairwise_accuracy([0.5, 0.5, 0.5], [2.0, 2.0, 2.0]) == 1.0


def test_tie_calibration_picks_a_positive_epsilon():
    # metric [0.1, 0.2, 0.25, 0.9], human [1, 1, 1, 3]; pairs (gap, human):
    #   (2,3) 0.05 tie; (1,2) 0.1 tie; (1,3) 0.15 tie; (3,4) 0.65 ordered; (2,4) 0.7 ordered; (1,4) 0.8 ordered
    #   (the metric orders every pair the way people do)
    # eps 0: 3 ordered right, 3 people-ties wrong -> 3/6; 0.05: 4/6; 0.1: 5/6; 0.15: 6/6;
    # 0.65: (3,4) tied -> 5/6; 0.7: 4/6; 0.8: 3/6  -> best 0.15 with accuracy 1
    result = tie_calibrated_accuracy([0.1, 0.2, 0.25, 0.9], [1, 1, 1, 3])
    assert result["epsilon"] == pytest.approx(0.15)
    assert result["accuracy"] == pytest.approx(1.0)
    assert result["accuracy_at_epsilon_0"] == pytest.approx(0.5)


def test_tie_calibration_keeps_zero_when_ties_do_not_help():
    # metric [0.1, 0.2, 0.3], human [1, 2, 3]: all 3 pairs right at eps 0; any tie makes one wrong
    result = tie_calibrated_accuracy([0.1, 0.2, 0.3], [1, 2, 3])
    assert result == {"accuracy": 1.0, "epsilon": 0.0, "accuracy_at_epsilon_0": 1.0}


def test_tie_calibration_tie_break_prefers_zero():
    # metric [0, 2, 1.5], human [1, 2, 3]: pairs (gap, verdict when not tied):
    #   (2,3) 0.5, metric +0.5 vs human -1 -> misordered; (1,3) 1.5 right; (1,2) 2 right
    # eps 0: 2/3; eps 0.5: (2,3) tied but people order it -> still wrong, 2/3; eps 1.5: 1/3; eps 2: 0
    # best 2/3 at 0 and 0.5 -> the smallest, 0
    result = tie_calibrated_accuracy([0.0, 2.0, 1.5], [1.0, 2.0, 3.0])
    assert result == {"accuracy": pytest.approx(2 / 3), "epsilon": 0.0,
                      "accuracy_at_epsilon_0": pytest.approx(2 / 3)}


def test_tie_calibration_tie_break_prefers_the_smallest_positive_epsilon():
    # metric [0, 1, 4.5, 3], human [1, 1, 2, 3]; pairs sorted by gap:
    #   (1,2) 1 people tie; (3,4) 1.5 metric +1.5 vs human -1 -> misordered; (2,4) 2 right; (1,4) 3 right;
    #   (2,3) 3.5 right; (1,3) 4.5 right
    # eps 0: 4/6 ((1,2) and (3,4) wrong); eps 1: (1,2) tied -> 5/6; eps 1.5: (3,4) tied, still wrong -> 5/6;
    # eps 2: (2,4) tied -> 4/6 ... -> best 5/6 at 1 and 1.5 -> epsilon 1
    result = tie_calibrated_accuracy([0.0, 1.0, 4.5, 3.0], [1.0, 1.0, 2.0, 3.0])
    assert result["epsilon"] == 1.0
    assert result["accuracy"] == pytest.approx(5 / 6)
    assert result["accuracy_at_epsilon_0"] == pytest.approx(4 / 6)


def test_tie_calibration_with_exact_metric_ties():
    # metric [0.1, 0.2, 0.2, 0.9], human [1, 1, 2, 3] (the pairs above): a zero gap is tied at every epsilon
    # eps 0: 4/6; eps 0.1: 4/6; eps 0.7: 2/6; eps 0.8: 1/6 -> best 4/6 at epsilon 0
    result = tie_calibrated_accuracy([0.1, 0.2, 0.2, 0.9], [1, 1, 2, 3])
    assert result == {"accuracy": pytest.approx(4 / 6), "epsilon": 0.0, "accuracy_at_epsilon_0": pytest.approx(4 / 6)}
    # metric [0.1, 0.1, 0.9], human [1, 1, 2]: the zero-gap pair is tied by both -> all 3 right at epsilon 0
    assert tie_calibrated_accuracy([0.1, 0.1, 0.9], [1, 1, 2]) == {
        "accuracy": 1.0, "epsilon": 0.0, "accuracy_at_epsilon_0": 1.0}


def test_tie_calibrated_accuracy_is_pairwise_accuracy_at_its_epsilon():
    rng = np.random.default_rng(2)
    for _ in range(20):
        metric = np.round(rng.random(8), 1)  # coarse values: many equal gaps
        human = rng.integers(1, 4, size=8).astype(float)
        result = tie_calibrated_accuracy(metric, human)
        assert result["accuracy"] == pytest.approx(pairwise_accuracy(metric, human, result["epsilon"]))
        gaps = {0.0} | {abs(a - b) for i, a in enumerate(metric) for b in metric[i + 1:]}
        best = max(pairwise_accuracy(metric, human, g) for g in gaps)
        assert result["accuracy"] == pytest.approx(best)
        assert result["epsilon"] == min(g for g in gaps if pairwise_accuracy(metric, human, g) == pytest.approx(best))


def test_pairwise_accuracy_needs_two_items():
    for function in (lambda m, h: pairwise_accuracy(m, h), tie_calibrated_accuracy):
        with pytest.raises(ValueError, match="at least 2 items"):
            function([0.5], [1.0])
        with pytest.raises(ValueError, match="at least 2 items"):
            function([], [])


def test_williams_reproduces_a_published_worked_example():
    # Howell, "Statistical Methods for Psychology" (6th ed., p. 262), as computed by Weaver's Williams1959.sps:
    # r12 .80, r13 .72, r23 .89, n 26 -> t 1.361, df 23, two-sided p .187
    result = williams_test(0.80, 0.72, 0.89, 26)
    assert result["t"] == pytest.approx(1.361, abs=5e-4)
    assert result["df"] == 23
    assert result["p_two_sided"] == pytest.approx(0.187, abs=5e-4)
