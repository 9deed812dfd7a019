"""``hf-dialeval train panel``: its options, importable without torch (``--help`` answers at once). The training
itself is in :mod:`.train`, which takes them as ``TrainingArguments``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hf_dialeval.errors import OptionError
from hf_dialeval.training.data_options import RatingsOptions
from hf_dialeval.training.options import AT_LEAST_ONE, POSITIVE, DialEvalTrainingOptions, Range

#: The member scores of a new panel when --features is not given: one score of each of the shipped panel's members
#: (the shipped panel's own scores and weights: its card's command).
DEFAULT_FEATURES = ("dial-m.overall", "holistic-eval.overall", "quantidce.overall")


@dataclass
class PanelTrainingOptions(RatingsOptions, DialEvalTrainingOptions):
    """Fit the panel: each member score's empirical CDF over the items trained on, then the combiner's weights by a
    pairwise ranking loss over pairs of items people rated differently, drawn within each rated set (every set
    weighing the same). The members score each item once; scores of the registered benchmarks come from the score
    cache when they are there.

    By default a new panel is fitted on the registered turn-level benchmarks (--benchmarks). With --ratings, your own
    ratings refit the combiner of --init-from (default: the shipped panel; with --features, a new panel), its
    members and CDFs unchanged; --held-out-share of their contexts are held out to validate on. The ranking loss
    starts from weights in proportion to each score's correlation with the ratings (--start-weights).

    Every transformers.TrainingArguments option is accepted as well (e.g. --max-steps)."""

    EXAMPLE: ClassVar[str] = """\
example (a panel of two members, fitted on two benchmarks):
  hf-dialeval train panel --features quantidce.overall similarity.overall --benchmarks grade-convai2 usr-persona \\
      --data-dir ../shared/data --output-dir runs/panel-two
