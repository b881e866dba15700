"""Training: tasks, the trainer and its events, LR schedules, evaluation, capped background runs."""
