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
