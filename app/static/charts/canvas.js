// Shared by every chart kind: the spec's numbers decoded, text written on a canvas (turned,
// rounded), and the chart's background (the theme's) with its title.

export const PAD = 6; // px between the canvas edge and anything drawn

export function decode(z) {
  // {"dtype": "f4" | "u2", "bdata": base64, "shape": [rows, cols] or [n], "scale": number}
  const bytes = Uint8Array.from(atob(z.bdata), (c) => c.charCodeAt(0));
  const raw = z.dtype === "u2" ? new Uint16Array(bytes.buffer) : new Float32Array(bytes.buffer);
  const scale = z.scale || 1, offset = z.offset || 0, nan = "nan" in z ? z.nan : null;  // a quantized map's gap
  const out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw[i] === nan ? NaN : raw[i] * scale + offset;
  return { values: out, rows: z.shape[0], cols: z.shape.length > 1 ? z.shape[1] : 1 };
}

export function startChart(ctx, spec, width, titlePx, theme) {
  // the theme's background (an exported image has no transparent parts), the title at its top left
  ctx.fillStyle = theme.background;
  ctx.fillRect(0, 0, width, spec.height);
  ctx.fillStyle = theme.text;
  ctx.textAlign = "left";
  ctx.textBaseline = "alphabetic";
  if (spec.title) fitText(ctx, spec.title, PAD, PAD + titlePx, width - 2 * PAD, titlePx, `600 %spx ${spec.font}`);
}

export function fitText(ctx, text, x, y, room, px, font) {
  // text at x, y in `font` ("%s" stands for its px size), smaller down to 3/4 of px where it
  // would not fit `room` px (a phone's narrow chart), then cut with an ellipsis
  let size = px, shown = text;
  ctx.font = font.replace("%s", size);
  while (ctx.measureText(shown).width > room && size > Math.round(px * 0.75)) ctx.font = font.replace("%s", --size);
  while (ctx.measureText(shown).width > room && shown.length > 1) shown = `${shown.slice(0, -2)}…`;
  ctx.fillText(shown, x, y);
}

export function upright(ctx, text, x, y, align, baseline = ctx.textBaseline) {
  // text turned to read upwards, anchored at (x, y): axis titles, turned tick labels, values on bars
  ctx.save();
  ctx.translate(x, y);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = align;
  ctx.textBaseline = baseline;
  ctx.fillText(text, 0, 0);
  ctx.restore();
}

export function fixed(v, digits, top = v) {
  // v with `digits` decimals; where `top` (the value, or the largest of its map) would read
  // as zero, e.g. gradients of 3e-6, in e-notation
  return v !== 0 && Math.abs(top) < 0.5 * 10 ** -digits ? v.toExponential(1) : v.toFixed(digits);
}

export function numText(v, digits) {
  // a data value for a tip: tiny and huge ones in e-notation, others with up to `digits` decimals
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 10 ** -Math.min(3, digits) || a >= 1e6)) return v.toExponential(3);
  return String(+v.toFixed(digits));
}

export function boxAt(boxes, x, y) {
  // the index of the box that holds (x, y), its right and bottom edges excluded; -1 if none
  return boxes.findIndex((b) => x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + b.h);
}
