// Convert… between PyTorch and TorchLean (docs/pytorch.md "PyTorch to TorchLean", "TorchLean to
// PyTorch"): a TLADAMF file written as a torch.save file (TorchLeanToTorch, a part of the version
// panel, parts/convert.js), and a PyTorch optimizer paired with its model written as a TLADAMF
// file (openTorchConvert, a dialog of its own). The worker asks the core whether it converts with
// the values typed (a real attempt, stopped at its first byte) and the panel shows the core's
// refusal as it is, naming the option to fill; the bytes stream to disk as exports do.
import { el, button, testid, download } from '../dom.js';
import { bytes as byteText } from '../format.js';
import { canStream, streamTo } from './save-stream.js';

/** Without streaming (a page served without cross-origin isolation) the page holds the file. */
export const IN_MEMORY_LIMIT = 400 * 1024 * 1024;
/** A pause in typing before the core is asked again. */
const PLAN_DELAY_MS = 200;

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/** A typed number: null when empty, else the number, else a TypeError naming the field. */
export function typedNumber(text, what) {
  const t = text.trim();
  if (t === '') return null;
  if (!DECIMAL.test(t)) throw new TypeError(`${what} takes a number, not ${t}`);
  return Number(t);
}

/** The panel's values as the core takes them; a value that is no number is said here, as the
 *  CLI's usage errors say it (the core never sees it). */
export function typedBetas(text) {
  const t = text.trim();
  if (t === '') return null;
  const parts = t.split(',');
  if (parts.length !== 2 || parts.some((x) => !DECIMAL.test(x.trim()))) throw new TypeError(`betas take B1,B2 (two numbers), not ${t}`);
  return parts.map((x) => Number(x.trim()));
}

/** Save one conversion (`job`: the worker's torchConversion) as `name`: streamed where the page
 *  can, else made in memory. Resolves {bytes, result, via}, or null if no file was picked. */
async function saveConversion(rpc, name, job, { onProgress, onStart } = {}) {
  if (!canStream()) {
    const { blob, result } = await rpc.request('torchConvert', { job }, { onProgress });
    download(blob, name);
    return { bytes: blob.size, result, via: 'memory' };
  }
  const saved = await streamTo(name, (port, credits) =>
    rpc.request('torchConvertStream', { job, port, credits }, { onProgress, transfer: [port] }), { onStart });
  return saved && { bytes: saved.bytes, result: saved.result.result, via: saved.via };
}

export const savedVia = (via) => (via === 'file' ? ', streamed to the file picked' : via === 'download' ? ', streamed to a download' : '');

/** Asks the core again after each change, the last answer only; `ask()` resolves the refusal
 *  (null: it converts) or throws a local TypeError; `show(state)` draws {planning, refusal, error}. */
export class Planner {
  constructor(ask, show) {
    this.ask = ask;
    this.show = show;
    this.run = 0;
    this.timer = null;
    this.state = { planning: true, refusal: null, error: null };
  }

  soon() {
    clearTimeout(this.timer);
    this.state = { ...this.state, planning: true };
    this.show(this.state);
    this.timer = setTimeout(() => this.now(), PLAN_DELAY_MS);
  }

  async now() {
    clearTimeout(this.timer);
    const run = ++this.run;
    this.state = { ...this.state, planning: true };
    this.show(this.state);
    let state;
    try {
      state = { planning: false, refusal: await this.ask(), error: null };
    } catch (err) {
      state = { planning: false, refusal: null, error: err.message };
    }
    if (run !== this.run) return;
    this.state = state;
    this.show(state);
  }

  get ready() {
    return !this.state.planning && !this.state.refusal && !this.state.error;
  }
}

/** The refusal (the core's text, its hint beside) or the local error, in `box`. */
export function showRefusal(box, { refusal, error }) {
  box.replaceChildren();
  box.hidden = !refusal && !error;
  if (refusal) {
    box.append(testid(el('code', '', refusal.message), 'convert-refusal'));
    if (refusal.hint) box.append(' ', testid(el('span', 'meta', `hint: ${refusal.hint}`), 'convert-hint'));
  } else if (error) box.append(testid(el('code', '', error), 'convert-refusal'));
}

