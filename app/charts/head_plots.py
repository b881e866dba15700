"""The /heads page's charts (attention_lab.charts.specs specs), each cached by its inputs
(attention_lab.models.compute.shared_cache): the page reruns on every click."""

from __future__ import annotations

import numpy as np
import pandas as pd

from attention_lab.charts import specs as charts
from attention_lab.charts import xy_charts as xy
from attention_lab.models.compute import shared_cache
from transformer_core.interp import Attribution, Composition, HeadScores, Importance, Patching
from transformer_core.interp.decompose import ScoreParts
from transformer_core.interp.geometry import Geometry
from transformer_core.interp.lens import LogitLens

KIND_NAMES = {
    "self": "self-attention",
    "encoder_self": "encoder self-attention",
    "decoder_self": "decoder masked self-attention",
    "cross": "cross-attention",
}
LABELS = {
    "previous_token": "previous token",
    "diagonal": "current token",
    "first_token": "first token",
    "duplicate_token": "duplicate token",
    "induction": "induction",
    "anti_diagonal": "anti-diagonal",
    "monotonic": "monotonic",
    "entropy": "entropy (nats)",
    "mean_distance": "mean distance",
}
HEAT_PX = 46  # one layer x head cell of the score maps
UNBOUNDED = ("entropy", "mean_distance")  # not shares of attention: grey, their own range


def _finite_max(values: list[np.ndarray]) -> float:
    found = [float(np.nanmax(v)) for v in values if np.isfinite(v).any()]
    return max(found, default=1.0) or 1.0


@shared_cache
def score_maps(
    scores: HeadScores, kinds: tuple[str, ...], shown: tuple[str, ...], n_layers: int, n_heads: int
) -> dict:
    """One map per score (columns) and attention kind (rows), each over layers x heads; the
    shares of attention on one 0..1 blue scale, entropy and distance grey on their own."""
    maps = []
    for kind in kinds:
        for s in shown:
            z = np.where(np.isfinite(scores.scores[kind][s]), scores.scores[kind][s], np.nan)
            bounded = s not in UNBOUNDED
            top = 1.0 if bounded else _finite_max([scores.scores[k][s] for k in kinds])
            maps.append(
                {
                    "title": LABELS[s],
                    "values": z,
                    "zmin": 0.0,
                    "zmax": top,
                    "colorscale": "Blues" if bounded else "Greys",
                    "value_name": f"{LABELS[s]} ({KIND_NAMES[kind]})",
                }
            )
    return charts.maps_spec(
        maps,
        columns=len(shown) if len(kinds) > 1 else min(len(shown), 4),  # one kind: cells that hold a value
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
        cell_px=HEAT_PX,
        digits=2,  # written where a cell is large enough to hold it
        colorbar=("share", "Blues", 0.0, 1.0),  # the blue maps' one scale
        file="heads_scores",
    )


@shared_cache
def pattern_grid(
    w: np.ndarray, query_tokens: tuple[str, ...], key_tokens: tuple[str, ...], value_name: str = "weight"
) -> dict:
    """Small multiples of each head's pattern, w (L, H, Tq, Tk), on one 0..1 scale; value_name:
    what a cell holds ("share sent" for value-weighted attention)."""
    return charts.grid_spec(
        w,
        list(query_tokens),
        list(key_tokens),
        cell_px=150,
        clickable=False,
        file="heads_patterns" if value_name == "weight" else "heads_patterns_value_weighted",
        value_name=value_name,
    )


@shared_cache
def importance_maps(importance: Importance, kinds: tuple[str, ...], n_layers: int, n_heads: int) -> dict:
    """The ablation sweep beside the gradient proxy, per kind, over layers x heads."""
    panels = [("Δ loss when ablated", importance.delta_loss, "RdBu_r", True)]
    if importance.delta_exact_match is not None:
        panels.append(("Δ exact match when ablated", importance.delta_exact_match, "RdBu", True))
    panels.append(("|∂loss/∂gate|", importance.gradient, "Oranges", False))
    bounds = [max(float(np.abs(values[k]).max()) for k in kinds) or 1.0 for _, values, _, _ in panels]
    maps = [
        {
            "title": title,
            "values": values[kind],
            "zmin": -bound if diverging else 0.0,
            "zmax": bound,
            "colorscale": scale,
            "value_name": f"{title} ({KIND_NAMES[kind]})",
        }
        for kind in kinds
        for (title, values, scale, diverging), bound in zip(panels, bounds, strict=True)
    ]
    return charts.maps_spec(
        maps,
        columns=len(panels),
        row_titles=[KIND_NAMES[k] for k in kinds] if len(kinds) > 1 else None,
        cell_px=HEAT_PX,
        digits=2 if n_heads <= 8 else None,
        file="heads_importance",
    )


