"""The inference layer: the metric API (DialogueMetric, ScoreOutput, load_metric), running a model over items (devices,
precision, batching), streaming large inputs, signatures and the score cache."""
