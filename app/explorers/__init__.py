"""The explorers' panels: the grid and head views, the /gpt walk, the /reversal answer, the input checks."""