@shared_cache
def rollout_map(rollout: np.ndarray, rollout_tokens: tuple[str, ...]) -> dict:
    """Rollout (T, T): how much of each position's final state traces back to each input token."""
    spec = charts.head_spec(
        rollout,
        list(rollout_tokens),
        list(rollout_tokens),
        zmax=float(np.max(rollout)) or 1.0,
        value_name="share",
        height=420,
        file="heads_rollout",
    )
    spec.update(x_title="input token", y_title="position")
    return spec


def head_labels(layers: range, n_heads: int) -> list[str]:
    return [f"L{layer}H{head}" for layer in layers for head in range(n_heads)]


@shared_cache
def composition_maps(composition: Composition) -> list[dict]:
    """Q-, K- and V-composition as three maps of reader heads (rows: layers 1..L-1) against
    writer heads (columns: layers 0..L-2), one colour scale; blank where the writer is not
    earlier than the reader."""
    L, H = composition.q.shape[:2]
    top = max(float(np.nanmax(getattr(composition, m))) for m in "qkv") or 1.0
    readers, writers = head_labels(range(1, L), H), head_labels(range(L - 1), H)
    maps = []
    for mode in "qkv":
        s = getattr(composition, mode)[: L - 1, :, 1:, :]  # (writer layer, h1, reader layer, h2)
        m = s.reshape((L - 1) * H, (L - 1) * H).T  # (readers, writers)
        maps.append(
            charts.head_spec(
                m,
                readers,
                writers,
                f"{mode.upper()}-composition",
                zmax=top,
                value_name="score",
                colorscale="Purples",
                height=max(260, 26 * len(readers) + 140),
                cell_digits=2 if len(readers) <= 8 else None,
                file=f"heads_composition_{mode}",
                description=f"{mode.upper()}-composition score of every earlier head into every later head",
            )
            | {"x_title": "earlier head (writes)", "y_title": "later head (reads)"}
        )
    return maps


def restored_share(patching: Patching) -> dict[str, np.ndarray]:
    """Per kind (L, H): (patched - corrupted) / (clean - corrupted), the share of the clean
    behaviour one head brings back (0 nothing, 1 all of it); NaN when clean equals corrupted."""
    gap = patching.clean - patching.corrupted
    if abs(gap) < 1e-9:
        return {k: np.full_like(v, np.nan) for k, v in patching.heads.items()}
    return {k: (v - patching.corrupted) / gap for k, v in patching.heads.items()}


@shared_cache
def patching_maps(patching: Patching, n_layers: int, n_heads: int) -> dict:
    """The share restored by patching each head, one map per kind, one diverging scale."""
    shares = restored_share(patching)
    bound = max(1.0, *(float(np.nanmax(np.abs(v))) for v in shares.values() if np.isfinite(v).any()))
    maps = [
        {
            "title": KIND_NAMES[kind],
            "values": values,
            "zmin": -bound,
            "zmax": bound,
            "colorscale": "RdBu",
            "value_name": f"share restored ({KIND_NAMES[kind]})",
        }
        for kind, values in shares.items()
    ]
    return charts.maps_spec(
        maps,
        columns=len(maps),
        cell_px=HEAT_PX,
        digits=2,
        colorbar=("restored", "RdBu", -bound, bound),
        file="heads_patching",
    )


