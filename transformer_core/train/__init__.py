"""Training: tasks (a Protocol), the trainer and its events, LR schedules, evaluation,
presets (every default), and runs trained in worker processes behind a box-wide queue."""