/**
 * The version panel's PyTorch target for an open TLADAMF file: the lr to write (TorchLean does
 * not store it) and the model-state file open beside it, paired first. A node built once (typing
 * keeps its focus); `onChange` when what it allows changed.
 */
export class TorchLeanToTorch {
  constructor(ctx, file, onChange) {
    this.ctx = ctx;
    this.file = file;
    this.onChange = onChange;
    this.node = this.build();
    this.planner = new Planner(() => this.ctx.rpc.request('torchConvertPlan', { job: this.job() }), (s) => {
      showRefusal(this.refusalBox, s);
      this.onChange();
    });
    this.planner.now();
  }

  /** The open model-state file, when it reads: passed as the state. */
  get state() {
    const st = this.ctx.store.stateFile;
    return st?.summary.ok ? st : null;
  }

  get stem() {
    return this.file.name.replace(/\.(ckpt|bin|tladamf)$/i, '');
  }

  get name() {
    return `${this.stem}.pt`;
  }

  job() {
    const { store } = this.ctx;
    const st = this.state;
    // torch.save names the zip's folder after the file's stem, as the CLI's OUT names it
    return { to: 'pytorch', role: store.roleOf(this.file), lr: typedNumber(this.lr.value, 'lr'), prefix: this.stem, stateRole: st ? store.roleOf(st) : null };
  }

  build() {
    const box = testid(el('fieldset', 'convert-torch'), 'convert-torch');
    box.append(el('legend', '', 'Or write for PyTorch'));
    const label = testid(el('label', 'convert-target'), 'convert-torch-target');
    this.radio = el('input');
    this.radio.type = 'radio';
    this.radio.name = 'convert-to';
    this.radio.value = 'pytorch';
    this.radio.addEventListener('change', () => this.onChange({ picked: true }));
    const text = el('span');
    text.append(el('strong', '', 'PyTorch (torch.save .pt)'), ' ',
      el('span', 'meta', 'an Adam or AdamW state_dict() for optimizer.load_state_dict(torch.load(…)), the moments bit for bit'));
    label.append(this.radio, text);
    const lrLine = el('label', 'convert-option');
    this.lr = testid(el('input'), 'convert-lr');
    this.lr.type = 'text';
    this.lr.inputMode = 'decimal';
    this.lr.size = 12;
    this.lr.placeholder = 'e.g. 3e-4';
    this.lr.setAttribute('aria-label', 'learning rate');
    this.lr.addEventListener('input', () => this.planner.soon());
    lrLine.append('Learning rate (required: TorchLean does not store it) ', this.lr);
    const st = this.state;
    const pairLine = testid(el('p', 'meta', st
      ? `Paired first with ${st.name}, the model-state file open beside it: a pair that does not fit is refused.`
      : 'No model-state file is open: the pair is not checked.'), 'convert-torch-state');
    this.refusalBox = el('p', 'convert-refused');
    this.refusalBox.hidden = true;
    box.append(label, lrLine, pairLine, this.refusalBox);
    return box;
  }

  /** Whether Convert may run now (the core would convert with these values). */
  get ready() {
    return this.planner.ready;
  }

  set disabled(on) {
    this.radio.disabled = on;
    this.lr.disabled = on;
  }

  /** Convert and save; resolves the panel's result line. Closing the panel meanwhile calls
   *  `cancel` (set while it streams). */
  async save(progress) {
    const { rpc } = this.ctx;
    const saved = await saveConversion(rpc, this.name, this.job(), { onProgress: ({ done, total }) => progress(done, total), onStart: (cancel) => (this.cancel = cancel) })
      .finally(() => (this.cancel = null));
    if (!saved) return 'Not saved: no file was picked.';
    return `Saved ${this.name}: a torch.save file of the optimizer's state_dict, ${byteText(saved.bytes)}${savedVia(saved.via)}.`;
  }
}

