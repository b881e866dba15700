"""/bert in AppTest: the page's numbers are the library's (both models' guesses at the blanks, the
share of each head's weight on later keys, the held-out accuracies), and it opens on the head
that reads ahead the most."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from tests.app.figures import charts, heatmaps, tables
from transformer_core.interp.fill import fill_masks, future_share, left_guesses, mark_masks
from transformer_core.io import load_corpus
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.train.mlm import MaskedLanguageModelTask, fill_accuracy, held_out_blanks

ROOT = Path(__file__).resolve().parents[2]
TEXT = "import s[MASK]s, then ret[MASK]rn"


def open_bert(query_params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "Home.py"), default_timeout=300)
    at.switch_page("views/bert.py")
    for key, value in query_params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_page_shows_the_librarys_guesses_heads_and_accuracies() -> None:
    at = open_bert({"text": TEXT})
    bert, gpt = load_checkpoint("bert-char"), load_checkpoint("gpt-rope")
    text = mark_masks(TEXT)
    fill = fill_masks(bert.model, bert.tokenizer, text)
    left = left_guesses(gpt.model, gpt.tokenizer, text, [g.position for g in fill.guesses])
    shown = tables(at)
    guesses = shown["bert_guesses"]
    assert guesses["position"].tolist() == [8, 20] == [g.position for g in fill.guesses]
    for row, g, gl in zip(guesses.itertuples(), fill.guesses, left, strict=True):
        assert row[3].startswith(f"'{g.best}' {g.candidates[0][1]:.0%}")
        assert row[4].startswith(f"'{gl.best}' {gl.candidates[0][1]:.0%}")
    markdown = " ".join(m.value for m in at.markdown)
    assert f"BERT fills in: `{fill.filled}`" in markdown and fill.filled == "import sys, then return"
    ahead = future_share(fill.trace.attention["self"])
    layer, head = np.unravel_index(ahead.argmax(), ahead.shape)  # the page opens on it
    assert at.query_params["layer"] in (str(layer), [str(layer)])
    assert at.query_params["head"] in (str(head), [str(head)])
    percents = shown["bert_ahead"].map(lambda v: float(str(v).rstrip("%"))).to_numpy()
    np.testing.assert_allclose(percents, np.round(100 * ahead, 1), atol=0.051)
    maps = heatmaps(charts(at)["bert_self_grid"])
    np.testing.assert_allclose(maps[0], fill.trace.attention["self"][0, 0], atol=2e-4)
    task = MaskedLanguageModelTask.from_text(load_corpus())
    blanks = held_out_blanks(task)
    measured = shown["bert_measured"]["hidden characters guessed right"].tolist()
    expected = [fill_accuracy(task, m.model, m.tokenizer, blanks) for m in (bert, gpt)]
    assert [float(v.rstrip("%")) for v in measured[:2]] == [round(100 * e, 1) for e in expected]


def test_without_a_blank_the_page_says_how_to_hide_one() -> None:
    at = open_bert({"text": "no blank here"})
    assert any("Nothing is hidden yet" in i.value for i in at.info)
    assert "bert_guesses" not in tables(at) and "bert_self_grid" in charts(at)
