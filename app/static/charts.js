// Charts drawn on a canvas in the page (see charts.py for the specs this reads): attention
// maps ("grid" of every head, one "head" or any labelled matrix) and grouped "bars".
// Why: plotly.js costs ~2.7 s of a 2-core box's main thread before its first chart; this
// draws a 4 x 4 grid in a few milliseconds. Hover names every cell or bar, a click on a
// grid's head sends {layer, head} back to Python, the PNG button saves the chart with its title.

const PAD = 6;

function decode(z) {
  // {"dtype": "f4" | "u2", "bdata": base64, "shape": [rows, cols] or [n], "scale": number}
  const bytes = Uint8Array.from(atob(z.bdata), (c) => c.charCodeAt(0));
  const raw = z.dtype === "u2" ? new Uint16Array(bytes.buffer) : new Float32Array(bytes.buffer);
  const scale = z.scale || 1, offset = z.offset || 0, nan = "nan" in z ? z.nan : null;  // a quantized map's gap
  const out = new Float64Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw[i] === nan ? NaN : raw[i] * scale + offset;
  return { values: out, rows: z.shape[0], cols: z.shape.length > 1 ? z.shape[1] : 1 };
}

function parseColor(c) {
  if (c.startsWith("#")) {
    const n = parseInt(c.slice(1), 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }
  return c.replace(/[^\d.,]/g, "").split(",").slice(0, 3).map(Number);
}

function lookupTable(stops) {
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

function range(spec, i) {
  // [zmin, zmax] of panel i: its own where it has one (score maps), else the chart's
  const p = spec.panels[i];
  return [p.zmin ?? spec.zmin, p.zmax ?? spec.zmax];
}

function heatImage(panel, [zmin, zmax], lut) {
  // the panel's (rows, cols) values as an image of one pixel per cell
  const { values, rows, cols } = panel;
  const img = new ImageData(cols, rows);
  const span = zmax - zmin || 1;
  for (let i = 0; i < rows * cols; i++) {
    const v = values[i];
    if (Number.isNaN(v)) {
      img.data.set([238, 238, 238, 255], i * 4);
      continue;
    }
    const t = Math.round(255 * Math.min(1, Math.max(0, (v - zmin) / span)));
    img.data.set([lut[t * 3], lut[t * 3 + 1], lut[t * 3 + 2], 255], i * 4);
  }
  const off = document.createElement("canvas");
  off.width = cols;
  off.height = rows;
  off.getContext("2d").putImageData(img, 0, 0);
  return off;
}

function upright(ctx, text, x, y, align, baseline = ctx.textBaseline) {
  // text turned to read upwards, anchored at (x, y): axis titles, turned tick labels, values on bars
  ctx.save();
  ctx.translate(x, y);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = align;
  ctx.textBaseline = baseline;
  ctx.fillText(text, 0, 0);
  ctx.restore();
}

function fixed(v, digits, top = v) {
  // v with `digits` decimals; where `top` (the value, or the largest of its map) would read
  // as zero, e.g. gradients of 3e-6, in e-notation
  return v !== 0 && Math.abs(top) < 0.5 * 10 ** -digits ? v.toExponential(1) : v.toFixed(digits);
}

function formatValue(v, spec) {
  if (Number.isNaN(v)) return "masked";
  return spec.percent ? `${(100 * v).toFixed(2)}%` : fixed(v, spec.digits ?? 4);
}

function layout(ctx, spec, width, em) {
  // pixel boxes of every panel, the colour bar and the labels for a canvas of this width
  const isGrid = spec.kind === "grid";
  const tick = Math.round(spec.tick_px * em);
  const titlePx = Math.round((isGrid ? 14 : 15) * em);
  ctx.font = `${tick}px ${spec.font}`;
  let left = PAD, top = PAD + (spec.title ? titlePx + 8 : 0);
  let right = PAD + (spec.colorbar ? 58 * em : 0);
  let bottom = PAD + (spec.outline ? tick + 10 : 0);
  let labels = 0; // height of the key labels above a head
  if (!isGrid) {
    const shownY = spec.y.filter((_, i) => i % spec.y_every === 0);
    const widest = (labels) => Math.max(0, ...labels.map((t) => ctx.measureText(t).width));
    left += tick + 8 + widest(shownY) + 6; // axis title, labels
    labels = spec.x_angle ? widest(spec.x.filter((_, k) => k % (spec.x_every || 1) === 0)) + 6 : tick + 6;
    top += tick + 6 + labels;
  }
  if (isGrid && spec.axis_labels) {
    // score maps: every panel's rows and columns are numbered (layers down, heads across)
    left += Math.max(...spec.y.map((t) => ctx.measureText(t).width)) + 6;
    bottom += tick + 4;
  }
  const rowTitle = isGrid && spec.row_titles ? Math.round(13 * em) + 8 : 0;
  const cellTitle = isGrid ? Math.round(12 * em) + 6 + rowTitle : 0;
  const gap = isGrid ? (spec.axis_labels ? tick + 12 : 8) : 0;
  const cols = spec.columns, rows = Math.ceil(spec.panels.length / cols);
  const w = (width - left - right - gap * (cols - 1)) / cols;
  const h = (spec.height - top - bottom - (gap + cellTitle) * rows + gap) / rows;
  const boxes = spec.panels.map((p, i) => {
    const r = Math.floor(i / cols), c = i % cols;
    return { x: left + c * (w + gap), y: top + cellTitle + r * (h + gap + cellTitle), w, h };
  });
  return { boxes, left, top, right, bottom, tick, titlePx, cellTitle, rowTitle, labels };
}

function cellNumbers(ctx, panel, b, [zmin, zmax], digits, font, em, lut) {
  // each cell's value written in it, where cells are large enough (score maps)
  const cw = b.w / panel.cols, ch = b.h / panel.rows, px = Math.round(11 * em);
  if (cw < (digits + 3) * 0.62 * px + 4 || ch < px + 4) return;
  ctx.font = `${px}px ${font}`;
  const top = panel.values.reduce((m, v) => (Number.isNaN(v) ? m : Math.max(m, Math.abs(v))), 0);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let q = 0; q < panel.rows; q++) {
    for (let k = 0; k < panel.cols; k++) {
      const v = panel.values[q * panel.cols + k];
      if (Number.isNaN(v)) continue;
      const c = 3 * Math.round(255 * Math.min(1, Math.max(0, (v - zmin) / (zmax - zmin || 1))));
      const light = 0.299 * lut[c] + 0.587 * lut[c + 1] + 0.114 * lut[c + 2];
      ctx.fillStyle = light < 150 ? "#fff" : "#31333f"; // white on dark cells, whatever the scale
      ctx.fillText(fixed(v, digits, top), b.x + (k + 0.5) * cw, b.y + (q + 0.5) * ch);
    }
  }
}

function axisLabels(ctx, spec, b, panel, i, L, color) {
  // row numbers left of the first column, column numbers under every panel
  ctx.fillStyle = color;
  ctx.font = `${L.tick}px ${spec.font}`;
  ctx.textBaseline = "middle";
  if (i % spec.columns === 0) {
    ctx.textAlign = "right";
    spec.y.forEach((t, q) => ctx.fillText(t, b.x - 4, b.y + ((q + 0.5) * b.h) / panel.rows));
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  spec.x.forEach((t, k) => ctx.fillText(t, b.x + ((k + 0.5) * b.w) / panel.cols, b.y + b.h + 3));
}

function draw(ctx, spec, panels, images, luts, width, em, color) {
  const L = layout(ctx, spec, width, em);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, spec.height);
  ctx.fillStyle = color;
  ctx.textBaseline = "alphabetic";
  if (spec.title) {
    ctx.font = `600 ${L.titlePx}px ${spec.font}`;
    ctx.textAlign = "left";
    ctx.fillText(spec.title, PAD, PAD + L.titlePx);
  }
  ctx.imageSmoothingEnabled = false;
  spec.panels.forEach((p, i) => {
    const b = L.boxes[i];
    ctx.drawImage(images[i], b.x, b.y, b.w, b.h);
    if (spec.kind === "grid") {
      ctx.font = `${Math.round(12 * em)}px ${spec.font}`;
      ctx.textAlign = "center";
      ctx.textBaseline = "alphabetic";
      ctx.fillStyle = color;
      ctx.fillText(p.title, b.x + b.w / 2, b.y - 5);
      const cols = spec.columns;
      if (spec.row_titles && i % cols === 0) {
        ctx.font = `600 ${Math.round(13 * em)}px ${spec.font}`;
        ctx.textAlign = "left";
        ctx.fillText(spec.row_titles[Math.floor(i / cols)], PAD, b.y - L.cellTitle + L.rowTitle - 6);
      }
      if (p.digits != null) cellNumbers(ctx, panels[i], b, range(spec, i), p.digits, spec.font, em, luts[i]);
      if (spec.axis_labels) axisLabels(ctx, spec, b, panels[i], i, L, color);
    }
  });
  const first = L.boxes[0], data = panels[0];
  if (spec.kind === "head" && spec.cell_digits != null) {
    cellNumbers(ctx, data, first, range(spec, 0), spec.cell_digits, spec.font, em, luts[0]);
  }
  if (spec.outline && spec.outline.cells.length) {
    ctx.strokeStyle = spec.outline.color;
    ctx.lineWidth = 2;
    ctx.setLineDash(spec.outline.dash ? [5, 3] : []);
    const cw = first.w / data.cols, ch = first.h / data.rows;
    for (const [q, k] of spec.outline.cells) ctx.strokeRect(first.x + k * cw + 1.5, first.y + q * ch + 1.5, cw - 3, ch - 3);
    ctx.fillStyle = color;
    ctx.font = `${L.tick}px ${spec.font}`;
    ctx.textAlign = "left";
    const y = spec.height - PAD - 2;
    ctx.strokeRect(first.x, y - L.tick + 2, L.tick - 2, L.tick - 2);
    ctx.setLineDash([]);
    ctx.fillText(spec.outline.name, first.x + L.tick + 4, y);
  }
  if (spec.x_marker) {
    // a dashed line between two columns (e.g. the last position seen in training), named at its top
    const x = first.x + (spec.x_marker.at * first.w) / data.cols;
    ctx.strokeStyle = "#111827";
    ctx.lineWidth = 2.5;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    ctx.moveTo(x, first.y);
    ctx.lineTo(x, first.y + first.h);
    ctx.stroke();
    ctx.setLineDash([]);
    if (spec.x_marker.text) {
      ctx.font = `600 ${L.tick}px ${spec.font}`;
      ctx.textBaseline = "top";
      const wide = ctx.measureText(spec.x_marker.text).width;
      const left = x + 6 + wide > first.x + first.w;  // no room on the right: write it on the left
      ctx.textAlign = left ? "right" : "left";
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(left ? x - 8 - wide : x + 4, first.y + 4, wide + 4, L.tick + 4);
      ctx.fillStyle = "#111827";
      ctx.fillText(spec.x_marker.text, left ? x - 6 : x + 6, first.y + 6);
    }
  }
  if (spec.selected) {
    const i = spec.panels.findIndex((p) => p.layer === spec.selected[0] && p.head === spec.selected[1]);
    if (i >= 0) {
      const b = L.boxes[i];
      ctx.strokeStyle = "#dc2626";
      ctx.lineWidth = 3;
      ctx.strokeRect(b.x - 3, b.y - 3, b.w + 6, b.h + 6);
    }
  }
  if (spec.kind === "head") {
    ctx.fillStyle = color;
    ctx.font = `${L.tick}px ${spec.font}`;
    const rowH = first.h / data.rows, colW = first.w / data.cols;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    spec.y.forEach((t, q) => {
      if (q % spec.y_every === 0) ctx.fillText(t, first.x - 6, first.y + (q + 0.5) * rowH);
    });
    spec.x.forEach((t, k) => {
      if (k % (spec.x_every || 1)) return;
      const x = first.x + (k + 0.5) * colW;
      if (spec.x_angle) {
        upright(ctx, t, x, first.y - 6, "left");
      } else {
        ctx.textAlign = "center";
        ctx.textBaseline = "bottom";
        ctx.fillText(t, x, first.y - 5);
        ctx.textBaseline = "middle";
      }
    });
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.fillText(spec.x_title, first.x + first.w / 2, L.top - L.labels - L.tick - 6);
    upright(ctx, spec.y_title, PAD, first.y + first.h / 2, "center", "top");
  }
  if (spec.colorbar) {
    const last = L.boxes[L.boxes.length - 1];
    const x = width - L.right + 12 * em, y0 = first.y, y1 = last.y + last.h;
    const grad = ctx.createLinearGradient(0, y1, 0, y0);
    spec.colors.forEach(([at, c]) => grad.addColorStop(at, c));
    ctx.fillStyle = grad;
    ctx.fillRect(x, y0, 12, y1 - y0);
    ctx.fillStyle = color;
    ctx.font = `${L.tick}px ${spec.font}`;
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    for (const v of fixedTicks(spec.zmin, spec.zmax).ticks) {
      const y = y1 - ((v - spec.zmin) / (spec.zmax - spec.zmin || 1)) * (y1 - y0);
      ctx.fillText(String(+v.toPrecision(3)), x + 16, y);
    }
    ctx.textBaseline = "bottom";
    ctx.fillText(spec.colorbar.title, x - 4, y0 - L.tick / 2 - 4);
  }
  return L;
}


// ---------------------------------------------------------------- bars

function niceTicks(lo, hi) {
  // about five round values spanning [lo, hi], and the span they cover
  const raw = (hi - lo || 1) / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const first = Math.floor(lo / step) * step, last = Math.ceil(hi / step) * step;
  const ticks = [];
  for (let v = first; v <= last + step / 2; v += step) ticks.push(+v.toPrecision(6));
  return { ticks, lo: first, hi: last };
}

function fixedTicks(lo, hi) {
  // a given axis range [lo, hi] with round ticks inside it
  return { ticks: niceTicks(lo, hi).ticks.filter((v) => v >= lo - 1e-12 && v <= hi + 1e-12), lo, hi };
}

function tickText(v, step) {
  // a tick value as short text: 1e-4 steps in e-notation, others with the step's decimals
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a < 1e-3 || a >= 1e6) return v.toExponential(Math.max(0, Math.min(2, -Math.floor(Math.log10(step)) + Math.floor(Math.log10(a)))));
  let d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  while (d < 6 && Math.abs(step * 10 ** d - Math.round(step * 10 ** d)) > 1e-6) d++;  // 0.025 needs 3
  return String(+v.toFixed(d));
}

