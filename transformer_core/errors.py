"""Errors with messages meant for people: each names what was wrong and how to fix it."""


class ConfigError(ValueError):
    """A model or training configuration has a bad field; the message names the field."""


class InputError(ValueError):
    """Text given to a model cannot be used (empty, too long, ...)."""


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated, corrupt or does not match its config."""
