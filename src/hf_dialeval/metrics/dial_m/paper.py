"""The published numbers of Dial-M (Dey & Desarkar 2023), printed beside ours by ``hf-dialeval benchmark``."""

# Dey & Desarkar 2023, Table 1 (rows 12-16) and Table 2. The paper correlates the raw loss (lower is better); the
# exposed score is its negation, so the signs here are flipped (the magnitudes are the paper's).
_TABLE_1 = {  # row: {benchmark: (pearson, spearman)} of the raw loss
    "dial-m": {"usr-topical": (-0.432, -0.463), "usr-persona": (-0.464, -0.486),
               "predictive-engage": (-0.570, -0.592), "holistic-context": (-0.590, -0.598)},
    "dial-m:random-masking": {"usr-topical": (-0.320, -0.316), "usr-persona": (-0.359, -0.345),
                              "predictive-engage": (-0.549, -0.547), "holistic-context": (-0.607, -0.630)},
    "dial-m:no-pre-training": {"usr-topical": (-0.391, -0.429), "usr-persona": (-0.443, -0.489),
                               "predictive-engage": (-0.556, -0.586), "holistic-context": (-0.567, -0.583)},
    "dial-m:no-fine-tuning": {"usr-topical": (-0.290, -0.282), "usr-persona": (-0.288, -0.258),
                              "predictive-engage": (-0.550, -0.549), "holistic-context": (-0.592, -0.613)},
    "dial-m:untrained": {"usr-topical": (-0.248, -0.248), "usr-persona": (-0.154, -0.144),
                         "predictive-engage": (-0.508, -0.535), "holistic-context": (-0.540, -0.552)},
}
_DIMENSION = {"usr-topical": "Overall", "usr-persona": "Overall", "predictive-engage": "Engagement",
              "holistic-context": "Coherence"}
_TABLE_2 = {  # sub-dimension: {benchmark: (pearson, spearman)} of the raw loss
    "Understandable": {"usr-topical": (-0.35, -0.40), "usr-persona": (-0.18, -0.14)},
    "Natural": {"usr-topical": (-0.37, -0.40), "usr-persona": (-0.28, -0.28)},
    "Maintains Context": {"usr-topical": (-0.37, -0.40), "usr-persona": (-0.40, -0.39)},
    "Engaging": {"usr-topical": (-0.43, -0.45), "usr-persona": (-0.33, -0.34)},
    "Uses Knowledge": {"usr-topical": (-0.35, -0.37), "usr-persona": (-0.34, -0.37)},
}
PAPER_RESULTS: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
for _row, _benchmarks in _TABLE_1.items():
    for _benchmark, (_r, _rho) in _benchmarks.items():
        PAPER_RESULTS[(_row, _benchmark)] = {_DIMENSION[_benchmark]: {"pearson": -_r, "spearman": -_rho}}
for _dimension, _benchmarks in _TABLE_2.items():
    for _benchmark, (_r, _rho) in _benchmarks.items():
        PAPER_RESULTS[("dial-m", _benchmark)][_dimension] = {"pearson": -_r, "spearman": -_rho}
