// Building DOM nodes without HTML strings: every piece of data becomes a text node or a property, never markup.

/**
 * h('a', { href: '#/x', testid: 'link', className: 'c', on: { click } }, 'text', child, [more], null)
 * `testid` sets data-testid; `data` sets data-* attributes; `attrs` sets other attributes; strings become text.
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'testid') node.dataset.testid = value;
    else if (key === 'data') for (const [name, item] of Object.entries(value)) node.dataset[name] = String(item);
    else if (key === 'on') for (const [name, handler] of Object.entries(value)) node.addEventListener(name, handler);
    else if (key === 'attrs') for (const [name, item] of Object.entries(value)) node.setAttribute(name, String(item));
    else if (
      key === 'className' ||
      key === 'type' ||
      key === 'value' ||
      key === 'checked' ||
      key === 'disabled' ||
      key === 'title' ||
      key === 'placeholder' ||
      key === 'href' ||
      key === 'id' ||
      key === 'name' ||
      key === 'hidden' ||
      key === 'rows'
    )
      node[key] = value;
    else throw new Error(`h(): unknown property ${key}`);
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A money string as people read it: at most 4 decimals, with its currency; the exact amount in the tooltip. */
export function money(amount, currency) {
  const value = Number(amount);
  const shown = Number.isFinite(value) ? value.toLocaleString(undefined, { minimumFractionDigits: 2, maximumFractionDigits: 4 }) : String(amount);
  return h('span', { className: 'money', title: `${amount} ${currency ?? ''}`.trim() }, `${shown} ${currency ?? ''}`.trim());
}

/** An ISO instant in the operator's own zone, short. */
export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return String(iso);
  const sameDay = date.toDateString() === new Date().toDateString();
  return sameDay
    ? date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
}

/** A small label: `badge('paused', 'warn')`. */
export function badge(text, tone = '', testid) {
  return h('span', { className: `badge ${tone}`.trim(), testid }, text);
}

/** An empty state or a loading line. */
export function note(text, testid) {
  return h('p', { className: 'note', testid }, text);
}