function barsLayout(ctx, spec, series, width, em) {
  const tick = Math.round(spec.tick_px * em), titlePx = Math.round(15 * em);
  const all = series.flatMap((s) => Array.from(s.values).filter(Number.isFinite));
  const scale = spec.y_range ? fixedTicks(...spec.y_range) : niceTicks(Math.min(0, ...all), Math.max(0, ...all));
  ctx.font = `${tick}px ${spec.font}`;
  const shown = spec.x.filter((_, k) => k % spec.x_every === 0);
  const widest = Math.max(0, ...shown.map((t) => ctx.measureText(t).width));
  const yLabels = Math.max(...scale.ticks.map((v) => ctx.measureText(String(v)).width));
  const text = spec.series.some((s) => s.text) ? (spec.text_angle ? 0 : tick + 4) : 0;  // room for values
  const top = PAD + (spec.title ? titlePx + 8 : 0) + (spec.legend ? tick + 16 : 0) + tick / 2 + text;
  const left = PAD + tick + 8 + yLabels + 6;
  const bottom = PAD + (spec.x_title ? tick + 8 : 0) + (spec.x_angle ? widest + 8 : tick + 8);
  const plot = { x: left, y: top, w: width - left - PAD, h: spec.height - top - bottom };
  return { plot, scale, tick, titlePx };
}

