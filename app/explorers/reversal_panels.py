"""The /reversal page's panels around the grids: the answer checked against the true
reverse, and a padded batch of two inputs (what the padding mask keeps out)."""

from __future__ import annotations

import streamlit as st

from attention_lab.charts import export
from attention_lab.charts import specs as charts
from attention_lab.explorers.explorer_html import labelled_output_html
from attention_lab.frame.markdown_safe import md_code
from attention_lab.frame.state import visible
from attention_lab.models.explorer_compute import PaddingView


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
            f"Correct: {md_code(visible(output))} is the input reversed.{trained}",
            icon=":material/check_circle:",
        )
        return
    extra = " Characters replaced by `<unk>` cannot come back." if had_unknown else ""
    written = md_code(visible(output)) if output else "(nothing)"
    truth = md_code(visible(expected))
    verdict.warning(
        f"Not the reverse: the true reverse is {truth}, the model wrote {written}.{trained}{extra}",
        icon=":material/cancel:",
    )


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
        charts.show(spec, key=f"{prefix}pad{b}", where=col)
        col.caption(_row_caption(pv, b, pad_share))
