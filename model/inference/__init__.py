"""Using a trained model: greedy and beam decoding, translation, evaluation and metrics."""
