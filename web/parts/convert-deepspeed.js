// Convert… of a DeepSpeed folder (docs/deepspeed.md "As PyTorch or TorchLean files: convert",
// docs/viewer.md): the checkpoint as the torch.optim optimizer.pt and fp32 model a
// single-process run resumes from (two files, each saved by its own button: a file picker needs
// the click), or as a TorchLean TLADAMF file through them with the options `convert DIR OUT.ckpt`
// takes. The worker asks the core whether it converts (a real attempt, stopped at its first
// byte) and the dialog shows the core's refusal as it is; the bytes stream to disk as exports do,
// with their progress and Cancel. The universal checkpoint, a folder of many files, is written
// where the browser lets a page write into a folder the user picks (showDirectoryPicker).
import { el, button, testid, download } from '../dom.js';
import { bytes as byteText } from '../format.js';
import { canStream, streamTo } from './save-stream.js';
import { IN_MEMORY_LIMIT, typedNumber, typedBetas, savedVia, Planner, showRefusal, KIND_LABELS } from './convert-torch.js';

/** Save one conversion (`job`: the worker's dsConversion) as `name`: streamed where the page
 *  can, else made in memory. Resolves {bytes, result, via}, or null if no file was picked. */
async function saveConversion(rpc, name, job, { onProgress, onStart } = {}) {
  if (!canStream()) {
    const { blob, result } = await rpc.request('dsConvert', { job }, { onProgress });
    download(blob, name);
    return { bytes: blob.size, result, via: 'memory' };
  }
  const saved = await streamTo(name, (port, credits) =>
    rpc.request('dsConvertStream', { job, port, credits }, { onProgress, transfer: [port] }), { onStart });
  return saved && { bytes: saved.bytes, result: saved.result.result, via: saved.via };
}

/** A typed list of names (--frozen NAME[,NAME...]): null when empty; an empty name said here, as
 *  the CLI's usage error says it. */
function typedNames(text) {
  const t = text.trim();
  if (t === '') return null;
  const names = t.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw new TypeError(`frozen takes NAME[,NAME...], the model's tensor names: ${t} holds an empty one`);
  return [...new Set(names)];
}

/** The TLADAMF options, as `convert DIR OUT.ckpt` takes them (docs/deepspeed.md). */
const FIELDS = [
  { key: 'weightDecay', testid: 'convert-weight-decay', label: 'Weight decay (one for every slot: --weight-decay)', placeholder: 'as the groups say' },
  { key: 'betas', testid: 'convert-betas', label: 'Betas B1,B2 (--betas)', placeholder: 'as the groups say' },
  { key: 'eps', testid: 'convert-eps', label: 'Eps (--eps)', placeholder: 'as the groups say' },
  { key: 'frozen', testid: 'convert-frozen', label: 'Frozen names (--frozen)', placeholder: 'as the folder says' },
  { key: 'randomCounter', testid: 'convert-random-counter', label: 'Random counter (--random-counter)', placeholder: 'none' },
];
const BOXES = [
  { key: 'dropAmsgrad', testid: 'convert-drop-amsgrad', label: 'Drop amsgrad\'s max_exp_avg_sq (--drop-amsgrad)' },
  { key: 'untie', testid: 'convert-untie', label: 'Untie: give every alias its own copy of its owner\'s moments and step (--untie)' },
  { key: 'roundToFloat32', testid: 'convert-round', label: 'Round float64 moments to float32 (--round-to-float32)' },
];

let openDialog = null;

/** Convert… of the DeepSpeed folder `file` (the open checkpoint). */
export function openDeepSpeedConvert(ctx, file) {
  openDialog?.close();
  const dialog = testid(el('dialog', 'card convert-dialog'), 'convert-dialog');
  dialog.dataset.direction = 'deepspeed';
  document.body.append(dialog);
  openDialog = dialog;
  const panel = new DeepSpeedConvert(ctx, file, dialog);
  dialog.showModal();
  dialog.addEventListener('close', () => {
    panel.closed = true;
    panel.cancel?.();
    dialog.remove();
    if (openDialog === dialog) openDialog = null;
  });
}

class DeepSpeedConvert {
  constructor(ctx, file, dialog) {
    this.ctx = ctx;
    this.file = file;
    this.dialog = dialog;
    this.inputs = {};
    this.busy = false;
    this.closed = false;
    this.cancel = null;
    this.build();
    this.planner = new Planner(() => this.plan(), (s) => {
      showRefusal(this.refusalBox, s);
      this.sync();
    });
    this.planner.now();
  }

