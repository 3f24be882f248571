// Convert…: the open optimizer checkpoint rewritten as another version (docs/format.md 8
// "Conversion"), downloaded. The worker asks the core, per target version, whether it converts
// with the options ticked (a real attempt, stopped at its first byte): what loses nothing is
// offered as it is; the options that lose or invent something are unticked checkboxes, shown only
// when some version needs them, and a refused version shows the core's own text. The file can
// also be written for PyTorch (parts/convert-torch.js).
import { el, button, testid, download } from '../dom.js';
import { bytes as byteText, sci } from '../format.js';
import { TorchLeanToTorch } from './convert-torch.js';

/** The viewer holds the converted file in memory (400 MiB); past this the CLI streams it. */
const IN_MEMORY_LIMIT = 400 * 1024 * 1024;

/** What each option loses or invents, as the panel says it. */
const OPTIONS = {
  dropRandomCounter: 'Drop the random counter (stochastic training then cannot resume exactly)',
  untie: 'Untie: give every alias its own copy of its owner\'s moments and step (loadable only where the model\'s weights are untied too)',
  roundToFloat32: 'Round the float64 moments to float32 (the largest relative error is reported)',
  randomCounter: 'Supply a random counter the file does not have:',
};

const stem = (name) => name.replace(/\.(ckpt|bin|tladamf)$/i, '');

let openDialog = null;   // the panel's dialog while it is shown (one at a time)

/** Open the panel for `file` (an optimizer checkpoint that reads), a modal dialog of its own. */
export function openConvert(ctx, file) {
  openDialog?.close();
  const dialog = testid(el('dialog', 'card convert-dialog'), 'convert-dialog');
  document.body.append(dialog);
  openDialog = dialog;
  const panel = new ConvertPanel(ctx, file, dialog);
  panel.plan();
  dialog.showModal();
  dialog.addEventListener('close', () => {
    panel.torch.cancel?.();   // a PyTorch file streaming stops with the panel
    dialog.remove();
    if (openDialog === dialog) openDialog = null;
  });
}

class ConvertPanel {
  constructor(ctx, file, dialog) {
    this.ctx = ctx;
    this.file = file;
    this.dialog = dialog;
    this.chosen = {};       // the lossy options ticked (randomCounter: its decimal text)
    this.to = null;         // the version picked
    this.shown = new Set(); // the lossy options offered so far (they stay once shown)
    this.planned = null;
    this.busy = false;
    this.result = null;
    // the PyTorch target: built once (typing its lr keeps the focus), drawn in every redraw
    this.torch = new TorchLeanToTorch(ctx, file, ({ picked = false } = {}) => {
      if (!picked) return this.syncGo();
      this.to = 'pytorch';
      this.result = null;
      this.draw();
    });
  }

  /** The chosen options as the worker takes them: a counter only when ticked and typed. */
  options() {
    const out = { ...this.chosen };
    if (out.randomCounter === undefined || out.randomCounter === false) delete out.randomCounter;
    return out;
  }

  /** The file the panel was opened for is no longer open (another was dropped): it closes. */
  gone() {
    if (this.ctx.store.optimizer === this.file) return false;
    this.dialog.close();
    return true;
  }

  async plan() {
    const { rpc, store } = this.ctx;
    if (this.gone()) return;
    this.planning = true;
    this.error = null;
    this.draw();
    try {
      this.planned = await rpc.request('convertPlan', { role: store.roleOf(this.file), chosen: this.options() });
    } catch (err) {
      this.planned = null;
      this.error = err.message;
    }
    if (this.gone()) return;
    this.planning = false;
    for (const t of this.planned?.targets ?? []) for (const k of t.needs ?? []) this.shown.add(k);
    const allowed = (to) => this.planned?.targets.some((t) => t.to === to && !t.refusal);
    if (this.to !== null && this.to !== 'pytorch' && !allowed(this.to)) this.to = null;
    this.draw();
  }

  draw() {
    const { file } = this;
    const d = this.dialog;
    d.replaceChildren();
    const head = el('div', 'card-head');
    head.append(el('h2', '', `Convert ${file.name}`), el('span', 'meta', `version ${file.summary.version}, ${file.summary.dtype}`));
    d.append(head, el('p', 'meta', 'The same state, written as another version of the format, so that an older (or newer) TorchLean can load it. What loses nothing is offered; what loses or invents something needs its option ticked below.'));
    if (this.error) d.append(testid(el('p', 'bad', `Cannot plan the conversion: ${this.error}`), 'convert-error'));
    const targets = el('fieldset', 'convert-targets');
    targets.append(el('legend', '', 'Write as'));
    if (!this.planned) targets.append(el('p', 'meta', this.planning ? 'Asking the core…' : ''));
    for (const t of this.planned?.targets ?? []) targets.append(this.target(t));
    d.append(targets);
    const offered = (this.planned?.offered ?? []).filter((k) => this.shown.has(k));
    if (offered.length) {
      const box = el('fieldset', 'convert-options');
      box.append(el('legend', '', 'Lossy options (off unless you tick them)'));
      for (const k of offered) box.append(this.option(k));
      d.append(box);
    }
    d.append(this.torch.node);
    this.torch.radio.checked = this.to === 'pytorch';
    this.torch.disabled = this.busy;
    const size = Number(file.summary.size);
    const tooBig = size > IN_MEMORY_LIMIT && this.to !== 'pytorch';   // the PyTorch file streams
    if (tooBig) {
      d.append(testid(el('p', 'meta warn-line', `This file is ${byteText(size)}: the viewer converts files up to 400 MiB in memory. `
        + `\`ckptscope convert ${file.name} OUT --to ${this.to ?? 'V'}\` streams any size to disk.`), 'convert-too-big'));
    }
    const out = testid(el('p', 'meta'), 'convert-result');
    this.out = out;
    if (this.result) out.textContent = this.result;
    const tools = el('div', 'tools');
    this.go = button(this.busy ? 'Converting…' : 'Convert and download', { testid: 'convert-go', onClick: () => this.convert() });
    tools.append(this.go, button('Close', { testid: 'convert-close', onClick: () => this.dialog.close() }));
    this.tooBig = tooBig;
    this.syncGo();
    d.append(out, tools);
  }