function drawBars(ctx, spec, series, width, em, color) {
  const L = barsLayout(ctx, spec, series, width, em);
  const { plot, scale, tick } = L;
  const yOf = (v) => plot.y + plot.h - ((v - scale.lo) / (scale.hi - scale.lo || 1)) * plot.h;
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, spec.height);
  ctx.fillStyle = color;
  if (spec.title) {
    ctx.font = `600 ${L.titlePx}px ${spec.font}`;
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    ctx.fillText(spec.title, PAD, PAD + L.titlePx);
  }
  ctx.font = `${tick}px ${spec.font}`;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  ctx.strokeStyle = "#e6e6e6";
  ctx.lineWidth = 1;
  for (const v of scale.ticks) {
    const y = Math.round(yOf(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(plot.x, y);
    ctx.lineTo(plot.x + plot.w, y);
    ctx.stroke();
    ctx.fillText(String(v), plot.x - 6, y);
  }
  const n = spec.x.length, slot = plot.w / Math.max(n, 1), bar = (slot * 0.8) / series.length;
  series.forEach((s, j) => {
    ctx.fillStyle = spec.colors[j % spec.colors.length];
    for (let k = 0; k < n; k++) {
      const x = plot.x + k * slot + slot * 0.1 + j * bar, y0 = yOf(0), y1 = yOf(s.values[k]);
      ctx.fillRect(x, Math.min(y0, y1), Math.max(1, bar - (series.length > 1 ? 1 : 0)), Math.abs(y1 - y0));
    }
  });
  ctx.fillStyle = color;
  ctx.font = `${tick}px ${spec.font}`;
  spec.series.forEach((s, j) => {
    // each bar's value written above it (turned in narrow columns)
    if (!s.text) return;
    for (let k = 0; k < n; k++) {
      const x = plot.x + k * slot + slot * 0.1 + (j + 0.5) * bar, y = Math.min(yOf(0), yOf(series[j].values[k])) - 4;
      if (spec.text_angle) upright(ctx, s.text[k], x, y, "left", "middle");
      else {
        ctx.textAlign = "center";
        ctx.textBaseline = "bottom";
        ctx.fillText(s.text[k], x, y);
      }
    }
  });
  ctx.strokeStyle = "#888";
  ctx.beginPath();
  ctx.moveTo(plot.x, Math.round(yOf(0)) + 0.5);
  ctx.lineTo(plot.x + plot.w, Math.round(yOf(0)) + 0.5);
  ctx.stroke();
  ctx.fillStyle = color;
  spec.x.forEach((t, k) => {
    if (k % spec.x_every) return;
    const x = plot.x + (k + 0.5) * slot, y = plot.y + plot.h + 6;
    if (spec.x_angle) {
      upright(ctx, t, x, y, "right");
    } else {
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      ctx.fillText(t, x, y);
    }
  });
  ctx.textAlign = "center";
  ctx.textBaseline = "bottom";
  if (spec.x_title) ctx.fillText(spec.x_title, plot.x + plot.w / 2, spec.height - PAD);
  upright(ctx, spec.y_title, PAD, plot.y + plot.h / 2, "center", "top");
  if (spec.legend) {
    ctx.textAlign = "left";
    ctx.textBaseline = "middle";
    let x = width - PAD;
    const y = plot.y - tick - 10;
    for (let j = series.length - 1; j >= 0; j--) {
      x -= ctx.measureText(spec.series[j].name).width + tick + 18;
      ctx.fillStyle = spec.colors[j % spec.colors.length];
      ctx.fillRect(x, y - tick / 2 + 1, tick - 2, tick - 2);
      ctx.fillStyle = color;
      ctx.fillText(spec.series[j].name, x + tick + 2, y);
    }
  }
  return { boxes: [plot], slot };
}

// ---------------------------------------------------------------- xy: curves, points, bars over numbers

function numText(v, digits) {
  // a data value for a tip: tiny and huge ones in e-notation, others with up to `digits` decimals
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 10 ** -Math.min(3, digits) || a >= 1e6)) return v.toExponential(3);
  return String(+v.toFixed(digits));
}

