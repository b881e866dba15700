"""AppTest runs pages in this process: put app/ (for `lab`) on the import path."""