  get stem() {
    return this.file.name.replace(/[\\/]+$/, '').replace(/^.*[\\/]/, '');
  }

  /** 'pair' or 'tladamf': what the dialog writes. */
  get target() {
    return this.radios.find((r) => r.checked).value;
  }

  get modelWhich() {
    return this.modelFormat.value === 'safetensors' ? 'model.safetensors' : 'model';
  }

  names() {
    return { optimizer: `${this.stem}-optimizer.pt`, model: `${this.stem}-model.${this.modelFormat.value}`, tladamf: `${this.stem}.ckpt` };
  }

  /** The worker's job for one file: 'optimizer', 'model' or 'tladamf'. The zips' folders are the
   *  files' stems, as the CLI names them. */
  job(what) {
    const role = this.ctx.store.roleOf(this.file);
    const names = this.names();
    if (what === 'optimizer') return { role, which: 'optimizer', prefix: names.optimizer.replace(/\.pt$/, '') };
    if (what === 'model') return { role, which: this.modelWhich, prefix: names.model.replace(/\.[^.]*$/, '') };
    const to = this.version.value === 'oldest' ? 'oldest' : Number(this.version.value);
    const job = { role, which: 'tladamf', to, kind: this.kind.value || null };
    job.weightDecay = typedNumber(this.inputs.weightDecay.value, 'weight decay');
    job.betas = typedBetas(this.inputs.betas.value);
    job.eps = typedNumber(this.inputs.eps.value, 'eps');
    job.frozen = typedNames(this.inputs.frozen.value);
    const counter = this.inputs.randomCounter.value.trim();
    job.randomCounter = counter === '' ? null : counter;
    for (const b of BOXES) job[b.key] = this.inputs[b.key].checked;
    return job;
  }

  /** The core's first refusal of what is picked (null: it converts). */
  async plan() {
    if (this.target === 'universal') {
      const { refusal } = await this.ctx.rpc.request('dsUniversalBegin', { role: this.ctx.store.roleOf(this.file) });
      await this.ctx.rpc.request('dsUniversalEnd');
      return refusal;
    }
    const jobs = this.target === 'pair' ? [this.job('optimizer'), this.job('model')] : [this.job('tladamf')];
    for (const job of jobs) {
      const refusal = await this.ctx.rpc.request('dsConvertPlan', { job });
      if (refusal) return refusal;
    }
    return null;
  }