function xyData(spec) {
  // every series of every panel decoded: {x, y, sizes} arrays
  return spec.panels.map((p) =>
    p.series.map((s) => ({ x: decode(s.x).values, y: decode(s.y).values, sizes: s.sizes || null }))
  );
}

function xyAxes(panel, data) {
  // the panel's x and y axes {lo, hi, ticks: [[value, label]], log} from given ranges or its data
  const xs = [], ys = [];
  panel.series.forEach((s, j) => {
    const d = data[j];
    for (let i = 0; i < d.x.length; i++) {
      if (!Number.isFinite(d.x[i]) || !Number.isFinite(d.y[i])) continue;
      const half = s.type === "bars" ? (s.bar_width || 0) / 2 : 0;
      xs.push(d.x[i] - half, d.x[i] + half);
      ys.push(d.y[i]);
      if (s.type === "bars" || s.type === "arrows") ys.push(0);
      if (s.type === "arrows") xs.push(0);
    }
  });
  for (const v of panel.vlines || []) xs.push(v.x);
  const t = panel.x_log ? (v) => Math.log10(v) : (v) => v;
  let [xlo, xhi] = panel.x_range || [Math.min(...xs), Math.max(...xs)];
  if (!(xhi > xlo)) [xlo, xhi] = [xlo - 1, xlo + 1];
  const xTicks = panel.x_ticks
    ? panel.x_ticks.filter(([v]) => v >= xlo && v <= xhi)
    : fixedTicks(xlo, xhi).ticks.map((v, _, all) => [v, tickText(v, (all[1] - all[0]) || 1)]);
  let y;
  if (panel.y_range) y = fixedTicks(...panel.y_range);
  else {
    const lo = Math.min(...ys), hi = Math.max(...ys);
    y = hi > lo ? niceTicks(lo, hi) : niceTicks(lo - 1, hi + 1);
  }
  const step = y.ticks.length > 1 ? y.ticks[1] - y.ticks[0] : 1;
  return {
    x: { lo: t(xlo), hi: t(xhi), t, ticks: xTicks.map(([v, label]) => [t(v), label]) },
    y: { lo: y.lo, hi: y.hi, t: (v) => v, ticks: y.ticks.map((v) => [v, tickText(v, step)]) },
  };
}

