"""The published numbers of FineD-Eval (Zhang et al. 2022), printed beside ours by ``hf-dialeval benchmark``."""

#: FineD-Eval's Spearman correlations on FED (paper Table 3, Con/Inq/Err from Table 8), per FED dimension:
#: FineD-Eval_mu, and the sub-metric rows (M^Coh, M^Lik, M^Top, M^Coh + M^Lik).
_FED_COLUMNS = ("Coherent", "Understanding", "Flexible", "Likeable", "Informative", "Depth", "Diverse", "Overall")
PAPER_FED_SPEARMAN = {
    "fined-eval": dict(zip(_FED_COLUMNS, (57.66, 57.37, 55.94, 64.91, 66.84, 66.22, 59.59, 66.15)))
    | {"Consistent": 44.58, "Inquisitive": 45.48, "Error recovery": 50.89},
    "fined-eval:coherence": dict(zip(_FED_COLUMNS, (52.86, 52.35, 43.87, 47.71, 42.84, 40.54, 36.43, 53.02))),
    "fined-eval:likability": dict(zip(_FED_COLUMNS, (42.91, 42.15, 37.08, 52.23, 49.89, 41.36, 36.52, 48.83))),
    "fined-eval:topic_depth": dict(zip(_FED_COLUMNS, (23.25, 25.87, 36.04, 36.93, 46.63, 56.53, 53.38, 36.31))),
    "fined-eval:coherence+likability": dict(zip(_FED_COLUMNS, (57.61, 57.13, 48.77, 61.30, 57.20, 49.94, 44.29, 61.35))),
}
#: (metric or sub-metric row, benchmark) -> {dimension: {"spearman": value}}, printed beside ours.
PAPER_RESULTS = {
    (name, "fed-dialogue"): {dimension: {"spearman": value / 100} for dimension, value in values.items()}
    for name, values in PAPER_FED_SPEARMAN.items()
}
