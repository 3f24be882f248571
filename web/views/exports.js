// Exports of the open files: the core's JSON report, an optimizer file's moments or a state
// file's tensors as safetensors or .npz (slots named when the names fit), and one entry's m or v
// as .npy. The bytes are made by the package in the worker and saved as downloads.
import { $, el, button, download } from '../dom.js';
import { plural } from '../format.js';

export class Exports {
  constructor(store, { rpc, status, roleOf }) {
    this.store = store;
    this.rpc = rpc;
    this.status = status;
    this.roleOf = roleOf;
  }

  /** Buttons of the statistics panel: this entry's m and v as .npy. */
  entryActions(slot) {
    const box = el('div', 'detail-actions');
    box.append(el('span', 'meta', 'Save this entry for NumPy:'),
      button('m as .npy', { testid: 'export-m', onClick: () => this.npy(this.store.optimizer, slot, 'm') }),
      button('v as .npy', { testid: 'export-v', onClick: () => this.npy(this.store.optimizer, slot, 'v') }));
    return box;
  }

  async npy(file, slot, what) {
    try {
      const { bytes } = await this.rpc.request('exportNpy', { role: this.roleOf(file), slot, what });
      const name = this.store.label(slot) || `slot${slot}`;
      download(bytes, `${file.name}.${name}.${what}.npy`);
      this.status(`Saved ${name}'s ${what} (${plural(bytes.length, 'byte')}).`);
    } catch (err) {
      this.status(`Export failed: ${err.message}`);
    }
  }

  /** The open file's moments (or tensors) as safetensors or .npz, slots named when names fit. */
  async file(file, format) {
    const n = file.cols.kind === 'state' ? file.cols.tensorTotal : file.cols.n;
    const names = this.store.labels?.length === n ? this.store.labels : null;
    this.status(`Exporting ${file.name} as ${format}…`);
    try {
      const { bytes } = await this.rpc.request('exportFile', { role: this.roleOf(file), format, names });
      download(bytes, `${file.name}.${format === 'npz' ? 'npz' : 'safetensors'}`);
      this.status(`Exported ${file.name} as ${format} (${plural(bytes.length, 'byte')}${names ? ', tensors named by slot name' : ''}).`);
    } catch (err) {
      this.status(`Export failed: ${err.message}`);
    }
  }

  /** The Export… menu for what is open. */
  renderMenu() {
    const box = $('export-items');
    box.replaceChildren();
    const add = (text, testid, fn) => {
      const b = button(text, { testid, onClick: () => {
        $('export-menu').open = false;
        fn();
      } });
      box.append(b);
    };
    const main = this.store.primary;
    const opt = this.store.optimizer, st = this.store.stateFile;
    add('Report (JSON, as ckptscope inspect --json)', 'export-report', () => this.report(main));
    if (opt && st) add('Model-state report (JSON)', 'export-state-report', () => this.report(st));
    if (opt?.summary.ok) {
      add('Moments as safetensors', 'export-safetensors', () => this.file(opt, 'safetensors'));
      add('Moments as .npz', 'export-npz', () => this.file(opt, 'npz'));
    }
    if (st?.summary.ok) {
      add(`${opt ? 'Model state' : 'Tensors'} as safetensors`, opt ? 'export-state-safetensors' : 'export-safetensors', () => this.file(st, 'safetensors'));
      add(`${opt ? 'Model state' : 'Tensors'} as .npz`, opt ? 'export-state-npz' : 'export-npz', () => this.file(st, 'npz'));
    }
    $('export-menu').hidden = !main;
  }

  async report(file) {
    if (!file) return;
    const text = await this.rpc.request('reportText', { role: this.roleOf(file) });
    download(text, `${file.name}.report.json`, 'application/json');
  }
}
