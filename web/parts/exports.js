// Exports of the open files: the core's JSON report, an optimizer file's moments or a state
// file's tensors as safetensors or .npz (slots named when the names fit), and one entry's m or v
// as .npy. The bytes are made by the package in the worker and saved as downloads; whole files
// stream to disk (parts/save-stream.js).
import { el, button, download } from '../dom.js';
import { plural } from '../format.js';
import { canStream, streamTo } from './save-stream.js';

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
  } finally {
    store.emit('io');   // the export read payloads: the byte counts shown grew
  }
}

/** The open file's moments (or tensors) as safetensors or .npz, slots named when names fit.
 *  Streamed (parts/save-stream.js) where the page can: no size limit but the disk, a few chunks
 *  in memory, progress and Cancel through `line` ({start(cancel), progress(fraction), end()});
 *  else made in memory (a page served without cross-origin isolation). */
export async function saveFile({ store, rpc, status }, file, format, line) {
  const n = file.cols.kind === 'state' ? file.cols.tensorTotal : file.cols.n;
  const names = store.labels?.length === n ? store.labels : null;
  const name = `${file.name}.${format === 'npz' ? 'npz' : 'safetensors'}`;
  const named = names ? ', tensors named by slot name' : '';
  const role = store.roleOf(file);
  status(`Exporting ${file.name} as ${format}…`);
  try {
    if (!canStream()) {
      const { bytes } = await rpc.request('exportFile', { role, format, names });
      download(bytes, name);
      status(`Exported ${file.name} as ${format} (${plural(bytes.length, 'byte')}${named}).`);
      return;
    }
    const onProgress = ({ done, total }) => line?.progress(total ? done / total : null);
    const saved = await streamTo(name, (port, credits) =>
      rpc.request('exportStream', { role, format, names, port, credits }, { onProgress, transfer: [port] }), { onStart: (cancel) => line?.start(cancel) });
    if (!saved) status('Export not saved: no file was picked.');
    else status(`Exported ${file.name} as ${format} (${plural(saved.bytes, 'byte')}${named}, streamed to ${saved.via === 'file' ? 'the file picked' : 'a download'}).`);
  } catch (err) {
    status(err.name === 'AbortError' ? `Export of ${file.name} cancelled.` : `Export failed: ${err.message}`);
  } finally {
    line?.end();
    store.emit('io');
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
