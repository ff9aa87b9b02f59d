"""Training and its files. `python -m model.training.train` is the trainer: train.py holds its main loop, whose
steps are Trainer's methods (steps.py); options.py its command line, tasks.py what it trains (a translation or
language-model task, or a family member), faults.py how a failing run ends, averaging.py checkpoint averaging.
Around it: run files, checkpoints, export and model cards, the schedule and label smoothing, the standby trainer,
the cost estimate, and the Table 3 study runner."""
