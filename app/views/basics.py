"""Attention basics (/basics): queries, keys and values worked by hand.

Six short steps, each with its own controls: one query over four keys, masked softmax,
kernel regression, the matrix form, heads as split subspaces, and order blindness.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pandas as pd
import streamlit as st

from attention_lab.charts.specs import WEIGHT_DIGITS, weight_text
from attention_lab.frame import tables
from attention_lab.frame.state import init_state, write_state
from attention_lab.frame.tables import Matrix
from attention_lab.lesson_pages import lesson_charts as lc
from attention_lab.lesson_pages import lesson_views
from attention_lab.lesson_pages.lesson_page import chart_writer, in_range
from attention_lab.lessons import basics as lesson
from attention_lab.lessons import tokens
from transformer_core import CheckpointError

PERM_TOKENS = lesson.PERM_TOKENS
PERMUTATIONS = [",".join(map(str, p)) for p in itertools.permutations(range(len(PERM_TOKENS)))]
HEAD_CHOICES = (1, 2, 4)
SCORE_KEYS = [f"s{r + 1}{j}" for r in range(2) for j in range(4)]  # s10 = row 1, key 0
SCORE_RANGE = (-20.0, 20.0)


P = "basics_"  # session_state prefix; the URL keeps the short names
DEFAULTS = {
    "q": lesson.QKV_QUERY,
    "k1": lesson.QKV_KEYS[0],
    "k2": lesson.QKV_KEYS[1],
    "k3": lesson.QKV_KEYS[2],
    "k4": lesson.QKV_KEYS[3],
    "len1": lesson.PADDED_VALID_LENS[0],
    "len2": lesson.PADDED_VALID_LENS[1],
    "house": lesson.HOUSE_QUERY,
    "sigma": 1.0,
    "width": 1.0,
    "batch": 1,
    "heads": 2,
    "perm": "0,3,2,1",
    "positions": False,
    "block_seed": 42,
    "token_text": "unhappiness",
    **{name: float(lesson.PADDED_SCORES[int(name[1]) - 1][int(name[2])]) for name in SCORE_KEYS},
}
VALID = {
    **{k: in_range(-5.0, 5.0) for k in ("q", "k1", "k2", "k3", "k4")},
    "len1": in_range(1, 4),
    "len2": in_range(1, 4),
    "house": in_range(0.0, 12.0),
    "sigma": in_range(0.1, 5.0),
    "width": in_range(0.25, 5.0),
    "batch": in_range(1, 2),
    "heads": lambda v: v in HEAD_CHOICES,
    "perm": lambda v: v in PERMUTATIONS,
    "block_seed": in_range(0, 9999),
    "token_text": lambda v: 0 < len(v) <= tokens.MAX_TEXT,
    **{name: in_range(*SCORE_RANGE) for name in SCORE_KEYS},
}
init_state(DEFAULTS, VALID, prefix=P)
chart = chart_writer(P)


# Attention(Q, K, V) = softmax(QK^T / sqrt(d_k)) V in plain HTML: st.latex would load KaTeX
# (265 kB and fonts), which holds back the whole page's first drawing.
FORMULA = """<style>
.lab-formula { text-align: center; font-size: clamp(1rem, 4.6vw, 1.45rem); margin: 0.4rem 0 1rem;
  white-space: nowrap;  /* the line fits a phone's width: smaller there */
  font-family: "Latin Modern Roman", "Cambria Math", "STIX Two Math", "Times New Roman", serif; }
.lab-formula .paren { display: inline-block; vertical-align: middle; font-size: 2.3em; line-height: 1;
  font-weight: 200; transform: scaleX(0.6); }
