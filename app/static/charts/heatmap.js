// Heatmaps: a "grid" of small maps (every head of a model; score maps over layers x heads)
// or one large "head" map (one head's weights, any labelled matrix). Each map is painted as
// one image of one pixel per cell, scaled up: a 4 x 4 grid draws in a few milliseconds.

import { MARKER, OUTLINE_DASH, labelStep, markerLine } from "./axes.js";
import { PAD, boxAt, decode, fitText, fixed, startChart, upright } from "./canvas.js";
import { colorBar, heatImage, inkOn, lookupTable, shade } from "./colors.js";

function range(spec, i) {
  // [zmin, zmax] of panel i: its own where it has one (score maps), else the chart's
  const p = spec.panels[i];
  return [p.zmin ?? spec.zmin, p.zmax ?? spec.zmax];
}

export function prepare(spec) {
  // every panel decoded, with its colour table and image: made once, redrawn at any width
  const panels = spec.panels.map((p) => decode(p.z));
  const lut = lookupTable(spec.colors);
  const luts = spec.panels.map((p) => (p.colors ? lookupTable(p.colors) : lut));
  const images = panels.map((p, i) => heatImage(p, range(spec, i), luts[i]));
  return { panels, luts, images };
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
    const widest = (texts) => Math.max(0, ...texts.map((t) => ctx.measureText(t).width));
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

function cellNumbers(ctx, panel, b, range, digits, font, em, lut) {
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
      const c = 3 * shade(v, range);
      ctx.fillStyle = inkOn(lut[c], lut[c + 1], lut[c + 2]); // black or white, whichever reads better
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

function gridPanelText(ctx, spec, data, i, b, L, em, color) {
  // a grid panel's title (and its row's title), the values in its cells, its numbered axes
  const p = spec.panels[i];
  ctx.textAlign = "center";
  ctx.textBaseline = "alphabetic";
  ctx.fillStyle = color;
  fitText(ctx, p.title, b.x + b.w / 2, b.y - 5, b.w + 6, Math.round(12 * em), `%spx ${spec.font}`);
  if (spec.row_titles && i % spec.columns === 0) {
    ctx.font = `600 ${Math.round(13 * em)}px ${spec.font}`;
    ctx.textAlign = "left";
    ctx.fillText(spec.row_titles[Math.floor(i / spec.columns)], PAD, b.y - L.cellTitle + L.rowTitle - 6);
  }
  if (p.digits != null) cellNumbers(ctx, data.panels[i], b, range(spec, i), p.digits, spec.font, em, data.luts[i]);
  if (spec.axis_labels) axisLabels(ctx, spec, b, data.panels[i], i, L, color);
}

function markCell(ctx, x, y, w, h, crossed) {
  // one marked cell's outline; a solid one (leaked weight) also crossed by a diagonal, so it
  // differs from the dashed padding by its pattern, not by its colour alone
  ctx.strokeRect(x, y, w, h);
  if (!crossed) return;
  ctx.beginPath();
  ctx.moveTo(x, y + h);
  ctx.lineTo(x + w, y);
  ctx.stroke();
}

function outline(ctx, spec, b, panel, tick, color) {
  // marked cells outlined (red, crossed: weight where the causal mask forbids it; grey dashes:
  // padding), named below with the same mark
  ctx.strokeStyle = spec.outline.color;
  ctx.lineWidth = 2;
  const crossed = !spec.outline.dash;
  ctx.setLineDash(crossed ? [] : OUTLINE_DASH);
  const cw = b.w / panel.cols, ch = b.h / panel.rows;
  for (const [q, k] of spec.outline.cells) markCell(ctx, b.x + k * cw + 1.5, b.y + q * ch + 1.5, cw - 3, ch - 3, crossed);
  ctx.fillStyle = color;
  ctx.font = `${tick}px ${spec.font}`;
  ctx.textAlign = "left";
  const y = spec.height - PAD - 2;
  markCell(ctx, b.x, y - tick + 2, tick - 2, tick - 2, crossed);
  ctx.setLineDash([]);
  ctx.fillText(spec.outline.name, b.x + tick + 4, y);
}

function selectedBox(ctx, spec, boxes) {
  // a red frame around the grid's selected head
  const i = spec.panels.findIndex((p) => p.layer === spec.selected[0] && p.head === spec.selected[1]);
  if (i < 0) return;
  const b = boxes[i];
  ctx.strokeStyle = "#dc2626";
  ctx.lineWidth = 3;
  ctx.strokeRect(b.x - 3, b.y - 3, b.w + 6, b.h + 6);
}

function headLabels(ctx, spec, b, panel, L, color) {
  // a head map's query labels down the side (every y_every-th), key labels on top (turned
  // where neighbours would touch), and both axis titles
  ctx.fillStyle = color;
  ctx.font = `${L.tick}px ${spec.font}`;
  const rowH = b.h / panel.rows, colW = b.w / panel.cols;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  const yStep = labelStep(spec.y_every, rowH, L.tick + 1); // labels that would touch are thinned out
  spec.y.forEach((t, q) => {
    if (q % yStep === 0) ctx.fillText(t, b.x - 6, b.y + (q + 0.5) * rowH);
  });
  const shown = spec.x.filter((_, k) => k % (spec.x_every || 1) === 0);
  const need = spec.x_angle ? L.tick + 1 : Math.max(0, ...shown.map((t) => ctx.measureText(t).width)) + 4;
  const xStep = labelStep(spec.x_every, colW, need);
  const labelled = (labels, step) => labels.filter((_, i) => i % step === 0).length;
  L.labelled = { rows: [labelled(spec.y, yStep), spec.y.length], columns: [labelled(spec.x, xStep), spec.x.length] };
  spec.x.forEach((t, k) => {
    if (k % xStep) return;
    const x = b.x + (k + 0.5) * colW;
    if (spec.x_angle) {
      upright(ctx, t, x, b.y - 6, "left");
    } else {
      ctx.textAlign = "center";
      ctx.textBaseline = "bottom";
      ctx.fillText(t, x, b.y - 5);
      ctx.textBaseline = "middle";
    }
  });
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  ctx.fillText(spec.x_title, b.x + b.w / 2, L.top - L.labels - L.tick - 6);
  upright(ctx, spec.y_title, PAD, b.y + b.h / 2, "center", "top");
}

export function paint(ctx, spec, data, width, em, theme) {
  // the whole chart at this width in the theme's colours; returns where the panels are, for hover and clicks
  const L = layout(ctx, spec, width, em), color = theme.text;
  startChart(ctx, spec, width, L.titlePx, theme);
  ctx.imageSmoothingEnabled = false;
  spec.panels.forEach((p, i) => {
    const b = L.boxes[i];
    ctx.drawImage(data.images[i], b.x, b.y, b.w, b.h);
    ctx.strokeStyle = theme.frame; // a thin frame: a map's dark or light edge never melts into the page
    ctx.lineWidth = 1;
    ctx.strokeRect(b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1);
    if (spec.kind === "grid") gridPanelText(ctx, spec, data, i, b, L, em, color);
  });
  const first = L.boxes[0], last = L.boxes[L.boxes.length - 1], panel = data.panels[0];
  if (spec.kind === "head" && spec.cell_digits != null) {
    cellNumbers(ctx, panel, first, range(spec, 0), spec.cell_digits, spec.font, em, data.luts[0]);
  }
  if (spec.outline && spec.outline.cells.length) outline(ctx, spec, first, panel, L.tick, color);
  if (spec.x_marker) {
    // a line between two columns (e.g. the last position seen in training), named at its top;
    // a grid draws it in every map, unnamed (its small maps have no room for the words)
    const grid = spec.kind === "grid";
    (grid ? L.boxes : [first]).forEach((b) => {
      const x = b.x + (spec.x_marker.at * b.w) / panel.cols;
      const look = grid ? { ...MARKER, width: 1.5 } : MARKER;
      markerLine(ctx, x, b, grid ? "" : spec.x_marker.text, look, spec.font, L.tick, theme);
    });
  }
  if (spec.selected) selectedBox(ctx, spec, L.boxes);
  if (spec.kind === "head") headLabels(ctx, spec, first, panel, L, color);
  if (spec.colorbar) colorBar(ctx, spec, width - L.right + 12 * em, first.y, last.y + last.h, L.tick, color);
  return L;
}

export function hit(spec, data, drawn, x, y) {
  // the cell under the pointer: panel i, row q, column k
  const i = boxAt(drawn.boxes, x, y);
  if (i < 0) return null;
  const b = drawn.boxes[i], p = data.panels[i];
  const q = Math.min(p.rows - 1, Math.floor(((y - b.y) / b.h) * p.rows));
  const k = Math.min(p.cols - 1, Math.floor(((x - b.x) / b.w) * p.cols));
  return { i, q, k, x, y };
}

function valueText(v, spec) {
  // a cell's value for its tip and table: the spec's decimals (attention weights: 3, everywhere)
  if (Number.isNaN(v)) return "masked";
  return fixed(v, spec.digits ?? 4);
}

function axisNames(spec) {
  // what a map's rows and columns are: a grid of attention heads has queries and keys
  return spec.kind === "grid" && !spec.axis_labels ? ["query", "key"] : [spec.y_title, spec.x_title];
}

export function tip(spec, data, h) {
  // [bold heading or null, lines...] naming the cell under the pointer
  const p = spec.panels[h.i], values = data.panels[h.i];
  const value = valueText(values.values[h.q * values.cols + h.k], spec);
  if (spec.axis_labels) {
    // score maps: rows and columns are numbered already; the panel says what the value is
    return [p.value_name || p.title, `${spec.y_title} ${spec.y[h.q]} · ${spec.x_title} ${spec.x[h.k]}`, value];
  }
  const [yName, xName] = axisNames(spec);
  const heading = spec.kind === "grid" ? `layer ${p.layer} head ${p.head}` : null;
  const named = (i, label) => (label === String(i) ? label : `${i}: ${label}`); // numbered rows need no label
  if (h.head) {
    // the keyboard on a whole head: where its largest weight lies
    let top = 0;
    values.values.forEach((v, n) => (v > values.values[top] || Number.isNaN(values.values[top]) ? (top = n) : null));
    const q = Math.floor(top / values.cols), k = top % values.cols;
    const where = `${yName} ${named(q, spec.y[q])} to ${xName} ${named(k, spec.x[k])}`;
    return [heading, `largest ${spec.value_name} ${valueText(values.values[top], spec)}, ${where}`];
  }
  return [heading, `${yName} ${named(h.q, spec.y[h.q])}`, `${xName} ${named(h.k, spec.x[h.k])}`, `${spec.value_name} ${value}`];
}

export function legend(spec) {
  // the names the picture shows a key for
  return spec.outline ? [spec.outline.name] : [];
}

export function stops(spec, data, drawn) {
  // the keyboard's rows: a clickable grid's heads (rows of panels as laid out); else every cell,
  // a row per query (score maps: the rows of a line of panels side by side)
  const { boxes } = drawn;
  if (!boxes.length) return [];
  if (spec.kind === "grid" && spec.clickable) {
    const rows = [];
    boxes.forEach((b, i) => {
      const r = Math.floor(i / spec.columns);
      (rows[r] ||= []).push({ i, q: 0, k: 0, head: true, x: b.x + b.w / 2, y: b.y + b.h / 2, box: [b.x, b.y, b.w, b.h] });
    });
    return rows;
  }
  const rows = [];
  boxes.forEach((b, i) => {
    const p = data.panels[i], cw = b.w / p.cols, ch = b.h / p.rows, r0 = Math.floor(i / spec.columns) * p.rows;
    for (let q = 0; q < p.rows; q++) {
      const row = (rows[r0 + q] ||= []);
      for (let k = 0; k < p.cols; k++) {
        const x = b.x + k * cw, y = b.y + q * ch;
        row.push({ i, q, k, x: x + cw / 2, y: y + ch / 2, box: [x, y, cw, ch] });
      }
    }
  });
  return rows;
}

export function table(spec, data) {
  // every panel's numbers as a table: a row per query (map row), a column per key, each value
  // written as its tip writes it
  const [yName, xName] = axisNames(spec);
  return spec.panels.map((p, i) => {
    const values = data.panels[i];
    const rows = spec.y.map((name, q) => [name, ...spec.x.map((_, k) => valueText(values.values[q * values.cols + k], spec))]);
    const name = spec.kind === "grid" ? p.value_name || p.title || `layer ${p.layer} head ${p.head}` : spec.title || spec.file;
    return { caption: `${name}: ${yName} (rows) by ${xName} (columns)`, columns: [`${yName} \\ ${xName}`, ...spec.x], rows };
  });
}

export function about(spec) {
  // what the map shows, where Python gave no sentence: its size and scale
  const n = spec.panels.length, maps = n > 1 ? `${n} maps, each` : "A map";
  return `${maps} of ${spec.y.length} ${spec.y_title || "rows"} by ${spec.x.length} ${spec.x_title || "columns"}; ` +
    `colour shows the ${spec.value_name || "value"}, from ${spec.zmin} to ${spec.zmax}.`;
}
