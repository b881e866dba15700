// An offline view (attention_lab.charts.offline): every chart drawn by the pages' own chart code
// (drawChart, bundled above this), a grid's head click opening that head beside it, steps with
// Previous / Next, and scenes (a tour) with Previous / Next and the arrow keys. No network.

function specOf(root, id) {
  return JSON.parse(root.querySelector(`script[data-spec="${id}"]`).textContent);
}

function mountCharts(scope, root) {
  // draw each chart of `scope` not drawn yet (a hidden scene draws when it is first shown)
  for (const el of scope.querySelectorAll(".lab-mount[data-spec]:not([data-mounted])")) {
    el.dataset.mounted = "1";
    drawChart({ data: specOf(root, el.dataset.spec), parentElement: el, setTriggerValue: () => {} });
  }
}

function linkHeads(block, root) {
  // a grid of heads and one head large: a click (or Enter) on a grid's head opens it
  const heads = specOf(root, block.dataset.heads), grid = specOf(root, block.dataset.grid);
  const gridEl = block.querySelector(".lab-grid"), headEl = block.querySelector(".lab-head");
  const note = block.querySelector(".lab-missing");
  const open = ({ layer, head }) => {
    const spec = heads[`${layer}.${head}`];
    note.hidden = Boolean(spec);
    note.textContent = spec ? "" : `Layer ${layer} head ${head} was not saved in this file.`;
    drawChart({ data: { ...grid, selected: [layer, head] }, parentElement: gridEl, setTriggerValue: (n, v) => open(v) });
    if (spec) drawChart({ data: spec, parentElement: headEl, setTriggerValue: () => {} });
  };
  open({ layer: grid.selected[0], head: grid.selected[1] });
}

function stepper(block, count, onShow) {
  // Previous / Next over `count` parts of `block`; returns the function that moves
  const prev = block.querySelector(":scope > .lab-steps-nav .lab-prev");
  const next = block.querySelector(":scope > .lab-steps-nav .lab-next");
  const where = block.querySelector(":scope > .lab-steps-nav .lab-where");
  let at = 0;
  const show = (i) => {
    at = Math.max(0, Math.min(count - 1, i));
    onShow(at);
    prev.disabled = at === 0;
    next.disabled = at === count - 1;
    where.textContent = `${at + 1} of ${count}`;
  };
  prev.onclick = () => show(at - 1);
  next.onclick = () => show(at + 1);
  show(0);
  return (step) => show(at + step);
}

function stepsBlock(block, root) {
  // a chart per step, one shown at a time
  const parts = [...block.querySelectorAll(":scope > .lab-step")];
  stepper(block, parts.length, (at) => {
    parts.forEach((p, i) => (p.hidden = i !== at));
    mountCharts(parts[at], root);
  });
}

function scenes(root) {
  // a tour: one scene at a time; the arrow keys move too (not while typing or on a chart)
  const parts = [...root.querySelectorAll(":scope > .lab-scene")];
  if (parts.length < 2) return;
  const move = stepper(root, parts.length, (at) => {
    parts.forEach((p, i) => (p.hidden = i !== at));
    mountCharts(parts[at], root);
    parts[at].querySelector("h2")?.focus({ preventScroll: true });
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.closest?.("canvas, input, textarea, select")) return; // a chart's keys are its own
    if (ev.key === "ArrowRight" || ev.key === "PageDown") move(1);
    else if (ev.key === "ArrowLeft" || ev.key === "PageUp") move(-1);
    else return;
    ev.preventDefault();
  });
}

function startOffline(root) {
  for (const block of root.querySelectorAll(".lab-linked")) linkHeads(block, root);
  for (const block of root.querySelectorAll(".lab-steps")) stepsBlock(block, root);
  scenes(root);
  for (const scene of root.querySelectorAll(".lab-scene:not([hidden])")) mountCharts(scene, root);
}