@shared_cache
def attribution_map(attribution: Attribution) -> dict:
    """Each head's direct contribution to the correct next character's logit, averaged over
    the probe's positions, on a diverging scale."""
    bound = float(np.abs(attribution.heads).max()) or 1.0
    maps = [
        {
            "title": "direct logit attribution",
            "values": attribution.heads,
            "zmin": -bound,
            "zmax": bound,
            "colorscale": "RdBu",
            "value_name": "logit of the correct character",
        }
    ]
    colorbar = ("logit", "RdBu", -bound, bound)
    return charts.maps_spec(maps, columns=1, cell_px=HEAT_PX, digits=2, colorbar=colorbar, file="heads_dla")


def lens_table(lens: LogitLens) -> pd.DataFrame:
    """The logit lens as a table: rows are depths, columns positions ("index:character"); a
    cell is the likeliest next character and its probability, then the true next character's
    probability ("✓" when the likeliest is the true one; the last position has none)."""
    cells = {}
    for i, tok in enumerate(lens.tokens):
        column = []
        for r in range(len(lens.rows)):
            top, p = lens.top_labels[r][i][0], lens.top_probs[r, i, 0]
            guess = f"{top}\u00a0{p:.2f}"  # no-break spaces: a narrow cell wraps between the two
            if i + 1 == len(lens.tokens):
                column.append(guess)
            elif top == lens.tokens[i + 1]:
                column.append(f"{guess}\u00a0✓")
            else:
                column.append(f"{guess} · {lens.tokens[i + 1]}\u00a0{lens.correct_probs[r, i]:.2f}")
        cells[f"{i}:{tok}"] = column
    return pd.DataFrame(cells, index=lens.rows)


def split_cell_map(
    weights: np.ndarray, queries: list[str], keys: list[str], cell: tuple[int, int], title: str
) -> dict:
    """A head's weights (Tq, Tk) on the probe, the cell section 9 splits outlined; a click or Enter
    on another cell splits that one (spec "clickable": "cell")."""
    marked = np.zeros(weights.shape, dtype=bool)
    marked[cell] = True
    spec = charts.head_spec(
        weights, queries, keys, title, highlight=marked, highlight_name="the cell split below", height=380,
        file="heads_split_cell", description=f"query {cell[0]} to key {cell[1]} is split below",
    )  # fmt: skip
    return {**spec, "clickable": "cell", "click_says": "split this cell's score"}


def score_part_map(parts: ScoreParts, key: int, queries: list[str], keys: list[str]) -> dict:
    """One (query, key) cell's score as query part (rows) x key part (columns), red above zero."""
    cell = parts.contributions[key]
    bound = float(np.abs(cell).max()) or 1.0
    title = f"Score parts: query {parts.query} '{queries[parts.query]}' → key {key} '{keys[key]}'"
    return charts.head_spec(
        cell,
        [f"q {n}" for n in parts.query_parts],
        [f"k {n}" for n in parts.key_parts],
        title,
        zmin=-bound,
        zmax=bound,
        value_name="score part",
        colorscale="RdBu_r",
        height=max(300, 26 * len(parts.query_parts) + 140),
        cell_digits=2 if len(parts.key_parts) <= 10 else None,
        file=f"heads_score_parts_{parts.kind}_L{parts.layer}H{parts.head}_q{parts.query}_k{key}",
        description=f"{len(parts.query_parts)} query parts by {len(parts.key_parts)} key parts; "
        f"they sum to the score {float(parts.scores[key]):.3f}",
    )


def score_part_bars(parts: ScoreParts, key: int, top: int = 10) -> dict:
    """The `top` largest (query part, key part) pairs of one cell by size, with their sign."""
    cell = parts.contributions[key]
    order = np.argsort(-np.abs(cell), axis=None)[:top]
    pairs = [np.unravel_index(i, cell.shape) for i in order]
    labels = [f"{parts.query_parts[a]} × {parts.key_parts[b]}" for a, b in pairs]
    values = np.array([cell[a, b] for a, b in pairs])
    return charts.bars_spec(
        labels,
        {"part of the score": values},
        f"The {len(labels)} largest parts (query × key)",
        y_title="part of the score",
        file=f"heads_score_bars_{parts.kind}_L{parts.layer}H{parts.head}_q{parts.query}_k{key}",
        values_shown="{:+.2f}",
        width_px=420,
    )


POSITION_BANDS = 4  # the geometry's points coloured in this many ranges of position
TOKEN_KINDS = ("letter", "digit", "space or line break", "punctuation or symbol")
NEAREST = 5  # keys linked to the picked query
SPACES = "␣↵⇥ \n\t"  # how token labels write blanks


