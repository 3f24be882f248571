// Requests on the files themselves: open (role 'a' closes both), bind a PyTorch optimizer to its
// model, close, classify (a checkpoint or which JSON), bytes for the hex view, io counts, the
// core's JSON report, the examples.
import { open as openSource, readJsonSource, jsonKind, namesOf } from '/js/index.js';
import { applyKind } from '/js/plumbing.js';
import { transfer } from '../rpc.js';
import { makeExamples } from '../examples.js';
import { sourceOf, folderPlanOf } from './sources.js';
import { handles, close, handle, keepSniffed, takeSniffed, buffersOf, filePart, pairOpen } from './handles.js';

export const fileRequests = {
  /** Open a File or a served path as role 'a' (the main file: closes both) or 'b' (its model
   *  state), a PyTorch optimizer given `kind` where its file does not say it. Resolves {summary,
   *  columns, io}, the columns' buffers transferred. */
  async open({ role = 'a', source, sniffed: id = null, asModel = false, kind = null }) {
    if (role === 'a') {
      close('a');
      close('b');
    } else close(role);
    const src = takeSniffed(id) ?? await sourceOf(source);
    const ck = await openSource(src);
    // a Trainer folder's kind (its training_args.bin's, the core's reading) where the file says none
    if (kind && !asModel) await applyKind(ck, null, kind).catch(() => {});
    handles[role] = { ck, src, stats: new Map(), asModel };
    const part = filePart(handles[role]);
    return transfer(part, buffersOf(part.columns));
  },

  /** Pair a PyTorch optimizer with its model (the open pair, or a file holding both opened as 'a'
   *  and again as 'b' with asModel), once, before the views draw them: the pairing gives the
   *  optimizer its slots; `names` (the model's, in module order) order a model that keeps none.
   *  Resolves {a, b} as open gives them, the pair's slots in both. */
  async bind({ names = null } = {}) {
    await pairOpen(names).catch((err) => {
      if (err.name === 'AbortError') throw err;   // else the pair view shows why, from the kept verdict
    });
    const a = filePart(handles.a), b = filePart(handles.b);
    return transfer({ a, b }, [...buffersOf(a.columns), ...buffersOf(b.columns)]);
  },

  close({ role }) {
    close(role);
    return null;
  },

  /** What a file is: {json: null, sniffed} for a checkpoint (sniffed: an id for open, which
   *  then reads through the same source), else {json: 'names' | 'layout' | 'report' |
   *  'description' | 'unknown', names?}. */
  async classify({ source }) {
    const src = await sourceOf(source);
    const json = await readJsonSource(src);
    if (json === undefined) return { json: null, sniffed: keepSniffed(src) };
    const kind = jsonKind(json);
    return kind === 'names' ? { json: kind, names: namesOf(json, source.name ?? 'names') } : { json: kind };
  },

  /** Whether files (`files` [{path, source}]: a picked, dropped or served folder's, by their
   *  paths, or files dropped together) are a DeepSpeed checkpoint the core reads as one: null,
   *  or {root, tag, family ('DeepSpeed', 'DCP'), members: [names], unused: [indices of files it
   *  does not read]}. */
  async deepspeedFolder({ files }) {
    const found = await folderPlanOf(files);
    if (!found) return null;
    for (const src of found.sources.values()) src.close();
    const { root, tag, members, family } = found.plan;
    return { root, tag, family, members: members.map((m) => m.name), unused: found.unused };
  },

  /** Bytes [offset, offset + length) of an open file, for the hex view. */
  bytes({ role = 'a', offset, length }) {
    const { src } = handle(role);
    const start = Math.max(0, Math.min(offset, src.size));
    const dest = new Uint8Array(Math.max(0, Math.min(length, src.size - start)));
    const got = src.read(start, dest);
    return transfer({ start, bytes: dest.subarray(0, got) }, [dest.buffer]);
  },

  io({ role = 'a' }) {
    return handle(role).src.io();
  },

  /** The core's JSON report of an open file (for "Export report"). */
  reportText({ role = 'a' }) {
    return handle(role).ck.reportText();
  },

  async examples() {
    const list = await makeExamples();
    return transfer(list, list.flatMap((e) => e.files.map((f) => f.bytes.buffer)));
  },
};
