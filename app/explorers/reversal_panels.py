"""The /reversal page's panels around the grids: the answer checked against the true
reverse, a padded batch of two inputs (what the padding mask keeps out), and the recurrent
baselines' own views."""

from __future__ import annotations

import streamlit as st

from attention_lab.charts import component, export
from attention_lab.charts import specs as charts
from attention_lab.explorers.explorer_html import labelled_output_html
from attention_lab.frame.markdown_safe import md_code
from attention_lab.frame.state import visible
from attention_lab.models.explorer_compute import PaddingView
from attention_lab.viewmodel.reversal import ReversalPage
from transformer_core.io import Checkpoint


def answer(
    output: str, expected: str, *, had_unknown: bool, length_note: str | None = None, stacked: bool = False
) -> None:
    """The greedy output boxed letter by letter, and whether it is the input reversed; length_note
    says when the input's length lies outside the lengths the model was trained on (the likely
    reason for a wrong answer). stacked: the verdict under the boxes (a narrow column)."""
    boxes, verdict = (
        (st.container(), st.container()) if stacked else st.columns([1.1, 1], vertical_alignment="center")
    )
    boxes.html(labelled_output_html(output, expected))
    trained = f" {length_note}" if length_note else ""
    if output == expected:
        verdict.success(
            f"Correct: {said(output)} is the input reversed.{trained}", icon=":material/check_circle:"
        )
        return
    extra = " Characters replaced by `<unk>` cannot come back." if had_unknown else ""
    truth, written = said(expected), said(output)
    verdict.warning(
        f"Not the reverse: the true reverse is {truth}, the model wrote {written}.{trained}{extra}",
        icon=":material/cancel:",
    )


def said(text: str) -> str:
    """A text as a verdict names it: inline code, or in words where the code would show a blank
    (nothing, or only spaces)."""
    if not text:
        return "(nothing)"
    if not text.strip(" "):
        return f"{len(text)} space" + ("s" if len(text) > 1 else "")
    return md_code(visible(text))


def _row_caption(pv: PaddingView, b: int, pad_share: float) -> str:
    """What row b's padding is and what the model wrote for it."""
    output = md_code(visible(pv.outputs[b] or "(nothing)"))
    truth = md_code(visible(pv.texts[b][::-1]))
    if not pv.is_pad[b].any():
        return f"Row {b + 1} is the longer input: no padding. Output: {output} (true reverse {truth})."
    return (
        f"Row {b + 1} has {int(pv.is_pad[b].sum())} `<pad>`; the most weight any real "
        f"letter puts on them: **{pad_share:.3f}**. Output: {output} (true reverse {truth})."
    )


def padded_batch(prefix: str, name: str, pv: PaddingView, layer: int, head: int) -> None:
    """Each row's encoder head drawn large, weight on `<pad>` outlined, side by side."""
    for b, col in enumerate(st.columns(2)):
        w = pv.attention[b, layer, head]
        pad = pv.is_pad[b]
        pad_share = float(w[~pad][:, pad].sum(-1).max()) if pad.any() else 0.0
        spec = charts.head_spec(
            w,
            pv.tokens[b],
            pv.tokens[b],
            f"Row {b + 1}: encoder layer {layer} head {head}",
            highlight=pad[None, :] & (w > 0.001),
            highlight_name="weight on <pad>",
            height=380,
            file=export.file_stem("reversal", name, "padding", f"row{b + 1}", f"L{layer}H{head}"),
        )
        component.show(spec, key=f"{prefix}pad{b}", where=col)
        col.caption(_row_caption(pv, b, pad_share))


def recurrent_panel(view: ReversalPage, ckpt: Checkpoint, name: str) -> None:
    """A recurrent baseline of chapter 004: Bahdanau's additive attention as one alignment map (no
    layers, no heads), or, for the plain GRU, the one context vector every output step reads."""
    kind = ckpt.config.model
    if kind == "bahdanau":
        st.subheader("Additive attention: where each output step reads the input")
        score = float(view.scores[0, 0])
        spec = view.maps["cross"].head(
            0, 0, title=f"Bahdanau alignment · anti-diagonal {score:.2f}", height=420, stem=("reversal", name)
        )
        component.show(spec, key="rev_bahdanau", where=st.columns([1, 1])[0])
        st.caption(
            "Bahdanau et al. (2015): before writing each letter, the decoder's GRU state s is compared "
            "with every encoder state h_j through a small network, score_j = vᵀ tanh(W s + U h_j), and a "
            "softmax over the input turns the scores into one alignment row. There are no layers or heads "
            "and no positional encoding: the GRUs read order by reading in order. The anti-diagonal score is "
            "the share of weight on the mirrored letter, as for the Transformer's cross-attention heads."
        )
        return
    st.subheader("Nothing to attend: one context vector")
    context = view.trace.context
    assert context is not None
    st.info(
        "This GRU encoder-decoder has no attention. The encoder reads the whole input and hands over its "
        f"last state, {context.size} numbers, and every output step starts from that one vector: there "
        "is no map to draw, because no step can look back at a letter. Longer inputs must squeeze more "
        "into the same numbers, which is why this baseline fails first as inputs grow (the length table "
        "on the Train page).",
        icon=":material/info:",
    )
    labels = [str(i) for i in range(context.size)]
    spec = charts.bars_spec(
        labels,
        {"context vector": context.astype(float)},
        "The context vector (the encoder's last state)",
        height=240,
        x_title="dimension",
        y_title="value",
        y_range=None,
        file=export.file_stem("reversal", name, "context"),
    )
    component.show(spec, key="rev_context")


def baselines_beside(
    prefix: str, names: dict[str, str], ckpts: dict[str, Checkpoint], views: dict[str, ReversalPage]
) -> None:
    """/compare with a recurrent baseline on a side: each side's answer and how it reads the input,
    Bahdanau's one alignment map, a Transformer's most anti-diagonal cross-attention head, or the
    GRU's nothing to attend; no head-by-head difference (the shapes have nothing in common)."""
    st.subheader("1 · What each side answers, and how it reads the input")
    for side, col in zip(names, st.columns(2, gap="medium"), strict=True):
        view, kind = views[side], ckpts[side].config.model
        verdict = (
            "the input reversed" if view.trace.output == view.truth else f"not the reverse ({view.truth})"
        )
        written = md_code(visible(view.trace.output)) if view.trace.output else "(nothing)"
        col.markdown(f"**{side.upper()}** ({names[side]}) writes {written} — {verdict}")
        if kind == "gru":
            col.info(
                "No attention: every output step starts from one context vector.", icon=":material/info:"
            )
            continue
        layer, head = view.best
        what = "Bahdanau alignment" if kind == "bahdanau" else f"cross-attention L{layer} H{head}"
        spec = view.maps["cross"].head(
            layer,
            head,
            title=f"{what} · anti-diagonal {view.scores[layer, head]:.2f}",
            height=380,
            stem=("compare", names[side], side),
        )
        component.show(spec, key=f"{prefix}{side}_alignment", where=col)
    st.caption(
        "A recurrent baseline has one alignment (Bahdanau) or none (the GRU), so the two sides are not "
        "compared head by head: each Transformer side shows its most anti-diagonal cross-attention head, "
        "the one that reads the mirrored letter. Rows are output steps, columns the input letters."
    )