.lab-formula .frac { display: inline-block; vertical-align: middle; text-align: center; line-height: 1.25; }
.lab-formula .frac > span { display: block; padding: 0 0.25em; }
.lab-formula .frac > span + span { border-top: 1.5px solid currentColor; padding-top: 0.1em; }
.lab-formula sup { font-size: 0.6em; }
.lab-formula .root { border-top: 1.5px solid currentColor; padding-left: 0.08em; }
</style><div class="lab-formula">
Attention(<i>Q</i>,&thinsp;<i>K</i>,&thinsp;<i>V</i>)&ensp;=&ensp;softmax<span class="paren">(</span><span
class="frac"><span><i>QK</i><sup>⊤</sup></span><span>√<span
class="root"><i>d</i><sub><i>k</i></sub></span></span></span><span
class="paren">)</span>&thinsp;<i>V</i></div>"""


st.title("Attention basics", anchor=False)
st.markdown(
    "Attention is a soft lookup. A **query** is compared with every **key**; the comparison "
    "scores become weights through a softmax; the answer is the weighted average of the "
    "**values**. Everything on this page is small enough to check by hand."
)

# ---------------------------------------------------------------------------------------
st.header("1 · One query, four keys")
st.markdown(
    "Each token has a one-number key and a two-number value. The score is the plain product "
    "q·k (with one feature, dividing by √d_k = 1 would change nothing). Move the query or a key "
    "and watch the weights and the context vector follow."
)
cols = st.columns(5)
cols[0].number_input("query q", min_value=-5.0, max_value=5.0, step=0.1, key=P + "q", persist_state="session")
for i, token in enumerate(lesson.QKV_TOKENS):
    cols[i + 1].number_input(
        f"key of '{token}'",
        min_value=-5.0,
        max_value=5.0,
        step=0.1,
        key=f"{P}k{i + 1}",
        persist_state="session",
    )
keys = tuple(float(st.session_state[f"{P}k{i + 1}"]) for i in range(4))
res = lesson.retrieve(float(st.session_state[P + "q"]), keys, lesson.QKV_VALUES)
left, right = st.columns([2, 3])
with left:
    tables.show(
        pd.DataFrame(
            {
                "token": lesson.QKV_TOKENS,
                "key": keys,
                "value": [str(v) for v in lesson.QKV_VALUES],
                "score q·k": res.scores,
                "weight": res.weights,
            }
        ),
        key=P + "qkv_table",
        digits=4,
        index=False,
        formats={"key": "{:.1f}", "weight": weight_text},
    )
    st.markdown(f"**context vector** = Σ weight · value = **({res.context[0]:.4f}, {res.context[1]:.4f})**")
    st.caption(
        f"The weights sum to {weight_text(res.weights.sum())}. "
        "Larger scores win, but nobody gets exactly zero."
    )
bars, cloud = lc.retrieval_charts(lesson.QKV_TOKENS, np.asarray(lesson.QKV_VALUES), res.weights, res.context)
with right:
    c1, c2 = st.columns(2)
    with c1:
        chart(bars, "qkv_fig")
    with c2:
        chart(cloud, "qkv_points")

# ---------------------------------------------------------------------------------------
st.header("2 · Masking padded positions")
st.markdown(
    "Sequences in a batch are padded to the same length. A plain softmax hands some weight to "
    "the padding; a masked softmax sets those scores to −∞ first, so padded keys get **exactly "
    "zero** and the real keys share the whole weight. Change the valid lengths or edit the scores."
)
for r in (1, 2):  # one row of the batch: its four scores, then its valid length
    cols = st.columns([1, 1, 1, 1, 1.6], vertical_alignment="bottom")
    for j in range(4):
        cols[j].number_input(
            f"row {r}, key {j}",
            *SCORE_RANGE,
            step=0.1,
            format="%.2f",
            key=f"{P}s{r}{j}",
            persist_state="session",
        )
    cols[4].slider(f"valid length, row {r}", 1, 4, key=f"{P}len{r}", persist_state="session")
scores = np.array([[float(st.session_state[f"{P}s{r}{j}"]) for j in range(4)] for r in (1, 2)])
lens = (int(st.session_state[P + "len1"]), int(st.session_state[P + "len2"]))
plain, masked_w = lesson.masked_rows(scores, lens)
pad = ~lesson.valid_length_mask(lens, 4)
key_labels = [f"k{j}" for j in range(4)]
row_labels = ["row 1", "row 2"]
c1, c2 = st.columns(2)
with c1:
    chart(
        lc.value_heatmap(
            plain, key_labels, row_labels, "plain softmax: padding leaks in", marks=pad, height=300
        ),
        "mask_plain",
    )
    leak = (plain * pad).sum(-1)
    st.caption(
        "Weight wasted on padding: " + ", ".join(f"row {i + 1}: {weight_text(v)}" for i, v in enumerate(leak))
    )
with c2:
    chart(
        lc.value_heatmap(
            masked_w, key_labels, row_labels, "masked softmax: padding gets 0", marks=pad, height=300
        ),
        "mask_masked",
    )
    st.caption(
        "Row sums: "
        + ", ".join(weight_text(s) for s in masked_w.sum(-1))
        + " (renormalised over the real keys)"
    )
c1, _ = st.columns([3, 2])
c1.markdown("**Masked softmax weights**")
tables.show(
    Matrix.of(masked_w, row_labels, key_labels), key=P + "masked_table", digits=WEIGHT_DIGITS, where=c1
)

# ---------------------------------------------------------------------------------------
st.header("3 · Attention without learning: kernel regression")
st.markdown(
    "Guess a house's price from houses nearby. Each known house is a key (its location) and a "
    "value (its price); the new house's location is the query. A **similarity kernel** scores "
    "each key, the scores are normalised to weights, and the prediction is the weighted average "
    "price. The Gaussian kernel is a softmax of −(q−k)²/2σ²: attention with a fixed, hand-made score."
)
c1, c2, c3 = st.columns(3)
c1.slider("query location", 0.0, 12.0, step=0.5, key=P + "house", persist_state="session")
c2.slider("Gaussian width σ", 0.1, 5.0, step=0.05, key=P + "sigma", persist_state="session")
c3.slider("boxcar half-width (|q − k| < w)", 0.25, 5.0, step=0.25, key=P + "width", persist_state="session")
house = float(st.session_state[P + "house"])
kr = lesson_views.kernels(house, float(st.session_state[P + "sigma"]), float(st.session_state[P + "width"]))
fits = kr["fits"]
m1, m2 = st.columns(2)
m1.metric("Gaussian prediction", f"{fits['gaussian'].prediction:.3f}")
if np.isfinite(fits["boxcar"].prediction):
    m2.metric("Boxcar prediction", f"{fits['boxcar'].prediction:.3f}")
else:
    m2.metric("Boxcar prediction", "none")
    m2.caption("No known house lies inside the window, so the boxcar has nothing to average.")
bars, curve = lc.kernel_charts(
    lesson.HOUSE_LOCATIONS,
    lesson.HOUSE_PRICES,
    house,
    {k: f.weights for k, f in fits.items()},
    kr["grid"],
    kr["curves"],
)
c1, c2 = st.columns([0.42, 0.58])
with c1:
    chart(bars, "kernel_fig")
with c2:
    chart(curve, "kernel_curve")
c1, _ = st.columns([3, 2])
tables.show(
    pd.DataFrame(
        {
            "location": lesson.HOUSE_LOCATIONS,
            "price": lesson.HOUSE_PRICES,
            "Gaussian weight": fits["gaussian"].weights,
            "boxcar weight": np.nan_to_num(fits["boxcar"].weights),
        }
    ),
    key=P + "kernel_table",
    digits=WEIGHT_DIGITS,
    where=c1,
    index=False,
    formats={
        "location": "{:.1f}",
        "price": "{:.0f}",
        "Gaussian weight": weight_text,
        "boxcar weight": weight_text,
    },
    bars={"Gaussian weight": (0.0, 1.0), "boxcar weight": (0.0, 1.0)},
)
st.caption("A narrow σ trusts only the closest houses; a wide σ drifts towards the overall average price.")

# ---------------------------------------------------------------------------------------
st.header("4 · Matrix form: many queries at once")
st.markdown("Stack the queries, keys and values as matrices and every comparison becomes one product:")
st.html(FORMULA)
st.markdown(
    "Below is a batch of two sequences, each with 2 queries and 4 key-value pairs in d = 2, so "
    "Q is (2, 2, 2), K and V are (2, 4, 2), the weights (2, 2, 4) and the outputs (2, 2, 2)."
)
st.segmented_control(
    "sequence in the batch",
    [1, 2],
    key=P + "batch",
    persist_state="session",
    format_func=lambda b: f"sequence {b}",
    required=True,
)
b = int(st.session_state[P + "batch"] or 1) - 1
mat = lesson.matrix_attention(lesson.BATCH_Q, lesson.BATCH_K, lesson.BATCH_V)
c1, c2, c3 = st.columns([1, 2, 1])
with c1:
    st.markdown("**Q**")
    tables.show(Matrix.of(lesson.BATCH_Q[b], ["q0", "q1"], ["x", "y"]), key=P + "mat_q", digits=2)
    keys = [f"k{j}" for j in range(4)]
    st.markdown("**K**")  # K and V as two narrow tables, like Q: no column hidden at 1280x720
    tables.show(Matrix.of(lesson.BATCH_K[b], keys, ["x", "y"]), key=P + "mat_k", digits=2)
    st.markdown("**V** (row j belongs to key k_j)")
    tables.show(Matrix.of(lesson.BATCH_V[b], keys, ["x", "y"]), key=P + "mat_v", digits=2)
with c2:
    chart(
        lc.value_heatmap(
            mat.weights[b],
            [f"k{j}" for j in range(4)],
            ["q0", "q1"],
            f"weights of sequence {b + 1}",
            height=300,
        ),
        "mat_fig",
    )
with c3:
    st.markdown("**outputs** = weights · V")
    tables.show(Matrix.of(mat.outputs[b], ["q0", "q1"], ["x", "y"]), key=P + "mat_out", digits=4)
if b == 1:
    st.caption("Key 3 = (5, 5) is far longer than the others: it dominates both queries of this sequence.")

# ---------------------------------------------------------------------------------------
st.header("5 · Multi-head attention: split the features")
st.markdown(
    "Several heads run attention side by side, each on its own slice of the features, and their "
    "outputs are concatenated. In this example tokens 0 and 1 live in the first two coordinates "
    "and tokens 2 and 3 in the last two, so two heads see two different stories. (Real heads get "
    "learned projections instead of fixed slices.)"
)
c1, c2 = st.columns([1.4, 3])  # X's four columns fit
with c1:
    st.markdown("**X** (4 tokens, d = 4)")
    tables.show(
        Matrix.of(lesson.SPLIT_X, [f"t{i}" for i in range(4)], [f"x{j}" for j in range(4)]),
        key=P + "split_x",
        digits=1,
    )
    st.radio("number of heads", HEAD_CHOICES, key=P + "heads", persist_state="session", horizontal=True)
heads = lesson.split_heads(lesson.SPLIT_X, int(st.session_state[P + "heads"]))
with c2:
    hcols = st.columns([1] * (len(heads.columns) - 1) + [1 + 0.1 * len(heads.columns)])  # + the colour bar
    toks = [f"t{i}" for i in range(4)]
    last = len(heads.columns) - 1
    for h, (start, stop) in enumerate(heads.columns):
        spec = lc.value_heatmap(
            heads.weights[h],
            toks,
            toks,
            f"head {h}: " + (f"feature {start}" if stop - start == 1 else f"features {start}..{stop - 1}"),
            show_values=len(heads.columns) < 4,
            digits=3,
            height=330,
        )
        with hcols[h]:  # every head's weights share 0..1: one colour bar, on the last map
            chart(spec if h == last else {**spec, "colorbar": None}, f"head_fig_{h}")
st.markdown("**Concatenated output** (each head's output side by side)")
c1, _ = st.columns([3, 2])
tables.show(
    Matrix.of(heads.concat, [f"t{i}" for i in range(4)], [f"out{j}" for j in range(4)]),
    key=P + "split_out",
    digits=4,
    where=c1,
)

# ---------------------------------------------------------------------------------------
st.header("6 · Attention alone cannot see order")
st.markdown(
    "Self-attention compares every token with every other one, but nothing in the sum says "
    "*where* a token sits. Shuffle the input and the output is the same rows, shuffled the same "
    'way: "the dog bit man" and "the man bit dog" look alike. Adding a position code to each '
    "slot breaks the tie."
)


def _shuffle() -> None:
    current = st.session_state.get(P + "perm")
    st.session_state[P + "perm"] = random.choice([p for p in PERMUTATIONS if p != current])


def _order(perm: str) -> str:
    return " ".join(PERM_TOKENS[int(i)] for i in perm.split(","))


c1, c2, c3 = st.columns([2, 1, 1], vertical_alignment="bottom")
c1.selectbox("shuffled order", PERMUTATIONS, key=P + "perm", persist_state="session", format_func=_order)
c2.button("Shuffle", icon=":material/shuffle:", on_click=_shuffle)
c3.toggle("add sinusoidal positions", key=P + "positions", persist_state="session")
perm = st.session_state[P + "perm"]
order = [int(i) for i in perm.split(",")]
check = lesson.permutation_check(lesson.PERM_X, order, add_positions=bool(st.session_state[P + "positions"]))
dims = [f"d{j}" for j in range(4)]
c1, c2 = st.columns(2)
with c1:
    st.markdown("**Output on the original order**")
    tables.show(Matrix.of(check.output, list(PERM_TOKENS), dims), key=P + "perm_out", digits=4)
with c2:
    st.markdown(f"**Output on the shuffled input** ({_order(perm)})")
    tables.show(
        Matrix.of(check.shuffled_output, [PERM_TOKENS[i] for i in order], dims),
        key=P + "perm_shuffled",
        digits=4,
    )
equivariant = check.max_abs_diff < 1e-9
st.metric(
    "largest difference",
    f"{check.max_abs_diff:.1e}",
    help="Between the output on the shuffled input and the output shuffled afterwards.",
)
if equivariant:
    st.success("Identical rows, only reordered: without positions, order is invisible to attention.")
else:
    st.info("With positions added, the same token gets a different output in a different slot.")
with st.expander("the token vectors"):
    tables.show(Matrix.of(lesson.PERM_X, list(PERM_TOKENS), dims), key=P + "perm_x", digits=2)

# ---------------------------------------------------------------------------------------
st.header("7 · One encoder block, opened")
st.markdown(
    "Attention is half of a Transformer block. Its input is each token's vector plus its position's "
    "code, **Z = X + PE**: below, the same word twice becomes two different rows."
)
pe, z = lesson.add_positions(lesson.PE_X)
words = [f"{i}:{w}" for i, w in enumerate(lesson.PE_WORDS)]
dims = [f"d{j}" for j in range(4)]
three = {"digits": 3}
tables.show_many(
    [(title, Matrix.of(m, words, dims), P + key, three)
     for title, m, key in (("X", lesson.PE_X, "pe_x"), ("+ PE", pe, "pe_pe"), ("= Z", z, "pe_z"))],
    min_px=330,
)  # fmt: skip
st.markdown(
    "Rows like Z are what the first block receives. Here is one block of the original (Post-LN) "
    "Transformer at chapter 004's size, d = 4, two heads, d_ff = 8, on three random rows standing for "
    "such a Z (the seed draws them and the weights), run through the library's own `EncoderBlock` "
    "one step at a time. Every step keeps the shape (3 × 4): that is why blocks stack."
)
st.number_input("random seed (input and weights)", 0, 9999, key=P + "block_seed", persist_state="session")
b = lesson_views.block_trace(int(st.session_state[P + "block_seed"]))
toks, hidden_dims = [f"t{i}" for i in range(3)], [f"h{j}" for j in range(8)]
steps = (
    ("1. Input x", b.x, dims, "x"),
    ("2. Heads side by side: concat(head 0, head 1), each weights · V", b.heads, dims, "heads"),
    ("3. MHA(x) = concat · W_Oᵀ: W_O mixes what the heads found", b.attention, dims, "mha"),
    ("4. Add: x + MHA(x)", b.residual_1, dims, "add1"),
    ("5. Norm: LayerNorm(x + MHA(x))", b.normed_1, dims, "norm1"),
    ("6. FFN, per token: ReLU(h · W₁ᵀ + b₁), 4 → 8", b.hidden, hidden_dims, "hidden"),
    ("7. … then · W₂ᵀ + b₂, 8 → 4", b.ffn, dims, "ffn"),
    ("8. Add & Norm: the block's output", b.output, dims, "out"),
)
for part, wide in ((steps[:5], 300), (steps[5:6], 560), (steps[6:], 300)):  # the FFN's 8-wide layer alone
    tables.show_many(
        [(title, Matrix.of(m, toks, names), P + "block_" + key, three) for title, m, names, key in part],
        min_px=wide,
    )
stats = pd.DataFrame(
    {
        "mean before": b.residual_1.mean(-1),
        "std before": b.residual_1.std(-1),
        "mean after": np.round(b.normed_1.mean(-1), 6) + 0.0,  # 0.000, not -0.000
        "std after": b.normed_1.std(-1),
    },
    index=toks,
)
tables.show_many(
    [(f"Head {h}'s weights (rows sum to 1)", Matrix.of(b.weights[h], toks, toks), P + f"block_w{h}", three)
     for h in range(2)]
    + [("Each token before and after the norm (steps 4 and 5)", stats, P + "block_stats", three)]
)  # fmt: skip
st.caption(
    "LayerNorm works within each token, not across the batch: after it every row has mean 0 and "
    "standard deviation 1 (times a gain and plus a bias, here still 1 and 0). The FFN never mixes "
    "tokens; attention is the only step that does."
)

# ---------------------------------------------------------------------------------------
st.header("8 · Characters or pieces: tokens")
st.markdown(
    "A model reads ids, not text. The lab's GPTs read one character per token; GPT-2 reads pieces of "
    "words made by byte-pair encoding (BPE): start from bytes, then apply the learned merges of "
    "frequent neighbours, most frequent first."
)
st.text_input("a word or a phrase", key=P + "token_text", max_chars=tokens.MAX_TEXT, persist_state="session")
word = st.session_state[P + "token_text"] or DEFAULTS["token_text"]  # an emptied box: the default word
try:
    split = lesson_views.token_split(word, "gpt-sinusoidal")
except CheckpointError as e:
    split = None
    st.info(f"The character tokenizer comes with gpt-sinusoidal, which cannot be loaded here: {e}")
if split is not None:
    chars = pd.DataFrame(split.chars, columns=["character", "id"])
    pieces = pd.DataFrame(split.pieces, columns=["piece", "id", "UTF-8 bytes"])
    merges = pd.DataFrame(
        [(w, m, " · ".join(s)) for w, m, s in split.steps], columns=["pre-token", "merge", "symbols after it"]
    )
    plain = {"index": False}
    tables.show_many(
        [(f"Characters: {len(chars)} tokens", chars, P + "token_chars", plain),
         (f"BPE pieces: {len(pieces)} tokens", pieces, P + "token_pieces", plain)]
    )  # fmt: skip
    tables.show_many([("The merges, in the order BPE applies them", merges, P + "token_merges", plain)])
    st.caption(
        f"GPT-2's own BPE (50,257 tokens) is not shipped with the lab; this one is trained the same way "
        f"(byte-level, GPT-2's rule for splitting words) on the lab's corpus, {tokens.BPE_VOCAB:,} tokens: "
        "256 bytes and 768 merges. Byte-level BPE writes every byte as one printable character: Ġ is a "
        "space, and a letter outside ASCII is two or more such characters (é, bytes c3 a9, is Ã©)."
    )

write_state(list(DEFAULTS), prefix=P)