  build() {
    const d = this.dialog;
    const { file } = this;
    const head = el('div', 'card-head');
    head.append(el('h2', '', `Convert ${this.stem}`), el('span', 'meta', 'a DeepSpeed checkpoint'));
    d.append(head, el('p', 'meta', 'The checkpoint as the files a single-process run resumes from: the optimizer\'s state dict that optimizer.load_state_dict takes and the fp32 model, '
      + 'or TorchLean\'s TLADAMF file written through them. The same bytes as ckptscope convert writes.'));
    const replan = () => this.planner.soon();
    const what = el('fieldset', 'convert-options');
    what.append(el('legend', '', 'Write as'));
    this.radios = [];
    const radio = (value, strong, meta) => {
      const label = testid(el('label', 'convert-target'), `ds-target-${value}`);
      const r = el('input');
      r.type = 'radio';
      r.name = 'ds-convert-to';
      r.value = value;
      r.addEventListener('change', () => {
        this.sync();
        this.planner.now();
      });
      this.radios.push(r);
      const text = el('span');
      text.append(el('strong', '', strong), ' ', el('span', 'meta', meta));
      label.append(r, text);
      return label;
    };
    const line = (text, input) => {
      const l = el('label', 'convert-option');
      l.append(text, ' ', input);
      return l;
    };
    const option = (select, value, text) => {
      const o = el('option', '', text);
      o.value = value;
      select.append(o);
    };
    this.modelFormat = testid(el('select'), 'ds-model-format');
    option(this.modelFormat, 'pt', 'torch.save (.pt)');
    option(this.modelFormat, 'safetensors', 'safetensors (.safetensors)');
    this.modelFormat.addEventListener('change', () => {
      this.sync();
      replan();
    });
    what.append(radio('pair', 'PyTorch: optimizer.pt and the fp32 model', 'two files (convert DIR OPTIMIZER.pt --model MODEL.pt)'),
      line('The model as', this.modelFormat),
      radio('tladamf', 'TorchLean (TLADAMF .ckpt)', 'one file (convert DIR OUT.ckpt), with the options below'));
    // a folder of files: only where the page can write into a folder the user picks
    if (typeof globalThis.showDirectoryPicker === 'function') {
      what.append(radio('universal', 'DeepSpeed universal checkpoint', 'a folder of files and latest_universal, written into a folder you pick (convert DIR OUT_DIR --to universal)'));
    }
    this.radios[0].checked = true;
    const box = testid(el('fieldset', 'convert-options'), 'ds-tladamf-options');
    box.append(el('legend', '', 'TorchLean options'));
    this.version = testid(el('select'), 'convert-version');
    option(this.version, 'oldest', 'the oldest version that holds it');
    this.version.addEventListener('change', replan);
    this.kind = testid(el('select'), 'convert-kind');
    option(this.kind, '', 'as the checkpoint says');
    this.kind.addEventListener('change', replan);
    this.ctx.rpc.request('torchConvertChoices').then(({ versions, kinds }) => {
      for (const v of versions) option(this.version, String(v), `version ${v}`);
      for (const k of kinds) option(this.kind, k, KIND_LABELS[k] ?? k);
    }, () => {});
    box.append(line('Version (--to)', this.version), line('Kind (--kind)', this.kind));
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
    d.append(what, box);
    const size = Number(file.summary.size);
    this.tooBig = !canStream() && size > IN_MEMORY_LIMIT;
    if (this.tooBig) {
      d.append(testid(el('p', 'meta warn-line', `This checkpoint is ${byteText(size)}: a page without streaming converts up to 400 MiB in memory. `
        + `\`ckptscope convert ${this.stem} OPTIMIZER.pt --model MODEL.pt\` streams any size to disk.`), 'convert-too-big'));
    }
    this.out = testid(el('p', 'meta'), 'convert-result');
    this.progress = testid(el('progress'), 'convert-progress');
    this.progress.max = 1;
    this.progress.hidden = true;
    this.saveOptimizer = button('Save optimizer.pt', { testid: 'ds-save-optimizer', onClick: () => this.convert('optimizer') });
    this.saveModel = button('Save the model', { testid: 'ds-save-model', onClick: () => this.convert('model') });
    this.go = button('Convert and download', { testid: 'convert-go', onClick: () => this.convert('tladamf') });
    this.saveUniversal = button('Write into a folder…', { testid: 'ds-save-universal', onClick: () => this.writeUniversal() });
    this.stop = button('Cancel', { testid: 'convert-cancel', onClick: () => this.cancel?.() });
    const tools = el('div', 'tools');
    tools.append(this.saveOptimizer, this.saveModel, this.go, this.saveUniversal, this.stop, button('Close', { testid: 'convert-close', onClick: () => this.dialog.close() }));
    d.append(this.refusalBox, this.out, this.progress, tools);
    this.sync();
  }

  /** The buttons and inputs for what is picked and what the dialog is doing. */
  sync() {
    const pair = this.target === 'pair';
    const names = this.names();
    const ready = !this.busy && !!this.planner?.ready && !this.tooBig;
    this.saveOptimizer.hidden = this.saveModel.hidden = !pair;
    this.go.hidden = this.target !== 'tladamf';
    this.saveUniversal.hidden = this.target !== 'universal';
    this.saveUniversal.disabled = !ready;
    this.saveOptimizer.textContent = `Save ${names.optimizer}`;
    this.saveModel.textContent = `Save ${names.model}`;
    this.saveOptimizer.disabled = this.saveModel.disabled = this.go.disabled = !ready;
    this.go.textContent = this.busy ? 'Converting…' : 'Convert and download';
    this.stop.hidden = !this.busy;
    for (const r of this.radios) r.disabled = this.busy;
    this.modelFormat.disabled = this.busy || !pair;
    for (const x of [this.version, this.kind, ...Object.values(this.inputs)]) x.disabled = this.busy || this.target !== 'tladamf';
  }

