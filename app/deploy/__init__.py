"""Serving a class on one box: `attention-lab serve` (N app processes behind nginx) and
`attention-lab check` (what each way of serving still lacks)."""
