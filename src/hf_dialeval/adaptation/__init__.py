"""``hf-dialeval adapt``: a metric fine-tuned on a user's own domain by its paper's route, measured before and after
(:mod:`.workflow`), and what it measured as the user reads it (:mod:`.report`)."""
