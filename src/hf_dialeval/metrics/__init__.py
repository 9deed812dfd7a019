"""The metrics, one package each: its config, model, Trainer, data construction, metric class and shipped default, and
its registry entry."""
