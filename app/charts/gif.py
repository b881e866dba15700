"""The /train scrubber's frames as an animated GIF, for slides: one head's attention of the
probe input at every snapshot, drawn with the charts' colour scale (Pillow, server-side:
a GIF is made once, on the click that downloads it)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from attention_lab.charts.specs import COLORSCALE, COLORSCALES

MAX_FRAMES = 80  # a run saves about 40 snapshots; more are thinned evenly
MAP_PX = 360  # the map's longer side
BAND_PX = 28  # the caption band above each frame
FRAME_MS = 400


def colour_table(name: str = COLORSCALE) -> np.ndarray:
    """(256, 3) uint8: the named scale's stops interpolated, as the charts draw it."""
    stops = np.array([[int(c) for c in rgb.split(",")] for rgb in COLORSCALES[name]], dtype=np.float64)
    at = np.linspace(0, 1, len(stops))
    t = np.linspace(0, 1, 256)
    return np.stack([np.interp(t, at, stops[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


def frame(weights: np.ndarray, caption: str, lut: np.ndarray) -> Image.Image:
    """One (Tq, Tk) map of weights in 0..1 as an image, `caption` written above it."""
    tq, tk = weights.shape
    cell = max(2, MAP_PX // max(tq, tk))
    codes = np.clip(np.nan_to_num(weights) * 255, 0, 255).round().astype(np.uint8)
    pixels = np.repeat(np.repeat(lut[codes], cell, axis=0), cell, axis=1)  # (Tq*cell, Tk*cell, 3)
    image = Image.new("RGB", (max(pixels.shape[1], 240), pixels.shape[0] + BAND_PX), "white")
    image.paste(Image.fromarray(pixels), (0, BAND_PX))
    ImageDraw.Draw(image).text((4, 6), caption, fill="black", font=ImageFont.load_default(size=14))
    return image


def animated_gif(maps: Sequence[np.ndarray], captions: Sequence[str]) -> bytes:
    """The maps (each (Tq, Tk), weights 0..1) as one looping GIF, at most MAX_FRAMES frames
    (evenly thinned, the last one kept)."""
    if not maps:
        raise ValueError("no snapshots to animate")
    keep = sorted(set(np.linspace(0, len(maps) - 1, min(len(maps), MAX_FRAMES)).round().astype(int)))
    lut = colour_table()
    frames = [frame(np.asarray(maps[i], dtype=np.float64), captions[i], lut) for i in keep]
    size = (max(f.width for f in frames), max(f.height for f in frames))
    frames = [f if f.size == size else _padded(f, size) for f in frames]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=FRAME_MS, loop=0)
    return out.getvalue()


def _padded(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    canvas = Image.new("RGB", size, "white")
    canvas.paste(image, (0, 0))
    return canvas
