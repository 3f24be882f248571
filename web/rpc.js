// The worker protocol, both ends: the page sends {id, type, args}; the worker answers
// {id, result} or {id, error} and, while it works, {id, progress}. A type the worker has no
// handler for is an error (never silently ignored). Results wrapped in `transfer(value, list)`
// move their buffers to the page instead of copying them.

class Transfer {
  constructor(value, list) {
    this.value = value;
    this.list = list;
  }
}

/** Worker side: mark a result whose buffers move rather than copy. */
export const transfer = (value, list) => new Transfer(value, list);

/** The fields of an error that cross to the page (a CheckpointError's all do). */
const ERROR_FIELDS = ['name', 'message', 'code', 'offset', 'length', 'slot', 'subject', 'hint', 'configDiff', 'role', 'url', 'status'];

export function serializeError(err) {
  const out = {};
  for (const k of ERROR_FIELDS) if (err?.[k] !== undefined) out[k] = err[k];
  out.name ??= 'Error';
  out.message ??= String(err);
  return out;
}

/** Worker side: answer requests with `handlers[type](args, progress)`. */
export function serve(handlers, scope = self) {
  scope.onmessage = async ({ data }) => {
    const { id, type, args = {} } = data ?? {};
    const progress = (p) => scope.postMessage({ id, progress: p });
    try {
      if (typeof type !== 'string' || !Object.hasOwn(handlers, type)) throw new TypeError(`unknown request type ${JSON.stringify(type)}`);
      const out = await handlers[type](args, progress);
      if (out instanceof Transfer) scope.postMessage({ id, result: out.value }, [...new Set(out.list)]);
      else scope.postMessage({ id, result: out });
    } catch (err) {
      scope.postMessage({ id, error: serializeError(err) });
    }
  };
}

/** Page side: one worker, requests as promises. cancel() stops whatever runs (a scan inside the
 *  core cannot be interrupted from outside it) by replacing the worker; onRestart then lets the
 *  page open its files again in the new one. */
export class RpcClient {
  constructor(url, { onRestart } = {}) {
    this.url = url;
    this.onRestart = onRestart;
    this.next = 1;
    this.spawn();
  }

  /** How many requests are pending, on the page's root element (data-pending): tests and
   *  screenshots wait for 0. */
  mark() {
    if (typeof document !== 'undefined') document.documentElement.dataset.pending = String(this.pending.size);
  }

  spawn() {
    this.pending = new Map();
    this.worker = new Worker(this.url, { type: 'module' });
    this.worker.onmessage = ({ data }) => {
      const p = this.pending.get(data.id);
      if (!p) return;
      if ('progress' in data) {
        p.onProgress?.(data.progress);
        return;
      }
      this.pending.delete(data.id);
      this.mark();
      if (data.error) p.reject(Object.assign(new Error(data.error.message), data.error));
      else p.resolve(data.result);
    };
    this.worker.onerror = (e) => {
      e.preventDefault?.();
      for (const p of this.pending.values()) p.reject(new Error(`the worker stopped: ${e.message}`));
      this.pending.clear();
      this.mark();
    };
  }

  /** Whether a long request runs (one that reports progress: statistics, scans, health). */
  get busy() {
    for (const p of this.pending.values()) if (p.onProgress) return true;
    return false;
  }

  /** `transfer`: objects of args that move to the worker (a MessagePort). */
  request(type, args = {}, { onProgress, transfer = [] } = {}) {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onProgress });
      this.mark();
      this.worker.postMessage({ id, type, args }, transfer);
    });
  }

  /** Stop everything that runs: pending requests reject with an AbortError. */
  async cancel() {
    this.worker.terminate();
    const pending = [...this.pending.values()];
    this.spawn();
    this.mark();
    for (const p of pending) p.reject(new DOMException('cancelled', 'AbortError'));
    await this.onRestart?.();
  }
}
