// Shared plumbing between a drawn chart and the person using it: the hover tip (what the
// chart kind says about the thing under the pointer), a click on a grid's head (sent back to
// Python), and the PNG button (the chart drawn again at twice the pixels, with its title).

function showTip(tip, canvas, h, [heading, ...lines], clickable) {
  // the tip's lines beside the pointer, the heading bold; on the left half of the chart it opens right
  tip.replaceChildren();
  if (heading) {
    const div = document.createElement("div"), b = document.createElement("b");
    b.textContent = heading;
    div.append(b, clickable ? " (click to open)" : "");
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
}

export function followPointer(canvas, tip, spec, hitAt, tipOf, onHead) {
  // hover tips and head clicks: hitAt(x, y) in canvas px is what lies there (null: nothing),
  // tipOf(hit) its [heading, lines...], onHead(panel) runs on a click on a clickable grid's head
  const hit = (ev) => {
    const r = canvas.getBoundingClientRect();
    return hitAt(ev.clientX - r.left, ev.clientY - r.top);
  };
  canvas.onmousemove = (ev) => {
    const h = hit(ev);
    tip.hidden = !h;
    canvas.style.cursor = h && spec.clickable ? "pointer" : "default";
    if (h) showTip(tip, canvas, h, tipOf(h), spec.clickable);
  };
  canvas.onmouseleave = () => {
    tip.hidden = true;
  };
  canvas.onclick = (ev) => {
    const h = hit(ev);
    if (h && spec.clickable) onHead(spec.panels[h.i]);
  };
}

export function savePng(spec, paint, { width, em, color }) {
  // download the chart drawn at twice its CSS pixels, named after spec.file
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
}
