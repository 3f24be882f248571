// The viewer's worker: every byte of a checkpoint is read and parsed here, through the
// package, so the page never blocks. Protocol: {id, type, args} -> {id, result} | {id, error};
// progress arrives as {id, progress}. An unknown type is an error.
// Requests are {id, type, args}: the arguments stay apart from the protocol's own fields.
import { inspect, check, diff, entryStats, CheckpointError, LayoutError } from '/js/index.js';
import { makeExamples, exampleLayout } from './examples.js';
import { packReport } from './report-model.js';

// How many bytes this worker has read from files: the viewer shows it, and the tests use it
// to see that payloads are skipped, not read.
let bytesRead = 0;
if (typeof FileReaderSync !== 'undefined') {
  const read = FileReaderSync.prototype.readAsArrayBuffer;
  FileReaderSync.prototype.readAsArrayBuffer = function (blob) {
    bytesRead += blob.size;
    return read.call(this, blob);
  };
}

async function expectedOf(expected) {
  // A layout JSON file, or another checkpoint.
  if (expected instanceof Blob) {
    const head = new Uint8Array(await expected.slice(0, 64).arrayBuffer());
    const text = new TextDecoder().decode(head);
    if (/^\s*\{/.test(text) || expected.name?.endsWith('.json')) {
      try {
        return JSON.parse(await expected.text());
      } catch (err) {
        throw new LayoutError(`${expected.name || 'the layout'} is not valid JSON: ${err.message}`);
      }
    }
  }
  return expected;
}

const handlers = {
  async inspect({ file, stats }, progress) {
    const before = bytesRead;
    const report = await inspect(file, { stats, onProgress: stats ? progress : undefined });
    const { packed, transfer } = packReport(report);
    return { packed, bytesRead: bytesRead - before, transfer };
  },
  async check({ file, expected }) {
    const layout = await expectedOf(expected);
    let verdict;
    try {
      const r = await check(file, layout);
      verdict = { loads: true, warnings: r.warnings };
    } catch (err) {
      if (!(err instanceof CheckpointError) || err.role) throw err;
      verdict = { loads: false, error: { message: err.message, offset: err.offset, hint: err.hint }, warnings: err.report?.warnings ?? [] };
    }
    let differences = null;
    try {
      differences = await diff(file, layout);
    } catch {
      differences = null;   // a file too broken to compare: the verdict says why
    }
    return { ...verdict, differences };
  },
  async entryStats({ file, id }, progress) {
    return entryStats(file, id, { onProgress: progress });
  },
  async bytes({ file, offset, length }) {
    const start = Math.max(0, offset);
    return new Uint8Array(await file.slice(start, start + length).arrayBuffer());
  },
  async examples() {
    return { examples: await makeExamples(), layout: exampleLayout() };
  },
};

function serializeError(err) {
  return {
    name: err?.name ?? 'Error',
    message: err?.message ?? String(err),
    offset: err?.offset ?? null,
    code: err?.code ?? null,
    hint: err?.hint ?? null,
    role: err?.role ?? null,
  };
}

self.onmessage = async ({ data }) => {
  const { id, type, args = {} } = data;
  const progress = ({ done, total }) => self.postMessage({ id, progress: { done, total } });
  try {
    const handler = Object.hasOwn(handlers, type) ? handlers[type] : null;
    if (!handler) throw new TypeError(`unknown request type ${JSON.stringify(type)}`);
    const result = await handler(args, progress);
    // Typed arrays named in `transfer` move to the page instead of being copied.
    const transfer = result?.transfer ?? [];
    if (result?.transfer) delete result.transfer;
    self.postMessage({ id, result }, transfer);
  } catch (err) {
    self.postMessage({ id, error: serializeError(err) });
  }
};
