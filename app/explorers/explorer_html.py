"""Small HTML pieces of the explorer pages, built as strings (pure, no Streamlit).

Plain HTML instead of st.latex or extra components: KaTeX alone is 0.3 MB that would load
before any chart, and these are a few hundred bytes each.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from attention_lab.models.explorer_compute import Sample

SAMPLE_RGB = (37, 99, 235)  # sampled characters: this blue, more opaque the likelier


def relative_luminance(rgb: Sequence[float]) -> float:
    """WCAG 2.1 relative luminance of an sRGB colour (0..255 channels): 0 black .. 1 white."""

    def linear(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])


def contrast_ratio(a: Sequence[float], b: Sequence[float]) -> float:
    """WCAG contrast ratio of two colours, 1 (same) .. 21 (black on white); text needs 4.5."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def text_colour(
    rgb: tuple[int, int, int], alpha: float = 1.0, backdrop: tuple[int, int, int] = (255, 255, 255)
) -> str:
    """Black or white text, whichever contrasts more with a background of colour rgb at opacity
    alpha laid over backdrop (WCAG 1.4.3: at least 4.5:1 for one of them on any colour)."""
    shown = [alpha * c + (1 - alpha) * b for c, b in zip(rgb, backdrop, strict=True)]
    white = contrast_ratio(shown, (255, 255, 255)) >= contrast_ratio(shown, (0, 0, 0))
    return "#ffffff" if white else "#000000"


def sampled_text_html(prompt: str, unknown: Sequence[str], samples: Sequence[Sample]) -> str:
    """The prompt in grey (characters the model lacks shown as <unk>), then each sampled
    character shaded by its probability; hover shows the probability and the alternatives."""
    shown_prompt = "".join("<unk>" if c in unknown else c for c in prompt)
    parts = [f'<span style="opacity:.75">{html.escape(shown_prompt)}</span>']  # muted in any theme
    for s in samples:
        alpha = 0.15 + 0.75 * s.prob
        alts = ", ".join(f"{lab} {p:.2f}" for lab, p in s.top)
        title = html.escape(f"p = {s.prob:.3f} | most likely: {alts}", quote=True)
        partial = s.text in ("", "<unk>") or "\ufffd" in s.text  # a BPE token that is part of a character
        shown = html.escape(s.label if partial else s.text)
        shade = ",".join(f"{round(alpha * c + (1 - alpha) * 255)}" for c in SAMPLE_RGB)  # opaque: any theme
        parts.append(
            f'<span title="{title}" style="background:rgb({shade});'
            f'color:{text_colour(SAMPLE_RGB, alpha)};border-radius:3px">{shown}</span>'
        )
    return (
        '<div style="font-family:monospace;font-size:1.05rem;white-space:pre-wrap;overflow-wrap:anywhere;'
        "line-height:1.7;"
        "border:1px solid color-mix(in srgb,currentColor 15%,transparent);border-radius:6px;"
        'padding:8px 10px">' + "".join(parts) + "</div>"
    )


def _fraction(num: str, den: str) -> str:
    return (
        '<span style="display:inline-flex;flex-direction:column;vertical-align:middle;'
        f'text-align:center;margin:0 .2em"><span>{num}</span>'
        f'<span style="border-top:1px solid;padding-top:.1em">{den}</span></span>'
    )


def walk_formula_html(has_bias: bool) -> str:
    """The query walk's maths: s_j = q.k_j / sqrt(d_k) (+ b_j), w_j = softmax over the
    allowed keys, out = sum_j w_j v_j."""
    bias = " + <i>b<sub>j</sub></i>" if has_bias else ""
    s = _fraction("<i>q</i> · <i>k<sub>j</sub></i>", "√<i>d<sub>k</sub></i>") + bias
    w = _fraction(
        "<i>e<sup>s<sub>j</sub></sup></i>", "Σ<sub><i>i</i> allowed</sub> <i>e<sup>s<sub>i</sub></sup></i>"
    )
    return (
        '<div style="text-align:center;font-size:1.15rem;font-family:serif;margin:.3rem 0">'
        f"<i>s<sub>j</sub></i> = {s},&emsp;<i>w<sub>j</sub></i> = {w},&emsp;"
        "out = Σ<sub><i>j</i></sub> <i>w<sub>j</sub></i> <i>v<sub>j</sub></i></div>"
    )


def correctness_html(output: str, expected: str) -> str:
    """Each output letter in a box: green where it matches the true reverse, red where not, and a
    red · where the output ends before the true reverse does."""
    cells = []
    for i in range(max(len(output), len(expected))):
        got = output[i] if i < len(output) else "·"
        ok = i < len(output) and i < len(expected) and output[i] == expected[i]
        colour, border = ("#dcfce7", "#16a34a") if ok else ("#fee2e2", "#dc2626")
        missing = "" if i < len(output) else ' title="no letter written here"'
        cells.append(
            f'<span{missing} style="display:inline-block;min-width:1.4em;text-align:center;margin:1px;'
            f"padding:2px 4px;background:{colour};border:1px solid {border};border-radius:4px;"
            f'font-family:monospace;font-size:1.3rem;color:#111827">{html.escape(got)}</span>'
        )
    return "".join(cells)


def labelled_output_html(output: str, expected: str) -> str:
    """The reversal's greedy output, boxed letter by letter, after a small 'output' label."""
    label = '<span style="font-size:0.9rem;opacity:.75;margin-right:6px">output</span>'
    return label + correctness_html(output, expected)
