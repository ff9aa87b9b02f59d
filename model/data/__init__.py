"""What the models learn from: the English-Korean teaching corpus and its grammar, tokenizers, vocabularies, and the training tasks."""
