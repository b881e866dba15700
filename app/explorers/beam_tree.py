"""The beam search as a page shows it, built as HTML (pure, no Streamlit): one row per step,
each hypothesis a chip with the end of its text and its cumulative log-probability; the kept
ones first, then those that ended, then the pruned, greyed; the winner's path outlined.

HTML, not SVG: Streamlit's st.html keeps HTML only. A hypothesis's text carries its whole
ancestry, so the tree reads row by row without drawn edges.
"""

from __future__ import annotations

import html

from attention_lab.viewmodel.beam import path_steps
from transformer_core.beam import BeamResult, Hypothesis
from transformer_core.io import Tokenizer

TAIL = 12  # characters of a hypothesis shown on its chip: enough to read the branch it is on

STYLE = """<style>
.lab-beam { max-height: 360px; overflow: auto; font-size: .9rem; padding: 4px 8px; border-radius: 6px;
  border: 1px solid color-mix(in srgb, currentColor 15%, transparent); }
.lab-beam p { display: flex; align-items: baseline; gap: 6px; margin: 0; padding: 2px 0;
  border-top: 1px solid color-mix(in srgb, currentColor 8%, transparent); }
.lab-beam b { min-width: 3.6em; font-weight: 400; opacity: .75; }
.lab-beam i { display: inline-block; margin: 2px 4px 2px 0; padding: 1px 6px; border-radius: 4px;
  white-space: pre; font-style: normal; font-family: monospace;
  border: 1px solid color-mix(in srgb, currentColor 30%, transparent); }
.lab-beam i.win { border: 2px solid #2563eb; font-weight: 600; }  /* the lab's blue: 3:1 on both themes */
.lab-beam i.cut { opacity: .55; border-style: dashed; }
</style>"""


def _chip(tokenizer: Tokenizer, hyp: Hypothesis, kind: str) -> str:
    """One hypothesis: the end of its text, ⏹ where it ended, its cumulative log P."""
    text = tokenizer.decode(list(hyp.tokens), skip_special=True).replace("\n", "⏎").replace("\t", "⇥")
    if text.endswith(" "):  # the newest character: a space is shown as one
        text = text[:-1] + "␣"
    tail = ("…" if len(text) > TAIL else "") + text[-TAIL:]
    end = " ⏹" if hyp.finished else ""
    css = f' class="{kind}"' if kind else ""
    return f"<i{css}>{html.escape(tail)}{end} <small>{hyp.log_prob:.2f}</small></i>"


def beam_tree_html(result: BeamResult, tokenizer: Tokenizer) -> str:
    """Every step of the search: kept (best first), then ended, then pruned (greyed, dashed);
    the winner's path outlined."""
    on_path = {h.tokens for h in path_steps(result)}
    rows = []
    for step in result.steps:
        chips = [
            _chip(tokenizer, h, "win" if h.tokens in on_path else "") for h in (*step.kept, *step.finished)
        ]
        chips += [_chip(tokenizer, h, "cut") for h in step.pruned]
        rows.append(f"<p><b>step {step.step + 1}</b><span>{''.join(chips)}</span></p>")
    label = f"Every step of the beam search, width {result.width}"
    return (
        f'{STYLE}<div class="lab-beam" role="region" aria-label="{label}" tabindex="0">{"".join(rows)}</div>'
    )
