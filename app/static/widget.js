// The notebook widget (anywidget): one chart per widget, drawn by the pages' own chart code
// (drawChart, bundled above this by attention_lab.charts.script.widget_module). The model holds
// the chart's spec; a click on a grid's head sets "head" to {layer, head, at}, which the Python
// side reads to open that head in the head view.

export default {
  render({ model, el }) {
    el.classList.add("lab-embed");
    let cleanup = null;
    const draw = () => {
      if (cleanup) cleanup();
      cleanup = drawChart({
        data: model.get("spec"),
        parentElement: el,
        setTriggerValue: (name, value) => {
          model.set(name, { ...value, at: Date.now() }); // a second click on one head still changes it
          model.save_changes();
        },
      });
    };
    model.on("change:spec", draw);
    draw();
    return () => {
      model.off("change:spec", draw);
      if (cleanup) cleanup();
    };
  },
};
