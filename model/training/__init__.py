"""Training and its files: the main loop, run files, checkpoints, export, model cards, the schedule and label smoothing, the Table 3 study runner."""