function xyLegend(spec) {
  // [{name, color, type, dash}] of every named series, once each
  const seen = new Set(), out = [];
  for (const p of spec.panels) {
    for (const s of p.series) {
      if (!s.name || s.legend === false || seen.has(s.name)) continue;
      seen.add(s.name);
      out.push(s);
    }
  }
  return out.length < 2 ? [] : out;  // one curve needs no key
}

function star(ctx, x, y, r) {
  ctx.beginPath();
  for (let i = 0; i < 10; i++) {
    const a = -Math.PI / 2 + (i * Math.PI) / 5, rr = i % 2 ? r * 0.45 : r;
    ctx.lineTo(x + rr * Math.cos(a), y + rr * Math.sin(a));
  }
  ctx.closePath();
  ctx.fill();
}

function drawSeries(ctx, s, d, sx, sy, font, tick, color) {
  ctx.strokeStyle = ctx.fillStyle = s.color;
  ctx.setLineDash(s.dash === "dash" ? [8, 5] : s.dash === "dot" ? [2, 4] : s.dash === "dashdot" ? [8, 4, 2, 4] : []);
  ctx.lineWidth = 2.5;
  const n = d.x.length;
  if (s.type === "line") {
    ctx.beginPath();
    let open = false;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(d.y[i]) || !Number.isFinite(d.x[i])) { open = false; continue; }
      const x = sx(d.x[i]), y = sy(d.y[i]);
      if (open) ctx.lineTo(x, y); else ctx.moveTo(x, y);
      open = true;
    }
    ctx.stroke();
    ctx.setLineDash([]);
    if (s.markers) {
      for (let i = 0; i < n; i++) {
        if (!Number.isFinite(d.y[i])) continue;
        ctx.beginPath();
        ctx.arc(sx(d.x[i]), sy(d.y[i]), 3.5, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
  } else if (s.type === "bars") {
    const half = (s.bar_width || 0) / 2;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(d.y[i])) continue;
      const x0 = sx(d.x[i] - half), x1 = sx(d.x[i] + half), y0 = sy(0), y1 = sy(d.y[i]);
      ctx.fillRect(x0, Math.min(y0, y1), Math.max(1, x1 - x0 - (x1 - x0 > 4 ? 1 : 0)), Math.abs(y1 - y0));
    }
  } else if (s.type === "arrows") {
    for (let i = 0; i < n; i++) {
      const x0 = sx(0), y0 = sy(0), x1 = sx(d.x[i]), y1 = sy(d.y[i]);
      const a = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.lineTo(x1, y1);
      ctx.stroke();
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 10 * Math.cos(a - 0.4), y1 - 10 * Math.sin(a - 0.4));
      ctx.lineTo(x1 - 10 * Math.cos(a + 0.4), y1 - 10 * Math.sin(a + 0.4));
      ctx.closePath();
      ctx.fill();
    }
  } else {
    ctx.globalAlpha = s.opacity ?? 1;
    for (let i = 0; i < n; i++) {
      if (!Number.isFinite(d.y[i])) continue;
      const r = (d.sizes ? d.sizes[i] : 10) / 2;
      if (s.symbol === "star") star(ctx, sx(d.x[i]), sy(d.y[i]), r);
      else {
        ctx.beginPath();
        ctx.arc(sx(d.x[i]), sy(d.y[i]), r, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    ctx.globalAlpha = 1;
  }
  ctx.setLineDash([]);
  if (s.labels) {
    // each point named beside it (above, or right of a star)
    ctx.fillStyle = color;
    ctx.font = `${tick}px ${font}`;
    const right = s.symbol === "star";
    ctx.textAlign = right ? "left" : "center";
    ctx.textBaseline = right ? "middle" : "bottom";
    for (let i = 0; i < n; i++) {
      const r = (d.sizes ? d.sizes[i] : 10) / 2;
      ctx.fillText(s.labels[i], sx(d.x[i]) + (right ? r + 4 : 0), sy(d.y[i]) - (right ? 0 : r + 3));
    }
  }
}

function drawXY(ctx, spec, data, width, em, color) {
  const tick = Math.round((spec.tick_px || 13) * em), titlePx = Math.round(15 * em);
  ctx.fillStyle = "#fff";
  ctx.fillRect(0, 0, width, spec.height);
  ctx.fillStyle = color;
  ctx.textBaseline = "alphabetic";
  ctx.textAlign = "left";
  let top = PAD;
  if (spec.title) {
    ctx.font = `600 ${titlePx}px ${spec.font}`;
    ctx.fillText(spec.title, PAD, PAD + titlePx);
    top += titlePx + 8;
  }
  // the legend: one row (wrapping) of swatches under the title
  const legend = xyLegend(spec);
  if (legend.length) {
    ctx.font = `${tick}px ${spec.font}`;
    ctx.textBaseline = "middle";
    let x = PAD, y = top + tick / 2 + 2;
    for (const s of legend) {
      const w = ctx.measureText(s.name).width + 30 + 14;
      if (x + w > width - PAD && x > PAD) { x = PAD; y += tick + 8; }
      ctx.strokeStyle = ctx.fillStyle = s.color;
      if (s.type === "line") {
        ctx.lineWidth = 3;
        ctx.setLineDash(s.dash === "dash" ? [6, 3] : s.dash === "dot" ? [2, 3] : s.dash === "dashdot" ? [6, 3, 2, 3] : []);
        ctx.beginPath();
        ctx.moveTo(x, y);
        ctx.lineTo(x + 24, y);
        ctx.stroke();
        ctx.setLineDash([]);
      } else if (s.symbol === "star") star(ctx, x + 12, y, tick / 1.6);
      else ctx.fillRect(x + 6, y - tick / 2 + 1, tick - 2, tick - 2);
      ctx.fillStyle = color;
      ctx.fillText(s.name, x + 30, y);
      x += w;
    }
    top = y + tick / 2 + 10;
  }
  const panelTitle = spec.panels.some((p) => p.title) ? Math.round(14 * em) + 8 : 0;
  const gap = 28 * em;
  const shares = spec.panels.map((p) => p.width || 1);
  const total = shares.reduce((a, b) => a + b, 0);
  const free = width - 2 * PAD - gap * (spec.panels.length - 1);
  const out = [];
  let x0 = PAD;
  spec.panels.forEach((panel, i) => {
    const axes = xyAxes(panel, data[i]);
    const w = (free * shares[i]) / total;
    ctx.font = `${tick}px ${spec.font}`;
    const yLabels = Math.max(...axes.y.ticks.map(([, label]) => ctx.measureText(label).width));
    const left = x0 + (panel.y_title ? tick + 8 : 0) + yLabels + 6;
    const bottom = spec.height - PAD - (panel.x_title ? tick + 8 : 0) - tick - 8;
    const box = { x: left, y: top + panelTitle + tick / 2, w: x0 + w - left - 4, h: 0 };
    box.h = bottom - box.y;
    if (panel.equal) {
      // one unit is as long across as up: a circle stays round
      const unit = Math.min(box.w / (axes.x.hi - axes.x.lo), box.h / (axes.y.hi - axes.y.lo));
      const w2 = unit * (axes.x.hi - axes.x.lo), h2 = unit * (axes.y.hi - axes.y.lo);
      box.x += (box.w - w2) / 2;
      box.y += (box.h - h2) / 2;
      box.w = w2;
      box.h = h2;
    }
    const sx = (v) => box.x + ((axes.x.t(v) - axes.x.lo) / (axes.x.hi - axes.x.lo)) * box.w;
    const sy = (v) => box.y + box.h - ((v - axes.y.lo) / (axes.y.hi - axes.y.lo)) * box.h;
    // grid lines, ticks and titles
    ctx.strokeStyle = "#e6e6e6";
    ctx.lineWidth = 1;
    ctx.fillStyle = color;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const [v, label] of axes.y.ticks) {
      const y = Math.round(sy(v)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(box.x, y);
      ctx.lineTo(box.x + box.w, y);
      ctx.stroke();
      ctx.fillText(label, box.x - 6, y);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    let labelEnd = -Infinity; // where the last label drawn ends: a label that would touch it is left out
    for (const [v, label] of axes.x.ticks) {
      const x = Math.round(box.x + ((v - axes.x.lo) / (axes.x.hi - axes.x.lo)) * box.w) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, box.y);
      ctx.lineTo(x, box.y + box.h);
      ctx.stroke();
      const half = ctx.measureText(label).width / 2, at = Math.min(x, width - PAD - half); // the last stays whole
      if (at - half < labelEnd + 4) continue;
      ctx.fillText(label, at, box.y + box.h + 5);
      labelEnd = at + half;
    }
    ctx.strokeStyle = "#888";
    ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w - 1, box.h - 1);
    if (panel.x_title) {
      ctx.textBaseline = "bottom";
      ctx.fillText(panel.x_title, box.x + box.w / 2, spec.height - PAD);
    }
    if (panel.y_title) upright(ctx, panel.y_title, x0, box.y + box.h / 2, "center", "top");
    if (panel.title) {
      ctx.font = `${Math.round(14 * em)}px ${spec.font}`;
      ctx.textBaseline = "bottom";
      ctx.fillText(panel.title, box.x + box.w / 2, box.y - tick / 2 - 2);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x - 8, box.y - 40, box.w + 16, box.h + 48);  // markers at the edges stay whole, labels may rise
    ctx.clip();
    panel.series.forEach((s, j) => drawSeries(ctx, s, data[i][j], sx, sy, spec.font, tick, color));
    for (const v of panel.vlines || []) {
      const x = sx(v.x);
      ctx.strokeStyle = "#6b7280";
      ctx.lineWidth = 2;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(x, box.y);
      ctx.lineTo(x, box.y + box.h);
      ctx.stroke();
      ctx.setLineDash([]);
      if (v.text) {
        ctx.fillStyle = color;
        ctx.font = `${tick}px ${spec.font}`;
        const wide = ctx.measureText(v.text).width;
        const left = x + 6 + wide > box.x + box.w;
        ctx.textAlign = left ? "right" : "left";
        ctx.textBaseline = "top";
        ctx.fillText(v.text, left ? x - 5 : x + 5, box.y + 4);
      }
    }
    ctx.restore();
    out.push({ ...box, sx, sy });
    x0 += w + gap;
  });
  return { boxes: out };
}

function xyHit(spec, data, drawn, x, y) {
  // the point (or bar) nearest the pointer in the panel under it: {i, j, n}
  for (let i = 0; i < drawn.boxes.length; i++) {
    const b = drawn.boxes[i];
    if (x < b.x || x > b.x + b.w || y < b.y || y > b.y + b.h) continue;
    let best = null, bestD = 30;
    spec.panels[i].series.forEach((s, j) => {
      if (s.hover === false) return;
      const d = data[i][j];
      for (let n = 0; n < d.x.length; n++) {
        if (!Number.isFinite(d.y[n])) continue;
        let dist;
        if (s.type === "bars") {
          const half = (s.bar_width || 0) / 2;
          dist = x >= b.sx(d.x[n] - half) && x <= b.sx(d.x[n] + half) ? 0 : Infinity;
        } else dist = Math.hypot(b.sx(d.x[n]) - x, b.sy(d.y[n]) - y);
        if (dist < bestD) [best, bestD] = [{ i, j, n, x, y }, dist];
      }
    });
    return best;
  }
  return null;
}

function xyTip(spec, data, h) {
  const p = spec.panels[h.i], s = p.series[h.j], d = data[h.i][h.j], digits = spec.digits ?? 4;
  const xText = s.type === "bars" && s.bar_width ? `${numText(d.x[h.n], digits)} ± ${numText(s.bar_width / 2, digits)}` : numText(d.x[h.n], digits);
  const lines = [`${p.x_title || "x"} ${xText}`, `${p.y_title || p.title || "y"} ${numText(d.y[h.n], digits)}`];
  if (s.labels) lines.unshift(s.labels[h.n]);
  return [s.name || p.title || null, ...lines];
}

function tipLines(spec, panels, h) {
  // [bold heading or null, lines...] for the cell or bar under the pointer
  if (spec.kind === "bars") {
    const lines = spec.series.map((s, j) => `${s.name}: ${panels[j].values[h.k].toFixed(spec.digits)}`);
    return [`${spec.x_title ? spec.x_title + " " : ""}${spec.x[h.k]}`, ...lines];
  }
  const p = spec.panels[h.i], values = panels[h.i];
  const value = formatValue(values.values[h.q * values.cols + h.k], spec);
  if (spec.axis_labels) {
    // score maps: rows and columns are numbered already; the panel says what the value is
    return [p.value_name || p.title, `${spec.y_title} ${spec.y[h.q]} · ${spec.x_title} ${spec.x[h.k]}`, value];
  }
  const [yName, xName] = spec.kind === "grid" ? ["query", "key"] : [spec.y_title, spec.x_title];
  const heading = spec.kind === "grid" ? `layer ${p.layer} head ${p.head}` : null;
  const named = (i, label) => (label === String(i) ? label : `${i}: ${label}`); // numbered rows need no label
  return [heading, `${yName} ${named(h.q, spec.y[h.q])}`, `${xName} ${named(h.k, spec.x[h.k])}`, `${spec.value_name} ${value}`];
}

export default function (component) {
  const { data: spec, parentElement, setTriggerValue } = component;
  const host = parentElement.host || parentElement;
  let root = parentElement.querySelector("div.lab-chart");
  if (!root) {
    root = document.createElement("div");
    root.className = "lab-chart";
    root.innerHTML =
      '<canvas></canvas><div class="tip" hidden></div>' +
      '<button class="save" title="Download this chart as a PNG">PNG</button>';
    parentElement.appendChild(root);
  }
  const canvas = root.querySelector("canvas"), tip = root.querySelector(".tip");
  const isBars = spec.kind === "bars", isXY = spec.kind === "xy", isMap = !isBars && !isXY;
  const panels = isXY ? xyData(spec) : (isBars ? spec.series : spec.panels).map((p) => decode(p.z));
  const lut = isMap ? lookupTable(spec.colors) : null;
  const luts = isMap ? spec.panels.map((p) => (p.colors ? lookupTable(p.colors) : lut)) : [];
  const images = isMap ? panels.map((p, i) => heatImage(p, range(spec, i), luts[i])) : [];
  const paint = (ctx, width, em, color) =>
    isXY
      ? drawXY(ctx, spec, panels, width, em, color)
      : isBars
        ? drawBars(ctx, spec, panels, width, em, color)
        : draw(ctx, spec, panels, images, luts, width, em, color);
  let drawn = { boxes: [] };

  const render = () => {
    const style = getComputedStyle(host);
    const em = parseFloat(getComputedStyle(document.documentElement).fontSize) / 16 || 1;
    spec.font = style.fontFamily || "sans-serif";
    const width = Math.max(80, root.clientWidth || 160); // never wider than its column: a wider canvas is cut off
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(spec.height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${spec.height}px`;
    const ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const color = style.color || "#31333f";
    drawn = paint(ctx, width, em, color);
    root.__render = { width, em, color };
    // where things are, for tests and probes: [layer, head, x, y, w, h] per panel
    root.dataset.cells = JSON.stringify(
      drawn.boxes.map((b, i) => [
        isMap ? spec.panels[i].layer : null,
        isMap ? spec.panels[i].head : null,
        ...[b.x, b.y, b.w, b.h].map(Math.round),
      ])
    );
    // what the picture says, for screen readers and tests: the title and the legend's entries
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", spec.title || spec.file);
    const legend = isXY
      ? xyLegend(spec).map((s) => s.name)
      : isBars
        ? spec.legend ? spec.series.map((s) => s.name) : []
        : spec.outline ? [spec.outline.name] : [];
    root.dataset.legend = JSON.stringify(legend);
    root.dataset.drawn = String(Date.now());
  };

  const hit = (ev) => {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    if (isXY) return xyHit(spec, panels, drawn, x, y);
    for (let i = 0; i < drawn.boxes.length; i++) {
      const b = drawn.boxes[i];
      if (x < b.x || x >= b.x + b.w || y < b.y || y >= b.y + b.h) continue;
      if (isBars) return { i, q: 0, k: Math.min(spec.x.length - 1, Math.floor((x - b.x) / drawn.slot)), x, y };
      const p = panels[i];
      const q = Math.min(p.rows - 1, Math.floor(((y - b.y) / b.h) * p.rows));
      const k = Math.min(p.cols - 1, Math.floor(((x - b.x) / b.w) * p.cols));
      return { i, q, k, x, y };
    }
    return null;
  };
  canvas.onmousemove = (ev) => {
    const h = hit(ev);
    tip.hidden = !h;
    canvas.style.cursor = h && spec.clickable ? "pointer" : "default";
    if (!h) return;
    const [heading, ...lines] = isXY ? xyTip(spec, panels, h) : tipLines(spec, panels, h);
    tip.replaceChildren();
    if (heading) {
      const div = document.createElement("div"), b = document.createElement("b");
      b.textContent = heading;
      div.append(b, spec.clickable ? " (click to open)" : "");
      tip.appendChild(div);
    }
    for (const line of lines) {
      const div = document.createElement("div");
      div.textContent = line;
      tip.appendChild(div);
    }
    const flip = h.x > canvas.clientWidth / 2;
    tip.style.left = flip ? "" : `${h.x + 14}px`;
    tip.style.right = flip ? `${canvas.clientWidth - h.x + 14}px` : "";
    tip.style.top = `${h.y + 14}px`;
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  canvas.onclick = (ev) => {
    const h = hit(ev);
    if (h && spec.clickable) {
      const p = spec.panels[h.i];
      setTriggerValue("head", { layer: p.layer, head: p.head });
    }
  };
  root.querySelector(".save").onclick = () => {
    const { width, em, color } = root.__render;
    const out = document.createElement("canvas");
    out.width = width * 2;
    out.height = spec.height * 2;
    const ctx = out.getContext("2d");
    ctx.scale(2, 2);
    paint(ctx, width, em, color);
    const a = document.createElement("a");
    a.download = `${spec.file.replace(/[^\w.=+-]+/g, "_")}.png`;  // a title may name the file: no : or /
    a.href = out.toDataURL("image/png");
    a.click();
  };

  if (root.__observer) root.__observer.disconnect();
  let lastWidth = root.clientWidth;
  root.__observer = new ResizeObserver(() => {
    if (root.clientWidth !== lastWidth) {
      lastWidth = root.clientWidth;
      render();
    }
  });
  root.__observer.observe(root);
  render();
  return () => root.__observer.disconnect();
}