example (the shipped panel's weights refitted on your own ratings, a CSV whose score column is named rating):
  hf-dialeval train panel --ratings my_ratings.csv --score-column rating --output-dir runs/panel-mine
"""

    RANGES: ClassVar[dict[str, Range]] = {"temperature": POSITIVE, "pairs_per_set": AT_LEAST_ONE,
                                          "reference_dialogues": AT_LEAST_ONE,
                                          "quantile_count": Range("2 or more", lambda value: value >= 2)}

    init_from: str | None = field(default=None, metadata={
        "help": "a panel checkpoint whose members and CDFs are kept and whose weights keep training (default: a new "
                "panel of --features; with --ratings, the shipped panel)"})
    features: list[str] | None = field(default=None, metadata={
        "help": "the member scores of a new panel, each METRIC.SCORE of a registered metric (its shipped default; "
                "SCORE a dimension of its output or overall) "
                f"(default: {' '.join(DEFAULT_FEATURES)})"})
    feature_weights: list[float] | None = field(default=None, metadata={
        "help": "the relative weight of each of --features, in their order (default: equal): with --combiner rank-mean "
                "the panel's weights, with ranking and --start-weights given where training starts"})
    mark_down_only: list[str] | None = field(default=None, metadata={
        "help": "scores of --features that can lower a reply's score but never raise it: each counts at most at the "
                "weighted mean of the panel's other scores (e.g. holistic-eval.diversity, which rewards any long "
                "reply; a new panel; default: none)"})
    dialogue_features: list[str] | None = field(default=None, metadata={
        "help": "scores of members that score a whole dialogue, each METRIC.SCORE (e.g. fined-eval.overall): a "
                "dialogue then scores the equal-weight mean of the CDF values of its system turns' mean score and of "
                "these, the CDFs those of --reference-dialogues unrated dialogues (a new panel; default: none, a "
                "dialogue scores its system turns' mean score)"})
    reference_dialogues: int = field(default=200, metadata={
        "help": "with --dialogue-features: the unrated dialogues drawn from each of DailyDialog validation and "
                "Topical-Chat valid_freq (under --data-dir) that the dialogue-level CDFs are fitted on"})
    member_checkpoints: list[str] | None = field(default=None, metadata={
        "help": "METRIC=CHECKPOINT for a member that is not its shipped default (repeat the pair for several)"})
    benchmarks: list[str] | None = field(default=None, metadata={
        "help": "registered turn-level benchmarks to fit on (default: every one whose items all have a context, "
                "each release's items once; not with --ratings)"})
    combiner: str = field(default="ranking", metadata={"choices": ("ranking", "rank-mean"), "help": (
        "ranking: the weights trained by the pairwise ranking loss; rank-mean: nothing trained, the mean of the "
        "members' CDF values (weighted by --feature-weights, else equal)")})
    start_weights: str = field(default="correlation", metadata={"choices": ("correlation", "given"), "help": (
        "where the ranking loss starts: correlation, each score's weight in proportion to its Spearman with the "
        "ratings trained on (the mean over the rated sets; none for a negative one: MME-CRS's correlation "
        "re-scaling); given, the weights of --init-from, or --feature-weights (default equal)")})
    temperature: float = field(default=0.05, metadata={
        "help": "of the ranking loss: how far apart two scores must be to count as ordered"})
    pairs_per_set: int = field(default=20000, metadata={
        "help": "item pairs drawn per rated set (all of them when a set has fewer)"})
    quantile_count: int = field(default=257, metadata={"help": "knots of each member score's CDF (a new panel)"})
    scoring_device: str | None = field(default=None, metadata={
        "help": "torch device the members score on (default: cuda if available)"})
    scoring_dtype: str | None = field(default=None, metadata={
        "choices": ("fp32", "bf16", "fp16"), "help": "precision the members compute in (default: each member's own)"})
    scoring_batch_size: int = field(default=32, metadata={"help": "items per forward pass of a member"})
    # TrainingArguments fields whose default differs here: a few weights, thousands of pairs
    per_device_train_batch_size: int = field(default=4096, metadata={
        "aliases": ["--batch-size"], "help": "pairs per batch"})
    learning_rate: float = field(default=0.05, metadata={"help": "of the weights' logits"})
    num_train_epochs: float = field(default=5.0, metadata={"aliases": ["--epochs"], "help": "epochs over the pairs"})

    def check_before_training(self) -> None:
        super().check_before_training()
        if self.ratings is not None and self.benchmarks:
            raise OptionError("--benchmarks fits a panel on registered benchmarks, --ratings on yours: give one")
        if self.init_from is not None and (self.features or self.dialogue_features or self.member_checkpoints
                                           or self.mark_down_only):
            raise OptionError("--init-from keeps its panel's members: leave out --features, --dialogue-features, "
                              "--mark-down-only and --member-checkpoints")
        for option, features in (("--features", self.features), ("--dialogue-features", self.dialogue_features)):
            for feature in features or ():
                if "." not in feature:
                    raise OptionError(f"{option} takes METRIC.SCORE (e.g. quantidce.overall), not {feature!r}")
        features = self.features or DEFAULT_FEATURES
        from hf_dialeval.metrics.panel.configuration_panel import mark_down_only_problem

        problem = mark_down_only_problem(features, self.mark_down_only or ())
        if problem:  # before any member loads (the config checks it again for a checkpoint edited by hand)
            raise OptionError(f"--mark-down-only: {problem}")
        turn_members = {feature.split(".")[0] for feature in features}
        both = sorted(turn_members & {feature.split(".")[0] for feature in self.dialogue_features or ()})
        if both:
            raise OptionError(f"--dialogue-features: {both} already score turns (--features); a member scores "
                              "either turns or whole dialogues")
        if self.feature_weights is not None:
            if not self.features:
                raise OptionError("--feature-weights weighs --features: give --features too")
            if len(self.feature_weights) != len(self.features):
                raise OptionError(f"--feature-weights: {len(self.feature_weights)} given for {len(self.features)} "
                                  "--features; give one weight per feature")
            if not all(weight > 0 for weight in self.feature_weights):
                raise OptionError(f"--feature-weights must all be positive, not {self.feature_weights}")
            if self.combiner == "ranking" and self.start_weights == "correlation":
                raise OptionError("--feature-weights with --combiner ranking are where training starts: give "
                                  "--start-weights given too (the default starts from the scores' correlations)")
        for pair in self.member_checkpoints or ():
            if "=" not in pair:
                raise OptionError(f"--member-checkpoints takes METRIC=CHECKPOINT, not {pair!r}")
