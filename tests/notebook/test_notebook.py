"""The lab in a notebook (attention_lab.notebook): the widgets draw exactly a trace's weights
with the pages' spec builders, a click on a grid's head opens it, the walk ends on the weights,
other libraries' attention (TransformerLens, Hugging Face) shows the lab's own numbers, bad
input is refused by name, and a view keeps as one offline HTML file. The example notebooks in
docs/notebooks run in a real kernel."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attention_lab.charts.specs import values
from attention_lab.notebook import attention_of, show, show_attentions, show_transformer_lens, to_html
from attention_lab.notebook.attention import MAX_TOKENS, AttentionSet, of_attentions
from tests.support.gpt2 import random_gpt2, train_bpe
from tests.support.optional import installed
from transformer_core.interp import trace_gpt, trace_seq2seq
from transformer_core.io.checkpoint import load_checkpoint
from transformer_core.io.export_tl import export_transformer_lens, load_hooked_transformer
from transformer_core.io.importers import import_model

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))
TEXT = "def f(x): return x + x"
TOL = 1e-5
SPEC = re.compile(r'<script type="application/json" data-spec="(s\d+)">(.*?)</script>')  # one in a file


def head_values(view, kind: str, layer: int, head: int) -> np.ndarray:
    view.select(kind=kind, layer=layer, head=head)
    return values(view.large.spec)[0]


def test_the_notebook_package_imports_without_streamlit() -> None:
    """A kernel that shows attention never starts Streamlit's machinery."""
    code = "import sys, attention_lab.notebook.widget; print('streamlit' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_gpt_view_draws_the_traces_weights_and_a_click_opens_a_head() -> None:
    ckpt = load_checkpoint("gpt-rope")
    trace = trace_gpt(ckpt.model, ckpt.tokenizer, TEXT)
    view = show(trace)
    d_k = ckpt.config.d_model // ckpt.config.n_heads
    weights = trace.attention["self"]  # (L, H, T, T)
    grid = np.stack(values(view.grid.spec)).reshape(weights.shape)
    assert np.abs(grid - weights).max() <= 0.5e-4 + 1e-7  # the grid travels in steps of 1e-4
    assert view.grid.spec["x"] == trace.tokens and view.grid.spec["clickable"]
    view.grid.head = {"layer": 2, "head": 3, "at": 1}  # what a click in the browser sends
    assert view.grid.spec["selected"] == [2, 3]
    assert view.large.spec["title"].startswith("Layer 2 head 3")
    assert np.array_equal(values(view.large.spec)[0], weights[2, 3].astype(np.float32))
    query = view.query.value
    assert query == len(TEXT) - 1  # the last query walks first
    view.next.click()
    assert view.step == 1 and view.walk_chart.spec["title"].endswith(f"step 2 of 6: × 1/√{d_k}")
    for _ in range(6):
        view.next.click()
    assert view.next.disabled and view.walk_chart.spec["title"].endswith("weight w")
    assert np.allclose(values(view.walk_chart.spec)[0], weights[2, 3, query], atol=1e-7)


def test_a_reversal_view_has_every_kind_and_opens_each() -> None:
    ckpt = load_checkpoint("reverse-sinusoidal")
    trace = trace_seq2seq(ckpt.model, ckpt.tokenizer, "attention")
    view = show(trace, layer=1, head=2)
    assert [v for _, v in view.kind_picker.options] == ["encoder_self", "decoder_self", "cross"]
    view.kind_picker.value = "cross"
    assert view.kind == "cross" and view.grid.spec["y"] == trace.target_tokens
    assert view.grid.spec["x"] == trace.source_tokens
    for kind in ("encoder_self", "decoder_self", "cross"):
        assert np.array_equal(head_values(view, kind, 1, 2), trace.attention[kind][1, 2].astype(np.float32))


def test_a_checkpoint_and_text_trace_as_the_cli_does() -> None:
    ckpt = load_checkpoint("gpt-alibi")
    ours = trace_gpt(ckpt.model, ckpt.tokenizer, TEXT).attention["self"]
    assert np.allclose(attention_of("gpt-alibi", TEXT).maps["self"], ours, atol=1e-7)
    assert attention_of("gpt-alibi", TEXT).scheme == "alibi"


@pytest.fixture(scope="module")
def transformer_lens(tmp_path_factory):
    return installed("transformer_lens", "requirements-interop.txt", tmp_path_factory)


