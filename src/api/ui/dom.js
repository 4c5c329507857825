// Builds DOM with text nodes only: node ids and NACK messages come from dataplanes and are
// never parsed as HTML.

/**
 * An element with attributes and children. `class` and string attributes are set as such,
 * `on<event>` functions become listeners, `null`/`undefined`/`false` are skipped, and arrays
 * of children are flattened.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (typeof value === 'function') element.addEventListener(name.slice(2), value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

function append(parent, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces everything inside `element` with `children`. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
}

/** An SVG document's root, parsed from text and ready to insert. */
export function parseSvg(text) {
  const root = new DOMParser().parseFromString(text, 'image/svg+xml').documentElement;
  if (root.nodeName !== 'svg') throw new Error('the state chart is not an SVG document');
  return document.importNode(root, true);
}
