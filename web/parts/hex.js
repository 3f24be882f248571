// A hex view of the bytes around an error: the offending field, [offset, offset + length) as the
// core reports it, highlighted; bytes past the end of the file shown as such.
import { el } from '../dom.js';

/** bytes: Uint8Array starting at file offset `start`. */
export function renderHex(container, { bytes, start, offset, length, fileSize }) {
  container.replaceChildren();
  const rowStart = start - (start % 16);
  const end = Math.max(start + bytes.length, offset + Math.max(1, length));
  for (let base = rowStart; base < end; base += 16) {
    const line = el('div');
    line.append(el('span', 'off', base.toString(16).padStart(8, '0') + '  '));
    let ascii = '';
    for (let k = 0; k < 16; k++) {
      const at = base + k;
      const i = at - start;
      const inData = i >= 0 && i < bytes.length;
      const text = inData ? bytes[i].toString(16).padStart(2, '0') : at >= fileSize ? '··' : '  ';
      const hit = at >= offset && at < offset + length;
      const cls = hit ? 'hit' : at >= fileSize ? 'past' : at === offset && !length ? 'at' : '';
      line.append(el('span', cls, text), k === 7 ? '  ' : ' ');
      ascii += inData ? (bytes[i] >= 0x20 && bytes[i] < 0x7f ? String.fromCharCode(bytes[i]) : '.') : ' ';
    }
    line.append(el('span', 'off', ' ' + ascii));
    container.append(line);
  }
}
