// Number formats, one per kind of column, so a column never mixes "0.00000151" and "4.50e-7".

/** An exact count: a number (grouped) or a decimal string past 2^53 (grouped as well). */
export function count(x) {
  if (x === null || x === undefined) return '—';
  if (typeof x === 'number') return x.toLocaleString('en-US');
  return String(x).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A statistic (a float): three significant digits in scientific notation, the exponent left out
 *  when it is 0 (1.13, not 1.13e0); 0, NaN and infinities spelled as such. `digits` widens it
 *  (the statistics panel shows five). */
export function sci(x, digits = 3) {
  if (x === null || x === undefined || x === '') return '';
  const v = Number(x);
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+inf';
  if (v === -Infinity) return '-inf';
  if (v === 0) return '0';
  const [mantissa, exponent] = v.toExponential(digits - 1).split('e');
  return exponent === '+0' ? mantissa : `${mantissa}e${exponent.replace('+', '')}`;
}

/** A power of ten on a log axis: 1e-3, 1, 1e2. */
export const decade = (d) => (d === 0 ? '1' : `1e${d}`);

/** A decimal of a hyperparameter as stored (shortest round trip). */
export const plain = (x) => (x === null || x === undefined ? '—' : String(x));

/** "1 slot", "5 slots", "1,000,000 slots". */
export function plural(n, one, many = `${one}s`) {
  return `${count(n)} ${Number(n) === 1 ? one : many}`;
}

/** Bytes for people: 21,474,836,831 bytes (20.0 GiB). */
export function bytes(n) {
  const v = Number(n);
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let u = -1, x = v;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u++;
  }
  return u < 0 ? plural(n, 'byte') : `${plural(n, 'byte')} (${x.toFixed(1)} ${units[u]})`;
}

/** A shape as [a, b, c]. */
export const shape = (dims) => `[${dims.join(', ')}]`;

/** What was read to open a file: bytes from disk, or bytes over HTTP by range requests. */
export function ioText(io, size) {
  if (!io) return '';
  if (io.via === 'http') return `${count(io.bytesTransferred)} bytes transferred over HTTP in ${plural(io.requests, 'range request')}`;
  // a pass reads what it needs again: past the file's size, the total and the size apart
  if (io.bytesRead > size) return `${count(io.bytesRead)} bytes read in all, ${(io.bytesRead / size).toFixed(1)} times the file's ${count(size)} (each pass reads what it needs again)`;
  return `${count(io.bytesRead)} of ${count(size)} bytes read`;
}

/** Where a pass ran when `ckptscope view` ran it on its own machine ({workers}: the worker's
 *  answer's `server`), for the status line; '' when the page ran it. */
export function ranOn(server) {
  return server ? `, computed by ckptscope view on this machine (${plural(server.workers, 'thread')})` : '';
}
