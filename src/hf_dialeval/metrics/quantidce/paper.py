"""The published numbers of QuantiDCE (Ye et al. 2021), printed beside ours by ``hf-dialeval benchmark``."""

#: Ye et al. 2021, Table 1 (ConvAI2, BERT-base), printed beside ours by ``hf-dialeval benchmark``.
PAPER_RESULTS = {("quantidce", "grade-convai2"): {"Coherence": {"pearson": 0.554, "spearman": 0.554, "kendall": 0.395}}}
