"""The classroom: class sessions a lecturer leads, the push and mirrors that keep followers in step, tours."""
