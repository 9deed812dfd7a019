"""The published numbers of HolisticEval (Pang et al. 2020), printed beside ours by ``hf-dialeval benchmark``."""

#: Pang et al. 2020, Table 3 (context coherence) and Table 4 (fluency): GPT-2 without and with fine-tuning,
#: as ``holistic-eval:<row>``, and the paper's baseline; each of the one score it reports (not of ``overall``, which
#: mixes that score with the others).
PAPER_RESULTS = {
    ("holistic-eval", "holistic-context"): {
        "Coherence": {"pearson": 0.67, "spearman": 0.76, "score": "context_coherence"}},
    ("holistic-eval:no-fine-tuning", "holistic-context"): {
        "Coherence": {"pearson": 0.59, "spearman": 0.65, "score": "context_coherence"}},
    ("holistic-eval:ruber-bert", "holistic-context"): {
        "Coherence": {"pearson": 0.47, "spearman": 0.51, "score": "context_coherence"}},
    ("holistic-eval", "holistic-fluency"): {"Fluency": {"pearson": 0.82, "spearman": 0.81, "score": "fluency"}},
    ("holistic-eval:no-fine-tuning", "holistic-fluency"): {
        "Fluency": {"pearson": 0.43, "spearman": 0.32, "score": "fluency"}},
}