def test_a_transformer_lens_cache_shows_the_labs_own_numbers(transformer_lens, tmp_path) -> None:
    """The exported model's ActivationCache, drawn through the adapter: every head equals the
    lab's trace of the same model within 1e-5."""
    ckpt = load_checkpoint("gpt-learned")
    model = load_hooked_transformer(
        export_transformer_lens(ckpt.model, tmp_path / "tl", tokenizer=ckpt.tokenizer)
    )
    _, cache = model.run_with_cache(model.to_tokens(TEXT, prepend_bos=False))
    view = show_transformer_lens(cache, model.to_str_tokens(TEXT, prepend_bos=False))
    ours = trace_gpt(ckpt.model, ckpt.tokenizer, TEXT).attention["self"]
    assert view.grid.spec["x"] == [c.replace(" ", "␣") for c in TEXT]  # labelled as the lab labels them
    n_layers, n_heads = ours.shape[:2]
    worst = max(
        np.abs(head_values(view, "self", la, h) - ours[la, h]).max()
        for la in range(n_layers)
        for h in range(n_heads)
    )
    assert worst < TOL


@pytest.fixture(scope="module")
def transformers(tmp_path_factory):
    return installed("transformers", "requirements-import.txt", tmp_path_factory)


def test_hugging_face_attentions_show_the_labs_own_numbers(transformers, tmp_path) -> None:
    """A random GPT-2 (output_attentions=True) drawn through the adapter equals the lab's
    trace of the same weights imported, head by head, within 1e-5."""
    folder = tmp_path / "gpt2"
    _, vocab_size = train_bpe(folder)
    hf = random_gpt2(transformers, vocab_size)
    hf.save_pretrained(folder)
    ckpt = load_checkpoint(import_model(folder, "hf", tmp_path / "imported").out)
    text = "hello world, the sea"
    ids = ckpt.tokenizer.encode(text)
    with torch.no_grad():
        attentions = hf(torch.tensor([ids]), output_attentions=True).attentions
    trace = trace_gpt(ckpt.model, ckpt.tokenizer, text)
    view = show_attentions(attentions, trace.tokens)
    assert len(trace.tokens) == len(ids) < len(text)  # BPE: fewer tokens than characters
    n_layers, n_heads = trace.attention["self"].shape[:2]
    for la in range(n_layers):
        for h in range(n_heads):
            assert np.abs(head_values(view, "self", la, h) - trace.attention["self"][la, h]).max() < TOL


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: of_attentions([np.full((1, 2, 3, 3), 1 / 3)], ["a", "b"]),
            "does not match 2 query and 2 key",
        ),
        (lambda: of_attentions([np.full((1, 2, 2, 2), np.nan)], ["a", "b"]), "NaN or infinite"),
        (lambda: of_attentions((), ["a"]), "output_attentions=True"),
        (lambda: of_attentions([np.full((1, 2, 2, 2), 0.5)], ["a", "b"], batch=3), "batch index 3"),
        (lambda: of_attentions([np.full((2, 2), 0.5)], ["a", "b"]), "expected (batch, heads"),
        (lambda: of_attentions([np.full((1, 1, 2, 2), 0.5)], ["a", "b"], kind="sideways"), "kind: one of"),
        (lambda: attention_of(123), "show() takes a lab trace"),
        (lambda: attention_of("gpt-rope"), "give the text to trace"),
        (lambda: show_transformer_lens({}, ["a"]), "no attention pattern"),
        (
            lambda: of_attentions(
                [np.zeros((1, 1, MAX_TOKENS + 1, MAX_TOKENS + 1))], ["x"] * (MAX_TOKENS + 1)
            ),
            "at most",
        ),
    ],
)
def test_bad_input_is_refused_by_name(call, message) -> None:
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    assert message in str(err.value)


def test_a_head_out_of_range_is_refused_and_the_view_stays() -> None:
    view = show("gpt-rope", "hello")
    with pytest.raises(ValueError, match=r"layer 0-3 and head 0-3, got 4.0"):
        view.select(layer=4, head=0)
    assert view.grid.spec["selected"] == [0, 0]


def test_a_view_keeps_as_one_offline_html_file(tmp_path) -> None:
    """Every chart's spec inside, the chart code inlined, nothing fetched from a network."""
    view = show("gpt-rope", TEXT, layer=1, head=2)
    path = view.to_html(tmp_path / "view.html")
    page = path.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # no script or style from elsewhere
    assert "function drawChart(component)" in page and "startOffline(" in page
    specs = {name: json.loads(spec) for name, spec in SPEC.findall(page)}
    heads = next(s for s in specs.values() if "1.2" in s and "0.0" in s)
    assert len(heads) == 16  # every head of the 4 x 4 model, each drawn large on a click
    assert np.array_equal(values(heads["3.1"])[0], attention_of("gpt-rope", TEXT).maps["self"][3, 1])
    assert sum(1 for s in specs.values() if s.get("kind") == "bars") == 6  # the walk's steps
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle and "startOffline(" in bundle["text/html"]
    assert to_html("reverse-sinusoidal", tmp_path / "r.html", "hello").stat().st_size > 50_000


