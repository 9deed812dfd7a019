"""Training every metric shares: the options every train command has, TrainingArguments, adapters and the run layout."""
