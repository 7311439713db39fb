// Tiny DOM helpers: the page is built from plain elements, so every node goes through `h`.

/**
 * Creates an element. `props` keys: `class`, `text`, `testid` (data-testid), `data` (dataset object),
 * `on` (event listeners), anything else is set as an attribute (false/null/undefined skip it).
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = String(value);
    else if (key === 'testid') node.dataset.testid = value;
    else if (key === 'data') Object.assign(node.dataset, value);
    else if (key === 'on') for (const [name, fn] of Object.entries(value)) node.addEventListener(name, fn);
    else if (key in node && typeof value !== 'string') node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Pretty JSON for display; values that are not JSON (undefined, cycles) still show something. */
export function pretty(value) {
  if (value === undefined) return '—';
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

/** Reads an editor's JSON; on failure marks the editor and says why in `error`. Returns {value} or null. */
export function readJsonEditor(editor, error) {
  error.hidden = true;
  try {
    const value = JSON.parse(editor.value);
    editor.classList.remove('invalid');
    return { value };
  } catch (failure) {
    error.textContent = `Invalid JSON: ${failure.message}`;
    error.hidden = false;
    editor.classList.add('invalid');
    return null;
  }
}

/** A duration in ms as people read it. */
export function formatMs(ms) {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
}

/** Local clock time of an epoch-ms instant, e.g. 14:02:07. */
export function formatClock(epochMs) {
  const date = new Date(epochMs);
  return Number.isNaN(date.getTime()) ? '' : date.toLocaleTimeString([], { hour12: false });
}

/** Keeps a scrolled pane pinned to its bottom only if the reader was already there. */
export function keepPinned(pane, mutate) {
  const pinned = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 48;
  mutate();
  if (pinned) pane.scrollTop = pane.scrollHeight;
}
