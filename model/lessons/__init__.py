"""What the pages demonstrate, computed with the model's own code: worked examples, probes, masks, dropout, the optimiser, complexity, the paper's tables."""
