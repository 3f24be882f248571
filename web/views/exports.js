// The Export… menu of the top bar: the JSON report of what is open, and the moments or tensors
// for NumPy and PyTorch (parts/exports.js makes and saves the files).
import { el, button } from '../dom.js';
import { saveFile, saveReport } from '../parts/exports.js';
import { openConvert } from '../parts/convert.js';
import { openTorchConvert } from '../parts/convert-torch.js';
import { openDeepSpeedConvert } from '../parts/convert-deepspeed.js';

export class ExportsView {
  constructor(ctx) {
    this.ctx = ctx;
  }

  mount(root) {
    this.menu = el('details', 'menu');
    this.menu.id = 'export-menu';
    this.menu.setAttribute('data-testid', 'export-menu');
    this.menu.hidden = true;
    const summary = el('summary', 'button', 'Export…');
    summary.title = 'The JSON report, and the moments or tensors for NumPy and PyTorch (safetensors, .npz)';
    this.items = el('div', 'menu-body');
    this.menu.append(summary, this.items);
    // a streamed export's progress and Cancel, beside the menu while it runs
    this.progress = el('progress');
    this.progress.max = 1;
    this.progress.setAttribute('data-testid', 'export-progress');
    this.cancel = button('Cancel export', { testid: 'export-cancel', onClick: () => this.stop?.() });
    this.running = el('span', 'export-line');
    this.running.hidden = true;
    this.running.append(el('span', 'meta', 'Exporting'), this.progress, this.cancel);
    root.append(this.menu, this.running);
    this.line = {
      start: (cancel) => {
        this.stop = cancel;
        this.progress.removeAttribute('value');
        this.running.hidden = false;
      },
      progress: (fraction) => {
        if (fraction === null) this.progress.removeAttribute('value');
        else this.progress.value = fraction;
      },
      end: () => {
        this.stop = null;
        this.running.hidden = true;
      },
    };
  }

  /** The menu for what is open. */
  onFiles() {
    const { store } = this.ctx;
    this.items.replaceChildren();
    const add = (text, testid, fn) => this.items.append(button(text, { testid, onClick: () => {
      this.menu.open = false;
      fn();
    } }));
    const main = store.primary;
    const opt = store.optimizer, st = store.stateFile;
    this.menu.hidden = !main;
    if (!main) return;
    add('Report (JSON, as ckptscope inspect --json)', 'export-report', () => saveReport(this.ctx, main));
    if (opt && st) add('Model-state report (JSON)', 'export-state-report', () => saveReport(this.ctx, st));
    if (opt?.summary.ok) {
      add('Moments as safetensors', 'export-safetensors', () => saveFile(this.ctx, opt, 'safetensors', this.line));
      add('Moments as .npz', 'export-npz', () => saveFile(this.ctx, opt, 'npz', this.line));
      // a PyTorch optimizer converts once paired with its model (its slots are the model's)
      if (opt.summary.deepspeed) {
        if (!opt.summary.deepspeed.lone) add('Convert… (optimizer.pt and model, or TorchLean TLADAMF)', 'export-convert', () => openDeepSpeedConvert(this.ctx, opt));
      } else if (opt.summary.family !== 'PyTorch') add('Convert… (another version, or for PyTorch)', 'export-convert', () => openConvert(this.ctx, opt));
      else if (opt.summary.schema) add('Convert… (TorchLean TLADAMF .ckpt)', 'export-convert', () => openTorchConvert(this.ctx, opt));
    }
    if (st?.summary.ok) {
      add(`${opt ? 'Model state' : 'Tensors'} as safetensors`, opt ? 'export-state-safetensors' : 'export-safetensors', () => saveFile(this.ctx, st, 'safetensors', this.line));
      add(`${opt ? 'Model state' : 'Tensors'} as .npz`, opt ? 'export-state-npz' : 'export-npz', () => saveFile(this.ctx, st, 'npz', this.line));
    }
  }

  onSelect() {}

  onLabels() {}
}
