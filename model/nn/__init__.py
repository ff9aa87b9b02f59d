"""The Transformer as the paper describes it (sections 3.1-3.5): configuration, attention, linear layers, layers,
masks, dropout, the full model, and the device it runs on; fast/ holds the fast paths some of them hand work to."""