let openDialog = null;

/** Convert… of a PyTorch optimizer paired with its model: a TLADAMF file, downloaded. */
export function openTorchConvert(ctx, file) {
  openDialog?.close();
  const dialog = testid(el('dialog', 'card convert-dialog'), 'convert-dialog');
  dialog.dataset.direction = 'torchlean';
  document.body.append(dialog);
  openDialog = dialog;
  const panel = new TorchToTorchLean(ctx, file, dialog);
  dialog.showModal();
  dialog.addEventListener('close', () => {
    panel.closed = true;
    panel.cancel?.();
    dialog.remove();
    if (openDialog === dialog) openDialog = null;
  });
}

/** The options of a PyTorch optimizer's conversion, as the panel lists them (docs/pytorch.md). */
const FIELDS = [
  { key: 'weightDecay', testid: 'convert-weight-decay', label: 'Weight decay (one for every slot: --weight-decay)', placeholder: 'as the groups say' },
  { key: 'betas', testid: 'convert-betas', label: 'Betas B1,B2 (--betas)', placeholder: 'as the groups say' },
  { key: 'eps', testid: 'convert-eps', label: 'Eps (--eps)', placeholder: 'as the groups say' },
];
const BOXES = [
  { key: 'dropAmsgrad', testid: 'convert-drop-amsgrad', label: 'Drop amsgrad\'s max_exp_avg_sq (the next steps then divide by v, not its running maximum)' },
  { key: 'untie', testid: 'convert-untie', label: 'Untie: give every alias its own copy of its owner\'s moments and step (for version 2)' },
  { key: 'roundToFloat32', testid: 'convert-round', label: 'Round float64 moments to float32 (for versions 2 to 4)' },
];

/** How the panel names the core's optimizer kinds (PyTorch's class names). */
export const KIND_LABELS = { adam: 'Adam', adamw: 'AdamW' };

class TorchToTorchLean {
  constructor(ctx, file, dialog) {
    this.ctx = ctx;
    this.file = file;
    this.dialog = dialog;
    this.inputs = {};
    this.busy = false;
    this.closed = false;
    this.build();
    this.planner = new Planner(() => this.ctx.rpc.request('torchConvertPlan', { job: this.job() }), (s) => {
      showRefusal(this.refusalBox, s);
      this.sync();
    });
    this.planner.now();
  }

  get name() {
    return `${this.file.name.replace(/\.(pt|pth|bin|ckpt)$/i, '')}.ckpt`;
  }

  job() {
    const { store } = this.ctx;
    const to = this.version.value === 'oldest' ? 'oldest' : Number(this.version.value);
    const job = { role: store.roleOf(this.file), to, kind: this.kind.value || null };
    job.weightDecay = typedNumber(this.inputs.weightDecay.value, 'weight decay');
    job.betas = typedBetas(this.inputs.betas.value);
    job.eps = typedNumber(this.inputs.eps.value, 'eps');
    for (const b of BOXES) job[b.key] = this.inputs[b.key].checked;
    return job;
  }

