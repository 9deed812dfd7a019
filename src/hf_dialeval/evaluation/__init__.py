"""Meta-evaluation: correlations with people and their statistics, comparisons, the leaderboard, the perturbation
checklist, plots and throughput."""