  /** Convert one file ('optimizer', 'model' or 'tladamf') and save it. */
  async convert(what) {
    const { rpc, status } = this.ctx;
    const name = this.names()[what];
    this.busy = true;
    this.sync();
    this.out.textContent = `Converting ${name}…`;
    this.progress.hidden = false;
    this.progress.removeAttribute('value');
    const onProgress = ({ done, total }) => {
      if (!total) return;
      this.progress.value = Number(done) / Number(total);
      this.out.textContent = `Converting ${name}… ${Math.floor((100 * Number(done)) / Number(total))}%`;
    };
    try {
      const saved = await saveConversion(rpc, name, this.job(what), { onProgress, onStart: (cancel) => (this.cancel = cancel) });
      if (!saved) this.out.textContent = 'Not saved: no file was picked.';
      else {
        const size = byteText(saved.bytes), via = savedVia(saved.via);
        if (what === 'tladamf') {
          const { version, dtype } = saved.result;
          this.out.textContent = `Saved ${name}: TLADAMF version ${version}, ${dtype} moments, ${size}${via}. Open it to see which readers load it.`;
        } else if (what === 'optimizer') this.out.textContent = `Saved ${name}: the torch.optim state dict, ${size}${via}.`;
        else this.out.textContent = `Saved ${name}: the fp32 model's state dict, ${size}${via}.`;
        const warnings = saved.result?.warnings ?? [];
        for (const w of warnings) this.out.append(el('br'), testid(el('span', 'warn-line', `warning: ${w}`), 'convert-warning'));
        status(this.out.textContent);
      }
    } catch (err) {
      if (!this.closed) this.out.textContent = err.name === 'AbortError' ? 'Conversion cancelled.' : `Conversion failed: ${err.message}`;
    }
    this.cancel = null;
    this.busy = false;
    if (!this.closed) {
      this.progress.hidden = true;
      this.sync();
    }
  }

  /** The universal checkpoint written into a folder the user picks: the folder UTAG (which must
   *  not be there) file by file, each made by the core in the worker, then latest_universal naming
   *  it, as convert --to universal lays them out. A failure or Cancel removes UTAG. */
  async writeUniversal() {
    const { rpc, status } = this.ctx;
    let parent;
    try {
      parent = await globalThis.showDirectoryPicker({ mode: 'readwrite' });   // first: it needs the click
    } catch (err) {
      if (err.name === 'AbortError') {
        this.out.textContent = 'Not saved: no folder was picked.';
        return;
      }
      throw err;
    }
    this.busy = true;
    let cancelled = false;
    this.cancel = () => (cancelled = true);
    this.sync();
    this.progress.hidden = false;
    this.progress.removeAttribute('value');
    let folder = null, tag = null;
    try {
      const plan = await rpc.request('dsUniversalBegin', { role: this.ctx.store.roleOf(this.file) });
      if (plan.refusal) throw new Error(plan.refusal.message);
      tag = plan.tag;
      const there = await parent.getDirectoryHandle(tag).then(() => true, () => false);
      if (there) throw new Error(`${tag} is already in the folder picked: a universal checkpoint is written as a new folder`);
      folder = await parent.getDirectoryHandle(tag, { create: true });
      for (let k = 0; k < plan.files.length; k++) {
        if (cancelled) throw new DOMException('cancelled', 'AbortError');
        this.out.textContent = `Writing ${tag}… file ${k + 1} of ${plan.files.length}`;
        this.progress.value = k / plan.files.length;
        const { blob } = await rpc.request('dsUniversalFile', { k });
        const parts = plan.files[k].split('/');
        let dir = folder;
        for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p, { create: true });
        const out = await (await dir.getFileHandle(parts.at(-1), { create: true })).createWritable();
        await out.write(blob);
        await out.close();
      }
      const latest = await (await parent.getFileHandle('latest_universal', { create: true })).createWritable();
      await latest.write(tag);
      await latest.close();
      this.out.textContent = `Wrote ${tag}: a DeepSpeed universal checkpoint of ${plan.files.length} files, and latest_universal naming it, into the folder picked.`;
      for (const w of plan.warnings) this.out.append(el('br'), testid(el('span', 'warn-line', `warning: ${w}`), 'convert-warning'));
      status(this.out.textContent);
    } catch (err) {
      if (folder) await parent.removeEntry(tag, { recursive: true }).catch(() => {});
      if (!this.closed) this.out.textContent = err.name === 'AbortError' ? 'Conversion cancelled.' : `Conversion failed: ${err.message}`;
    } finally {
      await rpc.request('dsUniversalEnd').catch(() => {});
    }
    this.cancel = null;
    this.busy = false;
    if (!this.closed) {
      this.progress.hidden = true;
      this.sync();
    }
  }
}
