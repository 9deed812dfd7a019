"""Meta-evaluation: a metric's correlations with people (``meta_evaluation``) and their statistics (``statistics``),
comparing two metrics, the leaderboard, the perturbation checklist and plots."""
