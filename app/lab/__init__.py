"""Shared UI helpers for the Attention Lab pages: resources, figures, URL state."""
