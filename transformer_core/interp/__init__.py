"""Interpretability: traces of attention, head scores, one query step by step."""