def test_an_adapter_view_has_no_walk_and_says_so_in_its_file(tmp_path) -> None:
    """Hugging Face weights carry no q and k: the walk is hidden, the maps are all there."""
    rng = np.random.default_rng(0)
    w = rng.random((2, 1, 3, 4, 4)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    view = show_attentions(list(w), list("abcd"))
    assert view.walk_box.layout.display == "none"
    assert isinstance(view.attention, AttentionSet) and view.attention.maps["self"].shape == (2, 3, 4, 4)
    page = view.to_html(tmp_path / "a.html").read_text()
    assert 'class="lab-steps"' not in page and 'class="lab-linked"' in page


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_the_example_notebooks_run_in_a_real_kernel(notebook: Path, tmp_path: Path) -> None:
    """nbclient runs every cell in an ipykernel (its own process: the browser tests keep an
    event loop here); no cell errs, and what the notebooks print says what they claim."""
    code = (
        "import sys, nbformat; from nbclient import NotebookClient\n"
        "nb = nbformat.read(sys.argv[1], as_version=4)\n"
        "where = {'metadata': {'path': sys.argv[2]}}\n"
        "NotebookClient(nb, timeout=600, kernel_name='python3', resources=where).execute()\n"
        "nbformat.write(nb, sys.argv[3])\n"
    )
    out = tmp_path / "executed.ipynb"
    run = subprocess.run(
        [sys.executable, "-c", code, str(notebook), str(tmp_path), str(out)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-3000:]
    import nbformat

    cells = nbformat.read(out, as_version=4).cells
    outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    widgets = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widgets and all("startOffline(" in o["data"]["text/html"] for o in widgets)
    if notebook.stem == "researcher-walk":  # nbconvert, asked for HTML first: the offline charts
        from nbconvert import HTMLExporter
        from traitlets.config import Config

        config = Config({"NbConvertBase": {"display_data_priority": ["text/html", "text/plain"]}})
        converted, _ = HTMLExporter(config=config).from_filename(str(out))
        assert converted.count("startOffline(document") == 2
        before, after = map(float, re.search(r": ([\d.]+) with head 1.1, ([\d.]+) without", printed).groups())
        assert before > after + 0.1  # the induction head carries the prediction
        assert float(re.search(r"induction target: ([\d.]+)", printed)[1]) > 0.5
    if notebook.stem == "transformer-lens":
        assert float(re.search(r"trace: ([\d.e-]+)", printed)[1]) < TOL


def test_a_bert_view_fills_its_blanks_reads_both_ways_and_says_so_in_the_walk() -> None:
    view = show("bert-char", "The ret[MASK]rn")
    assert view.attention.title == "bert-char: 'The ret█rn' → 'The return'"
    assert view.grid.spec["x"][7] == "█"  # the blank, as `trace` marks it
    weights = view.attention.maps["self"]
    assert np.triu(weights, 1).sum(axis=(-1, -2)).min() > 0  # every head reads later keys too
    for _ in range(3):
        view.next.click()
    assert view.says.value.startswith("Step 4 of 6: nothing is masked")


def test_a_notebook_output_keeps_fewer_large_maps_than_a_file(tmp_path) -> None:
    """The HTML saved beside the widget in the .ipynb stays small (the opened head only, for
    200 tokens); to_html keeps every head and says nothing is missing."""
    rng = np.random.default_rng(1)
    w = rng.random((4, 1, 4, 200, 200)).astype(np.float32)  # 4 layers of (batch, heads, T, T)
    w /= w.sum(-1, keepdims=True)
    view = show_attentions(list(w), [f"t{i}" for i in range(200)], layer=2, head=1)
    output = view._repr_html_()
    assert "15 heads&#x27; large maps are left out here" in output  # escaped in the page
    specs = [json.loads(spec) for _, spec in SPEC.findall(output)]
    assert [list(s) for s in specs if "2.1" in s] == [["2.1"]]
    page = view.to_html(tmp_path / "big.html").read_text()
    assert "left out" not in page and len(page) > 10 * len(output) // 4
