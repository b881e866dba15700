"""The page frame every page shares: URL state, projector mode, safe text, table style."""
