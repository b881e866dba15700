// Shared plumbing between a drawn chart and the person using it: the hover tip (what the
// chart kind says about the thing under the pointer or the keyboard's cursor), a click or
// Enter on a grid's head or a clickable map's cell (sent back to Python), arrow keys over the chart's cells, points or
// bars with what they point at read out, and the downloads (PNG; SVG by the same paint code).

// what a click or Enter does, said in the tip and the live region: open a grid's head, or act on a
// map's cell (spec.clickable "cell", spec.click_says what happens)
const opens = (spec) => (spec.clickable === "cell" ? spec.click_says || "select this cell" : "open this head");

function showTip(tip, canvas, h, [heading, ...lines], spec) {
  // the tip's lines beside the point h, the heading bold; it opens towards the chart's middle,
  // so it is never cut off at the chart's edges
  tip.replaceChildren();
  if (heading) {
    const div = document.createElement("div"), b = document.createElement("b");
    b.textContent = heading;
    div.append(b, spec.clickable ? ` (click or Enter: ${opens(spec)})` : "");
    tip.appendChild(div);
  }
  if (!heading && spec.clickable) lines = [...lines, `click or Enter: ${opens(spec)}`];
  for (const line of lines) {
    const div = document.createElement("div");
    div.textContent = line;
    tip.appendChild(div);
  }
  tip.hidden = false;
  const w = canvas.clientWidth, h2 = canvas.clientHeight, tw = tip.offsetWidth;
  const x = h.x > w / 2 ? h.x - 14 - tw : h.x + 14; // towards the middle, then inside the chart
  tip.style.left = `${Math.max(0, Math.min(x, w - tw))}px`;
  tip.style.top = h.y < h2 / 2 ? `${h.y + 14}px` : "";
  tip.style.bottom = h.y < h2 / 2 ? "" : `${h2 - h.y + 14}px`;
}

