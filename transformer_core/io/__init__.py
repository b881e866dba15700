"""Input and output: character tokenizer, corpora and reversal strings, checkpoints."""
