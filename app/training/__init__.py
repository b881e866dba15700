"""/train's side of a run: starting, listing and following runs, and the snapshot scrubber."""