export function followPointer(canvas, tip, spec, hitAt, tipOf, onHead) {
  // hover tips and head clicks: hitAt(x, y) in canvas px is what lies there (null: nothing),
  // tipOf(hit) its [heading, lines...], onHead(panel, hit) runs on a click on a clickable grid's head or cell
  const hit = (ev) => {
    const r = canvas.getBoundingClientRect();
    return hitAt(ev.clientX - r.left, ev.clientY - r.top);
  };
  canvas.onmousemove = (ev) => {
    const h = hit(ev);
    tip.hidden = !h;
    canvas.style.cursor = h && spec.clickable ? "pointer" : "default";
    if (h) showTip(tip, canvas, h, tipOf(h), spec);
  };
  canvas.onpointerdown = (ev) => {
    // a tap shows what hover shows (a touch screen has no hover; the tip stays until the next tap)
    if (ev.pointerType !== "mouse") canvas.onmousemove(ev);
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  canvas.onclick = (ev) => {
    const h = hit(ev);
    if (h && spec.clickable) onHead(spec.panels[h.i], h);
  };
}

const MOVES = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

export function followKeys(root, spec, stopsOf, tipOf, onHead) {
  // the keyboard's cursor: stopsOf() is the chart's rows of stops (hits with a box [x, y, w, h]);
  // arrows move along a row and between rows, Home/End to a row's ends; the tip shows and the
  // live region reads what is under the cursor; Enter on a clickable grid's head opens it (a cell: acts on it)
  const canvas = root.querySelector("canvas"), tip = root.querySelector(".tip");
  const cursor = root.querySelector(".cursor"), live = root.querySelector(".live");
  let at = null; // [row, column] of the cursor, kept while the chart is redrawn
  const show = () => {
    const rows = stopsOf();
    if (!rows.length) return;
    at ??= [0, 0];
    at[0] = Math.min(at[0], rows.length - 1);
    at[1] = Math.min(at[1], rows[at[0]].length - 1);
    const h = rows[at[0]][at[1]], [x, y, w, hh] = h.box;
    Object.assign(cursor.style, { left: `${x}px`, top: `${y}px`, width: `${w}px`, height: `${hh}px` });
    cursor.hidden = tip.hidden = false;
    const lines = tipOf(h);
    showTip(tip, canvas, h, lines, spec);
    live.textContent = lines.filter(Boolean).join(", ") + (spec.clickable ? `, Enter: ${opens(spec)}` : "");
    return h;
  };
  canvas.onkeydown = (ev) => {
    const rows = stopsOf();
    if (!rows.length) return;
    if (ev.key in MOVES || ev.key === "Home" || ev.key === "End") {
      ev.preventDefault();
      ev.stopPropagation(); // the chart's own: not the page's shortcuts (a tour's arrow keys)
      at ??= [0, -1];
      if (ev.key === "Home") at[1] = 0;
      else if (ev.key === "End") at[1] = rows[at[0]].length - 1;
      else {
        const [dr, dc] = MOVES[ev.key];
        at[0] = Math.max(0, Math.min(rows.length - 1, at[0] + dr));
        at[1] = Math.max(0, Math.min(rows[at[0]].length - 1, at[1] + dc));
      }
      show();
    } else if (ev.key === "Enter" && spec.clickable && at) {
      ev.preventDefault();
      const h = show();
      onHead(spec.panels[h.i], h);
    } else if (ev.key === "Escape") {
      cursor.hidden = tip.hidden = true;
    }
  };
  canvas.onfocus = () => {
    if (at) show();
  };
  canvas.onblur = () => {
    cursor.hidden = tip.hidden = true;
  };
  return () => (at && !cursor.hidden ? show() : null); // after a redraw: the cursor where the cells now are
}

export function fillTable(holder, tables) {
  // the chart's numbers as HTML tables: [{caption, columns, rows: [[row header, ...cells]]}]
  holder.replaceChildren();
  for (const t of tables) {
    const table = document.createElement("table");
    table.createCaption().textContent = t.caption;
    const head = table.createTHead().insertRow();
    for (const c of t.columns) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = c;
      head.appendChild(th);
    }
    const body = table.createTBody();
    for (const [name, ...cells] of t.rows) {
      const tr = body.insertRow(), th = document.createElement("th");
      th.scope = "row";
      th.textContent = name;
      tr.appendChild(th);
      for (const c of cells) tr.insertCell().textContent = c;
    }
    holder.appendChild(table);
  }
}

function download(name, href) {
  // the browser's download of href as `name` (a title may name the file: no : or /)
  const a = document.createElement("a");
  a.download = name.replace(/[^\w.=+-]+/g, "_");
  a.href = href;
  a.click();
}

export function savePng(spec, paint, { width, em, theme }) {
  // download the chart drawn at twice its CSS pixels, named after spec.file
  const out = document.createElement("canvas");
  out.width = width * 2;
  out.height = spec.height * 2;
  const ctx = out.getContext("2d");
  ctx.scale(2, 2);
  paint(ctx, width, em, theme);
  download(`${spec.file}.png`, out.toDataURL("image/png"));
}

export async function svgText(spec, paint, { width, em, theme }) {
  // the chart as SVG text: the same paint code on svgcanvas's SVG implementation of the 2D
  // context (fetched on first use); a map's cells stay one sharp image
  const { Context } = await import(new URL("../vendor/svgcanvas.esm.js", import.meta.url).href);
  const ctx = new Context({ width, height: spec.height });
  paint(ctx, width, em, theme);
  const svg = ctx.getSerializedSvg(true).replace(/<image /g, '<image style="image-rendering:pixelated" ');
  return svg.replace("<svg ", `<svg role="img" aria-label="${escapeXml(spec.title || spec.file)}" `);
}

function escapeXml(text) {
  return text.replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]);
}

export async function saveSvg(spec, paint, render) {
  // download the chart as an SVG file, named after spec.file
  const svg = await svgText(spec, paint, render);
  download(`${spec.file}.svg`, URL.createObjectURL(new Blob([svg], { type: "image/svg+xml" })));
}
