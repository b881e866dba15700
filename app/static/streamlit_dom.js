// Streamlit's page as the lab finds it: the one table of the DOM hooks (data-testid and the
// like) that the lab's scripts, stylesheets, tours, benchmarks and tests reach for, each by a
// name of ours. Streamlit does not promise these hooks, so an upgrade that renames one is mended
// here alone. attention_lab.frame.streamlit_dom reads the table for Python; the tests check that
// no other file names a hook and that every one is in the installed Streamlit's frontend.
// PARTS stays plain JSON (double quotes, no trailing comma, no comments inside): Python reads it.

export const PARTS = {
  "main": "[data-testid='stMain']",
  "main_block": "[data-testid='stMainBlockContainer']",
  "header": "header[data-testid='stHeader']",
  "toolbar": "[data-testid='stToolbar']",
  "main_menu": "[data-testid='stMainMenu']",
  "status": "[data-testid='stStatusWidget']",
  "sidebar": "[data-testid='stSidebar']",
  "collapsed_sidebar": "[data-testid='stSidebar'][data-collapsed='true']",
  "open_sidebar": "[data-testid='stSidebar'][data-collapsed='false']",
  "expand_sidebar": "[data-testid='stExpandSidebarButton']",
  "page_link": "[data-testid='stPageLink-NavLink']",
  "element": "[data-testid='stElementContainer']",
  "any_part": "[data-testid]",
  "layout_wrapper": "[data-testid='stLayoutWrapper']",
  "vertical_block": "[data-testid='stVerticalBlock']",
  "columns": "[data-testid='stHorizontalBlock']",
  "column": "[data-testid='stColumn']",
  "skeleton": "[data-testid='stSkeleton']",
  "exception": "[data-testid='stException']",
  "component": "[data-testid='stBidiComponentIsolated']",
  "icon": "[data-testid^='stIcon']",
  "heading": "[data-testid='stHeading']",
  "markdown": "[data-testid='stMarkdown']",
  "caption": "[data-testid='stCaptionContainer']",
  "html": "[data-testid='stHtml']",
  "alert": "[data-testid='stAlert']",
  "error_alert": "[data-testid='stAlertContentError']",
  "code": "[data-testid='stCode']",
  "metric": "[data-testid='stMetric']",
  "metric_value": "[data-testid='stMetricValue']",
  "dataframe": "[data-testid='stDataFrame']",
  "progress": "[data-testid='stProgress']",
  "widget_label": "[data-testid='stWidgetLabel']",
  "text_input": "[data-testid='stTextInput']",
  "text_area": "[data-testid='stTextArea']",
  "number_input": "[data-testid='stNumberInput']",
  "selectbox": "[data-testid='stSelectbox']",
  "multiselect": "[data-testid='stMultiSelect']",
  "multiselect_tags": "[data-testid='stMultiSelectTagsContainer']",
  "slider": "[data-testid='stSlider']",
  "slider_value": "[data-testid='stSliderThumbValue']",
  "radio": "[data-testid='stRadio']",
  "checkbox": "[data-testid='stCheckbox']",
  "pills": "[data-testid='stButtonGroup']",
  "file_drop": "[data-testid='stFileUploaderDropzoneInput']"
};

export function part(name) {
  // the CSS selector of Streamlit's element `name`; an unknown name throws (a typo is no miss)
  const selector = PARTS[name];
  if (selector === undefined) throw new Error(`no Streamlit part named "${name}"`);
  return selector;
}

export function keyed(key) {
  // the CSS selector of the element a widget or container with `key` is drawn in: Streamlit's class
  // for it, the key trimmed and each character outside [A-Za-z0-9_-] made a hyphen
  return `.st-key-${String(key).trim().replace(/[^a-zA-Z0-9_-]/g, "-")}`;
}
