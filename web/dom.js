// The page's DOM helpers: elements are built with textContent only (never parsed markup), so no
// text from a file or a diagnostic can become markup.

/** document.getElementById. */
export const $ = (id) => document.getElementById(id);

/** A new element with a class list and text. */
export function el(tag, cls = '', text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

/** A button (type=button) with an optional test id and click handler. */
export function button(text, { cls = '', testid, onClick, title } = {}) {
  const b = el('button', cls, text);
  b.type = 'button';
  if (testid) b.setAttribute('data-testid', testid);
  if (title) b.title = title;
  if (onClick) b.addEventListener('click', onClick);
  return b;
}

/** Set the data-testid hook the browser tests rely on. */
export function testid(node, id) {
  node.setAttribute('data-testid', id);
  return node;
}

/** Size a canvas to its box at the device's pixel ratio; its 2D context in CSS pixels, cleared,
 *  with the box's width and height (null while the box has no size). */
export function canvasIn(canvas, box) {
  const dpr = window.devicePixelRatio || 1;
  const { width, height } = box.getBoundingClientRect();
  if (!width || !height) return null;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const g = canvas.getContext('2d');
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, width, height);
  return { g, width, height };
}

/** Save bytes or text as a download. */
export function download(data, name, type = 'application/octet-stream') {
  const blob = data instanceof Blob ? data : new Blob([data], { type });
  const a = el('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
