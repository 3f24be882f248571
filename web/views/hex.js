// A hex view of the bytes around an error offset, the offending field highlighted.
import { el } from './table.js';

/** bytes: Uint8Array starting at file offset `start`; the field [hit, hit + hitLength). */
export function renderHex(container, bytes, start, hit, hitLength, fileSize) {
  container.replaceChildren();
  const rowStart = start - (start % 16);
  for (let base = rowStart; base < start + bytes.length || base === rowStart; base += 16) {
    const line = el('div');
    line.append(el('span', 'off', base.toString(16).padStart(8, '0') + '  '));
    let ascii = '';
    for (let k = 0; k < 16; k++) {
      const at = base + k;
      const i = at - start;
      const inData = i >= 0 && i < bytes.length;
      const text = inData ? bytes[i].toString(16).padStart(2, '0') : at >= fileSize ? '··' : '  ';
      const cls = at >= hit && at < hit + hitLength ? 'hit' : at >= fileSize ? 'past' : '';
      line.append(el('span', cls, text), k === 7 ? '  ' : ' ');
      ascii += inData ? (bytes[i] >= 0x20 && bytes[i] < 0x7f ? String.fromCharCode(bytes[i]) : '.') : ' ';
    }
    line.append(el('span', 'off', ' ' + ascii));
    container.append(line);
  }
}
