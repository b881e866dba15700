// Shared colour code: a scale's [position, colour] stops as a 256-entry table, a map's values
// as an image of one pixel per cell, and the colour bar beside a map.

import { fixedTicks } from "./axes.js";

export function parseColor(c) {
  // "#rgb", "#rrggbb", "rgb(r,g,b)" or "rgba(r,g,b,a)" as [r, g, b]
  c = c.trim();
  if (c.startsWith("#")) {
    const hex = c.length === 4 ? [...c.slice(1)].map((h) => h + h).join("") : c.slice(1, 7);
    const n = parseInt(hex, 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }
  return c.replace(/[^\d.,]/g, "").split(",").slice(0, 3).map(Number);
}

export function withAlpha(c, alpha) {
  // colour c at this opacity, as "rgba(...)": grid lines and patches drawn from the theme's colours
  return `rgba(${parseColor(c).join(",")},${alpha})`;
}

export function inkOn(r, g, b) {
  // black or white text on the colour (r, g, b), whichever contrasts more (WCAG luminance)
  const lin = (c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const lum = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) ? "#000000" : "#ffffff";
}

export function lookupTable(stops) {
  // 256 RGB entries interpolated along the colour scale's [position, colour] stops
  const parsed = stops.map(([at, c]) => [at, parseColor(c)]);
  const lut = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const t = i / 255;
    let j = 0;
    while (j < parsed.length - 2 && parsed[j + 1][0] < t) j++;
    const [a, ca] = parsed[j];
    const [b, cb] = parsed[j + 1];
    const f = b > a ? Math.min(1, Math.max(0, (t - a) / (b - a))) : 0;
    for (let k = 0; k < 3; k++) lut[i * 3 + k] = ca[k] + f * (cb[k] - ca[k]);
  }
  return lut;
}

export function shade(v, [zmin, zmax]) {
  // the table entry (0..255) of value v on the scale [zmin, zmax]
  return Math.round(255 * Math.min(1, Math.max(0, (v - zmin) / (zmax - zmin || 1))));
}

export function heatImage(panel, range, lut) {
  // the panel's (rows, cols) values as an image of one pixel per cell (grey where missing)
  const { values, rows, cols } = panel;
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const v = values[i];
    if (Number.isNaN(v)) {
      img.data.set([238, 238, 238, 255], i * 4);
      continue;
    }
    const t = shade(v, range);
    img.data.set([lut[t * 3], lut[t * 3 + 1], lut[t * 3 + 2], 255], i * 4);
  }
  const off = document.createElement("canvas");
  off.width = cols;
  off.height = rows;
  off.getContext("2d").putImageData(img, 0, 0);
  return off;
}

export function colorBar(ctx, spec, x, y0, y1, tick, color) {
  // the scale as a 12 px bar from y1 (zmin) up to y0 (zmax), ticked at round values, titled above
  const grad = ctx.createLinearGradient(0, y1, 0, y0);
  spec.colors.forEach(([at, c]) => grad.addColorStop(at, c));
  ctx.fillStyle = grad;
  ctx.fillRect(x, y0, 12, y1 - y0);
  ctx.fillStyle = color;
  ctx.font = `${tick}px ${spec.font}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  for (const v of fixedTicks(spec.zmin, spec.zmax).ticks) {
    const y = y1 - ((v - spec.zmin) / (spec.zmax - spec.zmin || 1)) * (y1 - y0);
    ctx.fillText(String(+v.toPrecision(3)), x + 16, y);
  }
  ctx.textBaseline = "bottom";
  ctx.fillText(spec.colorbar.title, x - 4, y0 - tick / 2 - 4);
}
