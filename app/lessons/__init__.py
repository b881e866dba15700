"""The lesson pages' maths, one module per lesson, beside the app.

- `lessons.basics`: /basics, queries, keys and values worked by hand
- `lessons.positions`: /positions, sinusoidal codes, RoPE, ALiBi, learned tables
- `lessons.variance`: /variance, why scores are divided by sqrt(d_k)
- `lessons.training`: /variance's last section, warm-up schedules and label smoothing

Each module holds its lesson's worked examples (the page's inputs) and small pure
functions returning numpy arrays or frozen dataclasses of them, built on the library's
own functions (`transformer_core.attention`, `.positional`, `.train.schedules`).
"""
