"""The data layer: the dialogue data model and its validation, the corpora, the human-judgement benchmarks."""
