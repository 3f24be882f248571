// Exports of the open files: the core's JSON report, an optimizer file's moments or a state
// file's tensors as safetensors or .npz (slots named when the names fit), and one entry's m or v
// as .npy. The bytes are made by the package in the worker and saved as downloads.
import { el, button, download } from '../dom.js';
import { plural } from '../format.js';

/** Buttons of the statistics panel: this entry's m and v as .npy. */
export function entryActions(ctx, slot) {
  const box = el('div', 'detail-actions');
  box.append(el('span', 'meta', 'Save this entry for NumPy:'),
    button('m as .npy', { testid: 'export-m', onClick: () => saveNpy(ctx, ctx.store.optimizer, slot, 'm') }),
    button('v as .npy', { testid: 'export-v', onClick: () => saveNpy(ctx, ctx.store.optimizer, slot, 'v') }));
  return box;
}

async function saveNpy({ store, rpc, status }, file, slot, what) {
  try {
    const { bytes } = await rpc.request('exportNpy', { role: store.roleOf(file), slot, what });
    const name = store.label(slot) || `slot${slot}`;
    download(bytes, `${file.name}.${name}.${what}.npy`);
    status(`Saved ${name}'s ${what} (${plural(bytes.length, 'byte')}).`);
  } catch (err) {
    status(`Export failed: ${err.message}`);
  }
}

/** The open file's moments (or tensors) as safetensors or .npz, slots named when names fit. */
export async function saveFile({ store, rpc, status }, file, format) {
  const n = file.cols.kind === 'state' ? file.cols.tensorTotal : file.cols.n;
  const names = store.labels?.length === n ? store.labels : null;
  status(`Exporting ${file.name} as ${format}…`);
  try {
    const { bytes } = await rpc.request('exportFile', { role: store.roleOf(file), format, names });
    download(bytes, `${file.name}.${format === 'npz' ? 'npz' : 'safetensors'}`);
    status(`Exported ${file.name} as ${format} (${plural(bytes.length, 'byte')}${names ? ', tensors named by slot name' : ''}).`);
  } catch (err) {
    status(`Export failed: ${err.message}`);
  }
}

/** The core's JSON report of an open file, saved as {file}.report.json. */
export async function saveReport({ store, rpc, status }, file) {
  try {
    const text = await rpc.request('reportText', { role: store.roleOf(file) });
    download(text, `${file.name}.report.json`, 'application/json');
  } catch (err) {
    status(`Export failed: ${err.message}`);
  }
}
