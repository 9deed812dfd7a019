"""The published numbers of RADE (Shi et al. 2023), printed beside ours by ``hf-dialeval benchmark``."""

#: Shi et al. 2023, Table 3 (test splits; RADE PT and TS rows, the ablations, and baselines as ``rade:<baseline>``
#: rows) and Table 4 (USR, zero-shot), printed beside ours by ``hf-dialeval benchmark``.
_TABLE_3 = {
    "rade-chitchat": {"rade": (0.601, 0.569, 0.409), "rade:pt": (0.472, 0.491, 0.334),
                      "rade:no-ranking": (0.503, 0.514, 0.353), "rade:no-generation": (0.451, 0.482, 0.332),
                      "rade:bert-mlp": (0.304, 0.301, 0.192), "rade:bart-mlp": (0.431, 0.440, 0.312),
                      "rade:grade": (0.491, 0.434, 0.300), "rade:bertscore": (0.296, 0.243, 0.213)},
    "rade-emotion": {"rade": (0.863, 0.849, 0.685), "rade:pt": (0.650, 0.601, 0.427),
                     "rade:no-ranking": (0.773, 0.756, 0.613), "rade:no-generation": (0.751, 0.740, 0.602),
                     "rade:bert-mlp": (0.501, 0.537, 0.373), "rade:bart-mlp": (0.412, 0.447, 0.356),
                     "rade:grade": (0.549, 0.568, 0.398), "rade:bertscore": (0.167, 0.243, 0.173)},
    "rade-persona": {"rade": (0.470, 0.465, 0.347), "rade:pt": (0.386, 0.390, 0.285),
                     "rade:no-ranking": (0.406, 0.403, 0.313), "rade:no-generation": (0.387, 0.372, 0.272),
                     "rade:bert-mlp": (0.331, 0.360, 0.251), "rade:bart-mlp": (0.310, 0.335, 0.242),
                     "rade:grade": (-0.031, -0.005, -0.030), "rade:bertscore": (0.278, 0.292, 0.196)},
}
_TABLE_4 = {
    "usr-topical-reference": {"rade": (0.480, 0.466), "rade:grade": (0.200, 0.217), "rade:usr": (0.412, 0.423),
                              "rade:bertscore": (0.298, 0.325)},
    "usr-persona-reference": {"rade": (0.451, 0.465), "rade:grade": (0.358, 0.352), "rade:usr": (0.440, 0.418),
                              "rade:bertscore": (0.152, 0.122)},
}
PAPER_RESULTS = {
    **{(row, benchmark): {"Overall": {"pearson": r, "spearman": rho, "kendall": tau}}
       for benchmark, rows in _TABLE_3.items() for row, (r, rho, tau) in rows.items()},
    **{(row, benchmark): {"Overall": {"pearson": r, "spearman": rho}}
       for benchmark, rows in _TABLE_4.items() for row, (r, rho) in rows.items()},
}
