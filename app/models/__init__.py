"""Models loaded once per (checkpoint, device), and the cached compute every page shares."""