def token_kind(label: str) -> str:
    """What a token is, read from its label's first character that is not a blank (a BPE token's
    leading space does not make it one): one of TOKEN_KINDS."""
    rest = label.lstrip(SPACES)
    if not rest:
        return "space or line break"
    return "letter" if rest[0].isalpha() else "digit" if rest[0].isdigit() else "punctuation or symbol"


def _groups(g: Geometry, part: slice, colour: str) -> list[tuple[str, np.ndarray]]:
    """(name, mask over the part's points) per colour: position ranges, or token kinds."""
    positions, tokens = g.positions[part], g.tokens[part]
    if colour == "token":
        kinds = np.array([token_kind(t) for t in tokens])
        return [(k, kinds == k) for k in TOKEN_KINDS]
    edges = np.linspace(0, int(g.positions.max()) + 1, POSITION_BANDS + 1).astype(int)
    return [
        (f"positions {edges[b]}-{edges[b + 1] - 1}", (positions >= edges[b]) & (positions < edges[b + 1]))
        for b in range(POSITION_BANDS)
    ]


def _links(g: Geometry, query: int) -> list[dict]:
    """The picked query (a star) and lines to its NEAREST keys, drawn on the keys' plot: both sets
    share the axes, so the star stands where the query lies among the keys."""
    n, (qx, qy) = g.n_queries, g.coords[query]
    keys = g.coords[n + g.nearest_keys(query, NEAREST)]  # (k, 2)
    gap = np.full(len(keys), np.nan)
    xs = np.column_stack([np.full(len(keys), qx), keys[:, 0], gap]).ravel()  # query, key, gap, ...
    ys = np.column_stack([np.full(len(keys), qy), keys[:, 1], gap]).ravel()
    name = f"'{g.tokens[query]}' at {g.positions[query]}"
    return [
        xy.line(f"to its {len(keys)} highest-scoring keys", xs, ys, color="text", dash="dot"),
        xy.points(f"query {name}", np.array([qx]), np.array([qy]), color="text", star=True,
                  sizes=np.array([14.0]), hover_labels=[f"the query {name}"]),
    ]  # fmt: skip


def geometry_chart(geometry: Geometry, colour: str = "position", query: int | None = None) -> dict:
    """Queries (left) and keys (right) of one head on the same two principal axes, coloured by
    position range or by token kind, each point named by its token and position on hover; a
    picked query (index among the queries) starred, with lines to the keys it scores highest."""
    g = geometry
    pad = 0.05 * float(np.abs(g.coords).max() or 1.0)
    lo, hi = g.coords.min(0) - pad, g.coords.max(0) + pad
    panels = []
    for title, part in (("queries", slice(0, g.n_queries)), ("keys", slice(g.n_queries, None))):
        coords, positions, tokens = g.coords[part], g.positions[part], g.tokens[part]
        series = []
        for i, (name, inside) in enumerate(_groups(g, part, colour)):
            labels = [f"'{t}' at {p}" for t, p, keep in zip(tokens, positions, inside, strict=True) if keep]
            series.append(
                xy.points(name, coords[inside, 0], coords[inside, 1], color=charts.SERIES_COLORS[i],
                          sizes=np.full(int(inside.sum()), 6.0), hover_labels=labels, opacity=0.7)
            )  # fmt: skip
        if query is not None and title == "keys":
            series += _links(g, query)
        panels.append(
            xy.panel(
                series,
                title=title,
                x_title=f"axis 1 ({g.explained[0]:.0%} of the variance)",
                y_title=f"axis 2 ({g.explained[1]:.0%})",
                x_range=(float(lo[0]), float(hi[0])),
                y_range=(float(lo[1]), float(hi[1])),
                width=0.5,
            )
        )
    stage = "after RoPE's rotation" if g.rotated else "as the weights make them"
    return xy.xy_spec(
        panels,
        title=f"Layer {g.layer} head {g.head}: queries and keys {stage}, on two shared axes",
        height=380,
        digits=2,
        file=f"heads_geometry_L{g.layer}H{g.head}",
    )