  build() {
    const d = this.dialog;
    const { file } = this;
    const head = el('div', 'card-head');
    const model = this.ctx.store.stateFile;
    head.append(el('h2', '', `Convert ${file.name}`), el('span', 'meta', model && !model.asModel ? `with ${model.name}` : 'with the model it holds'));
    d.append(head, el('p', 'meta', 'The pair\'s slots written as a TorchLean optimizer checkpoint (TLADAMF): the schema, every step and every moment bit for bit (float16 and bfloat16 widen exactly to float32). TorchLean\'s file holds one configuration: what the groups do not agree on, or the file does not say, is refused until you give it below.'));
    const box = el('fieldset', 'convert-options');
    box.append(el('legend', '', 'Write as'));
    const replan = () => this.planner.soon();
    const option = (select, value, text) => {
      const o = el('option', '', text);
      o.value = value;
      select.append(o);
    };
    // the versions and kinds are the core's, asked of the worker; the defaults are there at once
    this.version = testid(el('select'), 'convert-version');
    option(this.version, 'oldest', 'the oldest version that holds it');
    this.version.addEventListener('change', replan);
    this.kind = testid(el('select'), 'convert-kind');
    option(this.kind, '', 'as the file says');
    this.kind.addEventListener('change', replan);
    this.ctx.rpc.request('torchConvertChoices').then(({ versions, kinds }) => {
      for (const v of versions) option(this.version, String(v), `version ${v}`);
      for (const k of kinds) option(this.kind, k, KIND_LABELS[k] ?? k);
    }, () => {});   // a worker replaced meanwhile (Cancel): the panel offers the defaults
    const line = (text, input) => {
      const l = el('label', 'convert-option');
      l.append(text, ' ', input);
      return l;
    };
    box.append(line('Version', this.version), line('Kind (--kind)', this.kind));
    for (const f of FIELDS) {
      const input = testid(el('input'), f.testid);
      input.type = 'text';
      input.size = 14;
      input.placeholder = f.placeholder;
      input.addEventListener('input', replan);
      this.inputs[f.key] = input;
      box.append(line(f.label, input));
    }
    for (const b of BOXES) {
      const input = testid(el('input'), b.testid);
      input.type = 'checkbox';
      input.addEventListener('change', replan);
      this.inputs[b.key] = input;
      const l = el('label', 'convert-option');
      l.append(input, ` ${b.label}`);
      box.append(l);
    }
    this.refusalBox = el('p', 'convert-refused');
    this.refusalBox.hidden = true;
    this.tooBig = !canStream() && Number(file.summary.size) > IN_MEMORY_LIMIT;
    if (this.tooBig) {
      d.append(box, testid(el('p', 'meta warn-line', `This file is ${byteText(Number(file.summary.size))}: a page without streaming converts files up to 400 MiB in memory. `
        + `\`ckptscope convert ${file.name} OUT.ckpt --state MODEL\` streams any size to disk.`), 'convert-too-big'));
    } else d.append(box);
    this.out = testid(el('p', 'meta'), 'convert-result');
    this.go = button('Convert and download', { testid: 'convert-go', onClick: () => this.convert() });
    const tools = el('div', 'tools');
    tools.append(this.go, button('Close', { testid: 'convert-close', onClick: () => this.dialog.close() }));
    d.append(this.refusalBox, this.out, tools);
  }

  /** The button and inputs for what the panel is doing. */
  sync() {
    this.go.disabled = this.busy || !this.planner?.ready || this.tooBig;
    this.go.textContent = this.busy ? 'Converting…' : 'Convert and download';
    for (const x of [this.version, this.kind, ...Object.values(this.inputs)]) x.disabled = this.busy;
  }

  async convert() {
    const { rpc, status } = this.ctx;
    this.busy = true;
    this.sync();
    this.out.textContent = 'Converting…';
    const onProgress = ({ done, total }) => {
      this.out.textContent = total ? `Converting… ${Math.floor((100 * Number(done)) / Number(total))}%` : 'Converting…';
    };
    try {
      const saved = await saveConversion(rpc, this.name, this.job(), { onProgress, onStart: (cancel) => (this.cancel = cancel) });
      if (!saved) this.out.textContent = 'Not saved: no file was picked.';
      else {
        const { version, dtype } = saved.result;
        this.out.textContent = `Saved ${this.name}: version ${version}, ${dtype} moments, ${byteText(saved.bytes)}${savedVia(saved.via)}. Open it to see which readers load it.`;
        status(this.out.textContent);
      }
    } catch (err) {
      if (!this.closed) this.out.textContent = err.name === 'AbortError' ? 'Conversion cancelled.' : `Conversion failed: ${err.message}`;
    }
    this.cancel = null;
    this.busy = false;
    if (!this.closed) this.sync();
  }
}
