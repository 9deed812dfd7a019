"""The score cache, the leaderboard, ``compare``, metric choices, their command lines and the benchmark columns they
rely on (``system``, ``context_id``), on small generic releases written here: 3 systems x 4 contexts = 12 turn items,
so that the item, system and grouped-by-context levels all exist. Models: ``length`` (none) and a tiny random BERT
for ``similarity`` / ``reference-similarity``."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from scipy import stats

from hf_dialeval import cli
from hf_dialeval.cli import options
from hf_dialeval.data.benchmarks import CONTEXT_ID, SYSTEM, context_id, load_benchmark
from hf_dialeval.data.model import DialogueValidationError
from hf_dialeval.evaluation import statistics
from hf_dialeval.evaluation.compare import compare_scores, format_comparison
from hf_dialeval.evaluation.leaderboard import (
    LEGEND,
    README_BEGIN,
    README_END,
    build_leaderboard,
    format_leaderboard,
    headline_dimension,
    update_readme,
    write_leaderboard,
)
from hf_dialeval.evaluation.meta_evaluation import format_number
from hf_dialeval.inference.factory import load_metric
from hf_dialeval.inference.score_cache import ScoreCache, cache_key
from hf_dialeval.registry import MetricChoice

from conftest import save_tiny_bert

RESAMPLES, PERMUTATIONS = 50, 100

CONTEXTS = [
    ["Hi there.", "Do you want to go hiking this weekend?"],
    ["I read the strangest article today.", "It was about talking plants."],
    ["What do you usually drink in the morning?", "I need something warm."],
    ["We should meet up soon.", "When are you free?"],
]
SYSTEMS = ["alpha", "beta", "gamma"]
#: (context index, system, response, Overall, Fluent), one row per item.
ITEMS = [
    (0, "alpha", "yes.", 2, 1),
    (0, "beta", "sure, I would love to go hiking with you.", 4, 3),
    (0, "gamma", "maybe later today", 3, 5),
    (1, "alpha", "no idea what you mean by that question", 3, 2),
    (1, "beta", "ok", 1, 4),
    (1, "gamma", "the weather is fine here", 5, 3),
    (2, "alpha", "I like tea with milk and honey", 5, 4),
    (2, "beta", "tea", 2, 2),
    (2, "gamma", "coffee is better in the morning for me", 4, 1),
    (3, "alpha", "let us meet at noon", 4, 5),
    (3, "beta", "why would anyone do that at all", 3, 3),
    (3, "gamma", "fine", 1, 2),
]
REFERENCES = ["I would love to!", "Plants cannot talk.", "Tea, always.", "Friday works."]


def release(with_references: bool = True, headline: str = "Overall", **changes) -> dict:
    data = {
        "contexts": [CONTEXTS[c] for c, *_ in ITEMS],
        "responses": [response for _, _, response, _, _ in ITEMS],
        "systems": [system for _, system, *_ in ITEMS],
        "scores": [{headline: overall, "Fluent": fluent} for *_, overall, fluent in ITEMS],
    }
    if with_references:
        data["references"] = [REFERENCES[c] for c, *_ in ITEMS]
    data.update(changes)
    return data


def write_release(path, **kwargs) -> str:
    path.write_text(json.dumps(release(**kwargs)), encoding="utf-8")
    return f"json:{path}"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> str:
    return save_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("releases")
    return {"refs": write_release(folder / "with_refs.json"),
            "norefs": write_release(folder / "no_refs.json", with_references=False, headline="Coherence")}


# --- ScoreCache -------------------------------------------------------------------------------------------------


def test_score_cache_stores_then_reads_back(tmp_path, releases):
    dataset = load_benchmark(releases["refs"])
    cache, metric = ScoreCache(tmp_path / "cache"), load_metric("length")
    first, cached = cache.scores(metric, dataset, releases["refs"])
    assert cached is False
    files = list((tmp_path / "cache" / "length").glob("*.json"))
    assert files == [cache.path(metric, dataset, releases["refs"])]
    assert first.overall == [float(len(r.split())) for _, _, r, _, _ in ITEMS]
    second, cached = cache.scores(metric, dataset, releases["refs"])
    assert cached is True
    assert (second.overall, second.scores, second.truncated) == (first.overall, first.scores, first.truncated)
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1


def test_score_cache_key_follows_the_items_and_the_checkpoint(tmp_path, tiny, releases):
    dataset = load_benchmark(releases["refs"])
    cache, length = ScoreCache(tmp_path / "cache"), load_metric("length")
    responses = [response for _, _, response, _, _ in ITEMS]
    responses[5] = "the weather is lovely here"
    edited_path = tmp_path / "with_refs.json"  # the same file name: only the items differ
    edited_path.write_text(json.dumps(release(responses=responses)), encoding="utf-8")
    edited = load_benchmark(f"json:{edited_path}")
    assert cache_key(length, edited) != cache_key(length, dataset)
    assert cache.path(length, edited, f"json:{edited_path}") != cache.path(length, dataset, releases["refs"])
    _, cached = cache.scores(length, dataset, releases["refs"])
    output, cached_edited = cache.scores(length, edited, f"json:{edited_path}")
    assert (cached, cached_edited) == (False, False)
    assert output.overall[5] == 5.0

    other = save_tiny_bert(tmp_path / "other_bert")
    first, second = load_metric("similarity", checkpoint=tiny), load_metric("similarity", checkpoint=other)
    assert cache_key(first, dataset) != cache_key(second, dataset)
    assert cache.path(first, dataset, "b") != cache.path(second, dataset, "b")


def test_a_cache_file_with_too_few_scores_is_rescored(tmp_path, releases):
    dataset = load_benchmark(releases["refs"])
    cache, metric = ScoreCache(tmp_path / "cache"), load_metric("length")
    expected, _ = cache.scores(metric, dataset, releases["refs"])
    path = cache.path(metric, dataset, releases["refs"])
    record = json.loads(path.read_text(encoding="utf-8"))
    for key in ("overall", "truncated", "empty", *metric.dimensions):
        record["output"][key] = record["output"][key][:5]
    path.write_text(json.dumps(record), encoding="utf-8")
    output, cached = cache.scores(metric, dataset, releases["refs"])
    assert cached is False and output.overall == expected.overall
    assert len(json.loads(path.read_text(encoding="utf-8"))["output"]["overall"]) == len(dataset)  # rewritten whole
    assert cache.scores(metric, dataset, releases["refs"])[1] is True


def test_a_cache_file_with_too_few_overall_scores_is_rescored(tmp_path, releases):
    dataset = load_benchmark(releases["refs"])
    cache, metric = ScoreCache(tmp_path / "cache"), load_metric("length")
    expected, _ = cache.scores(metric, dataset, releases["refs"])
    path = cache.path(metric, dataset, releases["refs"])
    record = json.loads(path.read_text(encoding="utf-8"))
    for key in ("overall", *metric.dimensions):  # fewer scores than items; the flags still whole
        record["output"][key] = record["output"][key][:5]
    path.write_text(json.dumps(record), encoding="utf-8")
    output, cached = cache.scores(metric, dataset, releases["refs"])
    assert cached is False and output.overall == expected.overall


# --- build_leaderboard ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def board(tmp_path_factory, tiny, releases):
    """The leaderboard of three metrics on both releases, built twice on one cache."""
    cache = ScoreCache(tmp_path_factory.mktemp("board") / "cache")
    metrics = [MetricChoice("length"), MetricChoice("similarity", tiny), MetricChoice("reference-similarity", tiny)]
    benchmarks = [releases["refs"], releases["norefs"]]
    options = dict(cache=cache, n_resamples=RESAMPLES, permutations=PERMUTATIONS, progress=False)
    first = build_leaderboard(metrics, benchmarks, **options)
    second = build_leaderboard(metrics, benchmarks, **options)
    return {"record": first, "again": second, "labels": [m.label for m in metrics], "metrics": metrics}


def test_leaderboard_skips_what_a_metric_cannot_score(board, releases):
    record, labels = board["record"], board["labels"]
    assert record["metrics"] == labels
    assert set(record["skipped"][labels[2]]) == {releases["norefs"]}
    assert "reference" in record["skipped"][labels[2]][releases["norefs"]]
    assert releases["norefs"] not in record["cells"][labels[2]]
    assert releases["refs"] in record["cells"][labels[2]]
    for label in labels[:2]:
        assert record["skipped"][label] == {}
        assert set(record["cells"][label]) == {releases["refs"], releases["norefs"]}


def test_headline_dimension_is_overall_else_the_first_rating(board, releases):
    assert headline_dimension(load_benchmark(releases["refs"])) == "Overall"
    assert headline_dimension(load_benchmark(releases["norefs"])) == "Coherence"
    assert [(b["name"], b["dimension"], b["items"]) for b in board["record"]["benchmarks"]] == [
        (releases["refs"], "Overall", 12), (releases["norefs"], "Coherence", 12)]


def test_leaderboard_cell_is_the_spearman_of_overall_at_every_level(board, releases):
    dataset = load_benchmark(releases["refs"])
    lengths = load_metric("length").score_dataset(dataset).overall
    cell = board["record"]["cells"]["length"][releases["refs"]]
    expected = stats.spearmanr(lengths, dataset["Overall"]).statistic
    assert cell["spearman"] == pytest.approx(expected)
    assert cell["n"] == 12
    levels = cell["levels"]
    assert set(levels) == {"item", "system", "grouped"}
    assert {level: levels[level]["n"] for level in levels} == {"item": 12, "system": 3, "grouped": 4}
    assert levels["item"]["spearman"] == pytest.approx(expected)
    low, high = cell["ci95"]
    assert low <= high and cell["ci95"] == levels["item"]["ci95"]
    # system level: Spearman of the systems' mean length against their mean rating
    systems = np.array(dataset[SYSTEM])
    means = [(np.mean(np.array(lengths)[systems == s]), np.mean(np.array(dataset["Overall"])[systems == s]))
             for s in SYSTEMS]
    assert levels["system"]["spearman"] == pytest.approx(stats.spearmanr(*zip(*means)).statistic)
    # the other rating is kept, at every level, without intervals
    assert set(cell["dimensions"]) == {"Fluent"}
    fluent = cell["dimensions"]["Fluent"]
    assert set(fluent) == {"item", "system", "grouped"}
    assert fluent["item"]["spearman"] == pytest.approx(stats.spearmanr(lengths, dataset["Fluent"]).statistic)
    assert "ci95" not in fluent["item"]
    assert (cell["truncated"], cell["empty"], cell["cached"], cell["paper"]) == (0, 0, False, None)
    coherence_cell = board["record"]["cells"]["length"][releases["norefs"]]
    assert set(coherence_cell["dimensions"]) == {"Fluent"}


def test_leaderboard_marks_the_best_of_each_column(board, releases):
    record = board["record"]
    for benchmark in (releases["refs"], releases["norefs"]):
        column = {label: cells[benchmark] for label, cells in record["cells"].items() if benchmark in cells}
        assert len(column) == (3 if benchmark == releases["refs"] else 2)
        best = [label for label, cell in column.items() if cell["best"] is True]
        assert len(best) == 1
        assert column[best[0]]["spearman"] == max(cell["spearman"] for cell in column.values())
        assert "p_vs_best" not in column[best[0]]
        for label, cell in column.items():
            assert isinstance(cell["tied_with_best"], bool)
            if label != best[0]:
                assert cell["best"] is False
                assert 0 < cell["p_vs_best"] <= 1
                assert cell["tied_with_best"] == (cell["p_vs_best"] >= record["settings"]["significance"])


def test_a_second_build_reads_every_score_from_the_cache(board):
    first, second = board["record"], board["again"]
    for label, cells in second["cells"].items():
        for benchmark, cell in cells.items():
            assert cell["cached"] is True
            original = first["cells"][label][benchmark]
            assert original["cached"] is False
            assert {**cell, "cached": None} == {**original, "cached": None}
    assert second["skipped"] == first["skipped"]


def test_grouped_n_counts_only_the_contexts_the_correlation_is_over(tmp_path):
    data = release()
    for index in range(3):  # context 0: people rated all three candidates alike
        data["scores"][index]["Overall"] = 3
    path = tmp_path / "tied.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    dataset = load_benchmark(f"json:{path}")
    lengths = load_metric("length").score_dataset(dataset).overall
    usable = [i for i in range(12) if i >= 3]
    expected = _grouped_spearman([lengths[i] for i in usable], [dataset["Overall"][i] for i in usable],
                                 [dataset[CONTEXT_ID][i] for i in usable])
    record = build_leaderboard([MetricChoice("length")], [f"json:{path}"], cache=ScoreCache(tmp_path / "cache"),
                               n_resamples=0, permutations=10, progress=False)
    grouped = record["cells"]["length"][f"json:{path}"]["levels"]["grouped"]
    assert grouped["spearman"] == pytest.approx(expected)  # the mean over the 3 usable contexts
    assert grouped["n"] == 3


def test_a_metric_named_twice_is_refused(tmp_path, releases):
    with pytest.raises(ValueError, match="named twice"):
        build_leaderboard([MetricChoice("length"), MetricChoice("length")], [releases["refs"]],
                          cache=ScoreCache(tmp_path / "cache"), n_resamples=0, permutations=10, progress=False)


# --- format_leaderboard, update_readme, write_leaderboard ------------------------------------------------------------


def _row(table: str, label: str) -> list[str]:
    line = next(line for line in table.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


def test_format_leaderboard_marks_best_tied_and_skipped(board, releases):
    record = copy.deepcopy(board["record"])
    labels = record["metrics"]
    benchmark = releases["refs"]
    best = next(label for label in labels if record["cells"][label][benchmark]["best"])
    others = [label for label in labels if label != best]
    record["cells"][others[0]][benchmark]["tied_with_best"] = True
    record["cells"][others[1]][benchmark]["tied_with_best"] = False
    table = format_leaderboard(record)
    item_table = table.split("#### System level")[0]
    assert item_table.startswith("#### Item level")
    best_cell = _row(item_table, best)[0]
    assert best_cell.startswith("**") and best_cell.split(" [")[0].endswith("**")
    assert format_number(record["cells"][best][benchmark]["spearman"]) in best_cell
    tied_cell = _row(item_table, others[0])[0]
    assert "\\* [" in tied_cell and not tied_cell.startswith("**")
    assert "\\*" not in _row(item_table, others[1])[0]
    assert _row(item_table, labels[2])[1] == "—"
    assert LEGEND in table and table.rstrip().endswith(LEGEND)
    assert "#### System level" in table and "#### Grouped by context" in table
    assert "(3 systems)" in table and "(4 contexts)" in table

    item_only = format_leaderboard(record, levels=("item",))
    assert item_only.startswith("#### Item level")
    assert "#### System level" not in item_only and "#### Grouped" not in item_only
    assert item_only.count("####") == 1 and LEGEND in item_only


def test_update_readme_replaces_only_the_marked_block(tmp_path):
    readme = tmp_path / "README.md"
    head = "# Project\n\nIntro text.\n"
    tail = "\n\n## After\n\nMore text.\n"
    readme.write_text(f"{head}{README_BEGIN}\nold table\nold row\n{README_END}{tail}", encoding="utf-8")
    update_readme(readme, "| new | table |")
    assert readme.read_text(encoding="utf-8") == f"{head}{README_BEGIN}\n| new | table |\n{README_END}{tail}"
    update_readme(readme, "second")  # idempotent in shape: runs again on its own output
    assert readme.read_text(encoding="utf-8") == f"{head}{README_BEGIN}\nsecond\n{README_END}{tail}"

    plain = tmp_path / "PLAIN.md"
    plain.write_text("# No markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="leaderboard:begin"):
        update_readme(plain, "x")
    assert plain.read_text(encoding="utf-8") == "# No markers\n"
    half = tmp_path / "HALF.md"
    half.write_text(f"{README_BEGIN}\nonly the start\n", encoding="utf-8")
    with pytest.raises(ValueError):
        update_readme(half, "x")


def test_write_leaderboard_writes_json_markdown_and_heatmap(tmp_path, board):
    record = board["record"]
    paths = write_leaderboard(record, tmp_path / "out")
    assert [p.name for p in paths] == ["leaderboard.json", "leaderboard.md", "leaderboard.png"]
    assert json.loads((tmp_path / "out" / "leaderboard.json").read_text(encoding="utf-8")) == \
        json.loads(json.dumps(record))
    assert (tmp_path / "out" / "leaderboard.md").read_text(encoding="utf-8") == format_leaderboard(record) + "\n"
    png = (tmp_path / "out" / "leaderboard.png").read_bytes()
    assert len(png) > 1000 and png.startswith(b"\x89PNG")


# --- compare_scores ----------------------------------------------------------------------------------------------


SECOND = [3.0, 1.0, 2.0, 2.5, 0.5, 4.0, 1.5, 3.5, 0.0, 2.0, 5.0, 1.0]


def _grouped_spearman(scores, human, contexts) -> float:
    values = []
    for context in dict.fromkeys(contexts):
        members = [i for i, c in enumerate(contexts) if c == context]
        values.append(stats.spearmanr([scores[i] for i in members], [human[i] for i in members]).statistic)
    return float(np.mean(values))


def _system_spearman(scores, human, systems) -> float:
    names = sorted(set(systems))
    means = [(np.mean([scores[i] for i, s in enumerate(systems) if s == name]),
              np.mean([human[i] for i, s in enumerate(systems) if s == name])) for name in names]
    return stats.spearmanr(*zip(*means)).statistic


@pytest.fixture(scope="module")
def comparison(releases):
    dataset = load_benchmark(releases["refs"])
    first = load_metric("length").score_dataset(dataset).overall
    result = compare_scores(first, SECOND, dataset, n_resamples=RESAMPLES, permutations=PERMUTATIONS)
    return dataset, first, result


def test_compare_scores_difference_at_every_level(comparison):
    dataset, first, result = comparison
    assert set(result) == {"Overall", "Fluent"}
    for dimension, levels in result.items():
        human = dataset[dimension]
        assert list(levels) == ["item", "system", "grouped"]
        assert [levels[level]["n"] for level in levels] == [12, 3, 4]
        expected = {
            "item": (stats.spearmanr(first, human).statistic, stats.spearmanr(SECOND, human).statistic),
            "system": (_system_spearman(first, human, dataset[SYSTEM]),
                       _system_spearman(SECOND, human, dataset[SYSTEM])),
            "grouped": (_grouped_spearman(first, human, dataset[CONTEXT_ID]),
                        _grouped_spearman(SECOND, human, dataset[CONTEXT_ID])),
        }
        for level, entry in levels.items():
            a, b = expected[level]
            assert entry["first"]["spearman"] == pytest.approx(a)
            assert entry["second"]["spearman"] == pytest.approx(b)
            assert entry["difference"] == pytest.approx(a - b)
            assert entry["difference"] == pytest.approx(entry["first"]["spearman"] - entry["second"]["spearman"])
            assert 0 < entry["permutation_p"] <= 1
            if entry["difference_ci95"] is not None:
                assert entry["difference_ci95"][0] <= entry["difference_ci95"][1]
        for level in ("item", "system"):
            assert "williams" in levels[level]
            williams = levels[level]["williams"]
            assert williams is None or (isinstance(williams, dict) and 0 <= williams["p"] <= 1)
        assert isinstance(levels["item"]["williams"], dict)  # 12 items: enough for the test
        assert "williams" not in levels["grouped"]


def test_compare_scores_rejects_an_unknown_rating(comparison):
    dataset, first, _ = comparison
    with pytest.raises(KeyError, match="Fluency") as error:
        compare_scores(first, SECOND, dataset, dimensions=["Fluency"], n_resamples=0, permutations=10)
    assert "Overall" in str(error.value) and "Fluent" in str(error.value)
    only = compare_scores(first, SECOND, dataset, dimensions=["Fluent"], n_resamples=0, permutations=10)
    assert list(only) == ["Fluent"]


def test_format_comparison_has_a_row_per_level(comparison):
    _, _, result = comparison
    text = format_comparison(result, "length", "other", "toy")
    assert text.count("**length** vs **other** on **toy**") == 2
    for dimension in ("Overall", "Fluent"):
        section = next(s for s in text.split("\n\n**") if f", {dimension} (Spearman)" in s)
        rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| level")]
        assert [row.split("|")[1].strip() for row in rows] == ["item", "system", "grouped"]
        assert rows[2].rstrip().endswith("| — |")  # no Williams test when grouped


# --- MetricChoice -------------------------------------------------------------------------------------------------


def test_metric_choice_parse_and_label():
    plain = MetricChoice.parse("length")
    assert (plain.name, plain.checkpoint, plain.label) == ("length", None, "length")
    chosen = MetricChoice.parse("similarity=path")
    assert (chosen.name, chosen.checkpoint, chosen.label) == ("similarity", "path", "similarity=path")
    assert MetricChoice("similarity").label == "similarity"
    with pytest.raises(KeyError, match="no-such-metric"):
        MetricChoice.parse("no-such-metric")
    with pytest.raises(KeyError):
        MetricChoice.parse("no-such-metric=path")
    with pytest.raises(ValueError, match="no checkpoint"):
        MetricChoice.parse("similarity=")
    with pytest.raises(ValueError, match="no model"):
        MetricChoice.parse("length=x")


# --- command line ----------------------------------------------------------------------------------------------------


def test_cli_restates_the_meta_eval_defaults():
    assert options.BOOTSTRAP_RESAMPLES == statistics.BOOTSTRAP_RESAMPLES
    assert options.PERMUTATIONS == statistics.PERMUTATIONS


def test_cli_compare_needs_exactly_two_metrics(capsys, tmp_path, releases):
    status = cli.main(["compare", "--metric", "length", "--benchmark", releases["refs"],
                       "--cache-dir", str(tmp_path / "cache")])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-dialeval: error: ") and "exactly two" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "cache").exists()


def test_cli_compare_refuses_a_checkpoint_for_a_model_free_metric(capsys, releases):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", "--metric", "length", "--metric", "length=x", "--benchmark", releases["refs"]])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error:" in err and "no model" in err and err.count("\n") == 1


def test_cli_compare_prints_and_writes_the_comparison(capsys, tmp_path, tiny, releases):
    output = tmp_path / "c.json"
    status = cli.main(["compare", "--metric", "length", "--metric", f"similarity={tiny}",
                       "--benchmark", releases["refs"], "--cache-dir", str(tmp_path / "cache"),
                       "--resamples", "50", "--permutations", "50", "--output", str(output)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert f"**length** vs **similarity={tiny}**" in captured.out
    assert "| item | 12 |" in captured.out and "| system | 3 |" in captured.out and "| grouped | 4 |" in captured.out
    record = json.loads(output.read_text(encoding="utf-8"))
    assert (record["first"], record["second"], record["benchmark"]) == ("length", f"similarity={tiny}",
                                                                        releases["refs"])
    assert set(record["comparison"]) == {"Overall", "Fluent"}
    assert set(record["comparison"]["Overall"]) == {"item", "system", "grouped"}
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2
    assert "scored" in captured.err
    # a second run reads both metrics' scores from the cache
    assert cli.main(["compare", "--metric", "length", "--metric", f"similarity={tiny}",
                     "--benchmark", releases["refs"], "--cache-dir", str(tmp_path / "cache"),
                     "--resamples", "0", "--permutations", "10"]) == 0
    assert capsys.readouterr().err.count("cached scores") == 2


def test_cli_leaderboard_writes_files_and_the_readme_block(capsys, tmp_path, releases):
    readme = tmp_path / "README.md"
    readme.write_text(f"# Top\n\n{README_BEGIN}\nstale\n{README_END}\n\nBottom.\n", encoding="utf-8")
    status = cli.main(["leaderboard", "--metric", "length", "--benchmark", releases["refs"],
                       "--output-dir", str(tmp_path / "lb"), "--cache-dir", str(tmp_path / "cache"),
                       "--resamples", "50", "--permutations", "50", "--readme", str(readme)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert "#### Item level" in captured.out and "| length |" in captured.out
    for name in ("leaderboard.json", "leaderboard.md", "leaderboard.png"):
        assert (tmp_path / "lb" / name).is_file() and (tmp_path / "lb" / name).stat().st_size > 0
    record = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    assert record["metrics"] == ["length"] and record["settings"]["resamples"] == 50
    assert record["cells"]["length"][releases["refs"]]["best"] is True
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"# Top\n\n{README_BEGIN}\n#### Item level") and text.endswith(f"{README_END}\n\nBottom.\n")
    assert "stale" not in text and "#### System level" not in text


def test_cli_leaderboard_with_a_missing_readme_is_a_user_error(capsys, tmp_path, releases):
    status = cli.main(["leaderboard", "--metric", "length", "--benchmark", releases["refs"],
                       "--output-dir", str(tmp_path / "lb"), "--cache-dir", str(tmp_path / "cache"),
                       "--readme", str(tmp_path / "MISSING.md")])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("hf-dialeval: error: ") and "MISSING.md" in err and err.count("\n") == 1
    assert not (tmp_path / "lb").exists() and not (tmp_path / "cache").exists()  # refused before any scoring


# --- benchmark columns -----------------------------------------------------------------------------------------------


def test_context_id_normalises_whitespace_and_an_empty_condition():
    assert context_id(["a", "b"], None) == context_id(["a ", " b"], "")
    assert context_id(["a", "b"]) == context_id(["a  ", "\tb\n"], None)
    assert context_id(["a", "b"], "a fact") != context_id(["a", "b"])
    assert context_id(["a", "b"], "a fact") == context_id(["a", "b"], " a  fact ")
    assert context_id(["a b"]) != context_id(["a", "b"])  # utterance boundaries count


def test_json_release_columns(releases):
    dataset = load_benchmark(releases["refs"])
    assert dataset[SYSTEM] == [system for _, system, *_ in ITEMS]
    assert len(set(dataset[CONTEXT_ID])) == 4
    assert dataset[CONTEXT_ID] == [context_id(CONTEXTS[c]) for c, *_ in ITEMS]
    assert [dim for dim in dataset.column_names if dim in ("Overall", "Fluent")] == ["Overall", "Fluent"]


def test_json_release_without_systems_has_an_empty_system_column(tmp_path):
    data = release()
    del data["systems"]
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    dataset = load_benchmark(f"json:{path}")
    assert dataset[SYSTEM] == [None] * 12


@pytest.mark.parametrize("bad", ["", "   ", None, 3])
def test_json_release_rejects_a_bad_system_name(tmp_path, bad):
    systems = [system for _, system, *_ in ITEMS]
    systems[7] = bad
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(release(systems=systems)), encoding="utf-8")
    with pytest.raises(DialogueValidationError, match=r"systems\[7\]"):
        load_benchmark(f"json:{path}")


def test_json_release_rejects_a_systems_list_of_the_wrong_length(tmp_path):
    path = tmp_path / "short.json"
    path.write_text(json.dumps(release(systems=SYSTEMS)), encoding="utf-8")
    with pytest.raises(DialogueValidationError, match="'systems' has 3 entries for 12"):
        load_benchmark(f"json:{path}")


def test_usr_topical_contexts_and_systems(data_dir):
    dataset = load_benchmark("usr-topical", data_dir)
    counts = {}
    for key in dataset[CONTEXT_ID]:
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 60 and set(counts.values()) == {6}
    assert len(set(dataset[SYSTEM])) == 6 and None not in dataset[SYSTEM]


@pytest.mark.parametrize("value, message", [("-1", "must be 0 or more"), ("many", "expected a whole number")])
def test_cli_resamples_must_be_a_whole_number_of_zero_or_more(capsys, releases, value, message):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", "--metric", "length", "--metric", "length", "--benchmark", releases["refs"],
                  "--resamples", value])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_replies_to_no_context_share_no_context_id(data_dir):
    # HolisticEval's fluency set rates single utterances: grouping them would be the item level again
    dataset = load_benchmark("holistic-fluency", data_dir)
    assert set(dataset["context_id"]) == {None}
    items = statistics.RatedItems.from_benchmark(dataset, "Fluency", [float(len(r)) for r in dataset["response"]])
    assert items.contexts is None and items.levels() == ["item"]


# --- a metric fitted on the rated benchmarks: its held-out scores only -------------------------------------------


def test_a_metric_fitted_on_the_benchmarks_shows_its_held_out_scores_only(tmp_path, releases, monkeypatch, capsys):
    import hf_dialeval.evaluation.leaderboard as leaderboard

    def refuse(*args, **kwargs):
        raise AssertionError("the panel fitted on these benchmarks must not score them")

    monkeypatch.setattr(leaderboard, "load_metric", refuse)
    dataset = load_benchmark(releases["refs"])
    held_out = [float(len(response)) for response in dataset["response"]]
    record = build_leaderboard([MetricChoice("panel")], [releases["refs"], releases["norefs"]],
                               cache=ScoreCache(tmp_path), n_resamples=RESAMPLES, permutations=PERMUTATIONS,
                               progress=False, held_out={"panel": {releases["refs"]: held_out}})
    cell = record["cells"]["panel"][releases["refs"]]
    assert cell["held_out"] and cell["spearman"] == pytest.approx(
        stats.spearmanr(held_out, dataset["Overall"]).statistic)
    assert "fitted on the rated benchmarks" in record["skipped"]["panel"][releases["norefs"]]
    assert format_leaderboard(record, levels=("item",)).splitlines()[4].endswith(" † |")  # the one column it has
    # the command line reads the held-out record; a file that is not one is a one-line error
    scores = tmp_path / "held_out.json"
    scores.write_text(json.dumps({"benchmarks": {releases["refs"]: held_out[:3]}}))
    assert cli.main(["leaderboard", "--metric", "panel", "--benchmark", releases["refs"], "--held-out",
                     f"panel={scores}", "--output-dir", str(tmp_path / "out"), "--cache-dir", str(tmp_path)]) == 2
    scores.write_text(json.dumps([1, 2]))
    assert cli.main(["leaderboard", "--metric", "panel", "--benchmark", releases["refs"], "--held-out",
                     f"panel={scores}", "--output-dir", str(tmp_path / "out"), "--cache-dir", str(tmp_path)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "hf-dialeval: error" in line]
    assert "gives 3 scores of" in errors[-2] and "which has 12 items" in errors[-2]
    assert "is not a held-out record" in errors[-1]
    # several files of one metric: each gives its benchmarks, a later one's replacing an earlier one's, said so
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    constant = [0.0] * len(held_out)
    first.write_text(json.dumps({"benchmarks": {releases["refs"]: constant, releases["norefs"]: held_out}}))
    second.write_text(json.dumps({"benchmarks": {releases["refs"]: held_out}}))
    assert cli.main(["leaderboard", "--metric", "panel", "--benchmark", releases["refs"], "--benchmark",
                     releases["norefs"], "--held-out", f"panel={first}", "--held-out", f"panel={second}",
                     "--output-dir", str(tmp_path / "both"), "--cache-dir", str(tmp_path)]) == 0
    cells = json.loads((tmp_path / "both" / "leaderboard.json").read_text())["cells"]["panel"]
    assert cells[releases["refs"]]["spearman"] == pytest.approx(cell["spearman"])  # the second file's scores
    assert cells[releases["norefs"]]["held_out"]
    assert f"--held-out: panel's scores of {releases['refs']} from {second}, not {first}" in capsys.readouterr().err
