"""/cost runs headless (AppTest): chapter 004's figures on screen by default, the counts following
the sliders, bad links named, and a forward pass timed."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.figures import charts, tables

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "app" / "Home.py")


@pytest.fixture(autouse=True)
def _cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTENTION_LAB_DEVICE", "cpu")


def open_cost(**params: object) -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=60)
    at.run()
    for key, value in params.items():
        at.query_params[key] = str(value)
    at.switch_page("views/cost.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def number(shown: object) -> int:
    """A table cell as shown ("380,064") as a number."""
    return int(str(shown).replace(",", ""))


def page_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_the_defaults_are_chapter_004s_model_and_its_figures() -> None:
    at = open_cost()
    assert metric(at, "parameters of the built model") == "380,064"
    text = page_text(at)
    assert "**526,368**" in text and "**380,064**" in text
    assert "+147,456: the FFN's weights written twice" in text
    assert "-1,152: FFN biases" in text
    chapter = tables(at)["cost_chapter"]
    assert sum(map(number, chapter["chapter's estimate"])) == 526_368
    assert sum(map(number, chapter["built model"])) == 380_064
    flops = tables(at)["cost_flops"]
    assert number(flops.loc["one block", "chapter's count"]) == 1_125_120
    ours = 4 * 100 * 96 + 8 * 10 * 96**2 + 4 * 10 * 96 * 192
    assert number(flops.loc["one block", "FLOPs (2 per multiply-add)"]) == ours
    assert metric(at, "one layer's weights") == "1.6 kB"
    assert number(tables(at)["cost_memory"].loc["every T × T weight", "bytes, one layer"]) == 1_600
    assert "T = 192" in text  # attention passes the FFN at d_ff
    baselines = tables(at)["cost_baselines"]
    assert number(baselines.loc["reverse-sinusoidal", "chapter 004's figure"]) == 380_064
    assert number(baselines.loc["reverse-gru", "parameters here"]) > 0
    specs = charts(at)
    assert {s["title"] for s in specs.values()} >= {
        "FLOPs of one block, by part",
        "Attention weights kept by one layer",
    }


def test_t_2048_gives_the_chapters_67_mb_and_a_window_cuts_it() -> None:
    at = open_cost(T=2048, window=256)
    assert metric(at, "one layer's weights") == "67.1 MB"
    assert number(tables(at)["cost_memory"].loc["every T × T weight", "bytes, one layer"]) == 67_108_864
    memory = tables(at)["cost_memory"]
    assert memory.loc["every T × T weight", "one layer"] == "67.1 MB"
    assert memory.loc["sliding window W = 256", "one layer"] == "8.39 MB"
    assert memory.loc["fused kernel", "one layer"] == "32.8 kB"
    memory_chart = next(s for s in charts(at).values() if s["title"].startswith("Attention"))
    assert [s["name"] for s in memory_chart["panels"][0]["series"]][1] == "sliding window W = 256"


def test_sliders_rebuild_the_count_and_bad_settings_are_named() -> None:
    at = open_cost()
    at.slider(key="cost_d_model").set_value(128).run()
    at.toggle(key="cost_attn_bias").set_value(True).run()
    assert not at.exception
    d, df, V, N = 128, 192, 29, 2
    ffn = d * df + df + df * d + d
    expected = 2 * V * d + V * d + 3 * N * (4 * d * d + 4 * d) + 2 * N * ffn + 5 * N * 2 * d
    assert metric(at, "parameters of the built model") == f"{expected:,}"
    assert at.select_slider(key="cost_heads").options == ["1", "2", "4", "8", "16", "32"]  # divisors of 128
    odd = open_cost(heads=5)  # 96 is not divisible by 5: named, and 4 heads shown
    assert any("`heads=5` is not available with this d_model" in i.value for i in odd.info)
    assert metric(odd, "parameters of the built model") == "380,064"
    rope = open_cost(d_model=24, heads=8, positions="rope")  # d_head 3: RoPE turns pairs of dimensions
    assert any("build no model" in e.value for e in rope.error)
    assert not rope.exception


def test_an_absurd_link_is_named_and_the_default_kept() -> None:
    at = open_cost(T=100000, arch="bert")
    notices = " ".join(w.value for w in at.warning)
    assert "`T=100000` (showing 10)" in notices and "`arch=bert` (showing seq2seq)" in notices
    assert metric(at, "parameters of the built model") == "380,064"


def test_a_forward_pass_is_timed_and_compared_with_its_flops() -> None:
    at = open_cost()
    next(b for b in at.button if b.label == "Time one forward pass").click().run()
    assert not at.exception
    measured = metric(at, "measured")
    assert measured.endswith(" ms") and float(measured.split()[0]) > 0
    assert float(metric(at, "predicted from the FLOPs").split()[0]) > 0


def test_a_size_too_large_to_time_says_why() -> None:
    at = open_cost(T=8192, d_model=1024, d_ff=4096, layers=24)
    assert any("past the 4,096 positions timed here" in i.value for i in at.info)
    assert not [b for b in at.button if b.label == "Time one forward pass"]


def test_the_kv_cache_section_writes_both_ways_and_opens_a_step() -> None:
    at = open_cost(kv_model="gpt-sinusoidal", kv_new=12, kv_step=5, kv_layer=1, kv_head=2)
    assert float(metric(at, "largest logit gap")) < 1e-4
    assert metric(at, "per token, with the cache").endswith(" ms")
    prompt = len("The attention")
    # the 12th token is written, never fed: the cache ends with the prompt and 11 tokens, as the text says
    end = f"{2 * 4 * (prompt + 11) * 128 * 4 / 1000:.3g} kB"
    assert metric(at, "cache at the end") == end
    assert any(f"{end} for {prompt + 11} positions here" in m.value for m in at.markdown)
    specs = charts(at)
    keys = specs["cost_kv_keys_fig"]
    assert keys["title"] == f"K in the cache, layer 1 head 2: {prompt + 4} rows, the last one new"
    assert specs["cost_kv_time_fig"]["title"] == "Time per written token, measured"
    assert any(
        f"Step 5 feeds 1 position with the cache and {prompt + 4} without" in c.value for c in at.caption
    )
    at.slider(key="cost_kv_step").set_value(1).run()
    assert not at.exception
    assert charts(at)["cost_kv_keys_fig"]["title"].startswith(
        f"K in the cache, layer 1 head 2: {prompt} rows"
    )


def test_an_empty_kv_prompt_is_named() -> None:
    at = open_cost()
    at.text_input(key="cost_kv_text").set_value("").run()
    assert not at.exception
    assert any("That prompt cannot be used" in e.value for e in at.error)