  /** Convert runs for a version the core allows, or for PyTorch once the core would write it. */
  syncGo() {
    if (!this.go || !this.torch) return;
    const torchWaits = this.to === 'pytorch' && !this.torch.ready;
    this.go.disabled = this.busy || this.planning || this.to === null || this.tooBig || torchWaits;
  }

  target(t) {
    const label = testid(el('label', 'convert-target'), 'convert-target');
    label.dataset.to = String(t.to);
    label.dataset.allowed = String(!t.refusal);
    label.dataset.lossless = String(t.lossless);
    const radio = el('input');
    radio.type = 'radio';
    radio.name = 'convert-to';
    radio.value = String(t.to);
    radio.checked = this.to === t.to;
    radio.disabled = !!t.refusal || this.busy;
    radio.addEventListener('change', () => {
      this.to = t.to;
      this.result = null;
      this.draw();
    });
    const same = Number(this.file.summary.version) === t.to ? ' (this file\'s version)' : '';
    const text = el('span');
    text.append(el('strong', '', `Version ${t.to}`), same, ' ');
    if (t.lossless) text.append(el('span', 'badge ok', 'loses nothing'));
    else if (!t.refusal) text.append(el('span', 'badge warn', 'with the options ticked'));
    else {
      text.append(el('span', 'badge bad', t.needs === null ? 'not possible' : 'needs an option'), ' ',
        testid(el('code', '', t.refusal.message), 'convert-refusal'));
    }
    label.append(radio, text);
    return label;
  }

  option(k) {
    const label = testid(el('label', 'convert-option'), 'convert-option');
    label.dataset.option = k;
    const box = el('input');
    box.type = 'checkbox';
    box.checked = this.chosen[k] !== undefined && this.chosen[k] !== false;
    box.disabled = this.busy;
    label.append(box, ` ${OPTIONS[k]}`);
    if (k === 'randomCounter') {
      const n = el('input');
      n.type = 'text';
      n.inputMode = 'numeric';
      n.size = 12;
      n.value = typeof this.chosen.randomCounter === 'string' ? this.chosen.randomCounter : '0';
      n.setAttribute('aria-label', 'random counter');
      n.addEventListener('change', () => {
        if (box.checked) {
          this.chosen.randomCounter = n.value.trim();
          this.plan();
        }
      });
      box.addEventListener('change', () => {
        this.chosen.randomCounter = box.checked ? n.value.trim() : false;
        this.plan();
      });
      label.append(' ', n);
    } else {
      box.addEventListener('change', () => {
        this.chosen[k] = box.checked;
        if (!box.checked) delete this.chosen[k];
        this.plan();
      });
    }
    return label;
  }

  async convert() {
    const { rpc, store, status } = this.ctx;
    const { file, to } = this;
    if (this.gone()) return;
    this.busy = true;
    this.result = null;
    this.draw();
    if (to === 'pytorch') {
      try {
        this.result = await this.torch.save((done, total) => {
          this.out.textContent = total ? `Converting… ${Math.floor((100 * Number(done)) / Number(total))}%` : 'Converting…';
        });
        status(this.result);
      } catch (err) {
        this.result = err.name === 'AbortError' ? 'Conversion cancelled.' : `Conversion failed: ${err.message}`;
      }
      this.busy = false;
      if (!this.gone()) this.draw();
      return;
    }
    const onProgress = ({ done }) => {
      this.out.textContent = `Converting… ${byteText(Number(done))} of moments copied`;
    };
    try {
      const { blob, result } = await rpc.request('convert', { role: store.roleOf(file), to, chosen: this.options() }, { onProgress });
      if (this.gone()) return;
      const name = `${stem(file.name)}.v${result.version}.ckpt`;
      download(blob, name);
      const rounded = result.rounded ? `; moments rounded to float32, largest relative error ${sci(result.maxRelativeError)}` : '';
      this.result = `Saved ${name}: version ${result.version}, ${result.dtype} moments, ${byteText(blob.size)}${rounded}. Open it to see which readers load it.`;
      status(this.result);
    } catch (err) {
      this.result = `Conversion failed: ${err.message}`;
    }
    this.busy = false;
    this.draw();
  }
}
