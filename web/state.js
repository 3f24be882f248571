// The page's state, and the events it emits. EVENTS is the whole list: emit() refuses any other
// type, and tests/browser/architecture.test.mjs checks that each one is emitted and reaches the
// views. The host delivers event `x` to every view's `onX(detail)`; the four every view has are
// files, select and labels (and mount), the others are optional.
export const EVENTS = Object.freeze({
  files: 'what is open changed (opened, a model-state file added, could not be read): the files {a, b}',
  select: 'a slot (or, with a model-state file alone, a tensor) selected: {slot, from}',
  labels: 'slot names changed: the names (an array) or null',
  hover: 'the slot under the pointer in the sharing map: {slot} (-1: none)',
  stats: 'statistics changed (an item\'s arrived, a scan started or ended): {kind}',
  expected: 'the layout or checkpoint to compare with changed: {expected} (null: compare mode left)',
  pair: 'the pair verdict of the open optimizer checkpoint and model-state file arrived: {pair}',
  notices: 'files of the last drop, pick or address that were not used, and why: [{name, text}]',
  run: 'files opened as checkpoints of one run (run-input, or a drop of more than two, or a Trainer output folder): {files: [{name, source}], trainer: [{name, optimizer, model, trainingArgs, trainerState}] (indices into files) | null}',
  io: 'a pass read more of the open files (a health pass, an export): the byte counts shown are asked for again: {}',
});

export class Store extends EventTarget {
  constructor() {
    super();
    this.files = { a: null, b: null };   // a: the file opened first; b: its model-state file
    this.failure = null;   // {names, error}: the files could not be read at all
    this.labels = null;
    this.labelsSource = null;
    this.labelsPinned = false;   // names the user loaded stay for the next files
    this.expected = null;
    this.lr = null;   // the learning rate of an example's run (the checkpoint does not store it)
    this.selected = -1;
    this.pair = null;
    this.notices = [];
    this.queue = null;
  }

  /** Events are delivered in order: one emitted while another is being delivered (a view that
   *  selects the slot an error names, while the files are still reaching the other views)
   *  waits until every listener had the first. */
  emit(type, detail = {}) {
    if (!Object.hasOwn(EVENTS, type)) throw new TypeError(`the store has no event ${JSON.stringify(type)}`);
    if (this.queue) {
      this.queue.push([type, detail]);
      return;
    }
    this.queue = [[type, detail]];
    try {
      while (this.queue.length) {
        const [t, d] = this.queue.shift();
        this.dispatchEvent(new CustomEvent(t, { detail: d }));
      }
    } finally {
      this.queue = null;
    }
  }

  on(type, fn) {
    if (!Object.hasOwn(EVENTS, type)) throw new TypeError(`the store has no event ${JSON.stringify(type)}`);
    this.addEventListener(type, (e) => fn(e.detail));
  }

  // ---- changes: each sets the state, then says so ----------------------------------------------

  /** New files (or none, with a failure): selection, pair verdict and notices reset. */
  setFiles(files, { expected = null, lr = null, failure = null } = {}) {
    this.files = { a: files.a ?? null, b: files.b ?? null };
    this.failure = failure;
    this.expected = expected;
    this.lr = lr;
    this.selected = -1;
    this.pair = null;
    this.emit('files', this.files);
  }

  /** A model-state file added to the open optimizer checkpoint (the selection stays). */
  addFile(role, file) {
    this.files = { ...this.files, [role]: file };
    this.pair = null;
    this.emit('files', this.files);
  }

  select(slot, from = '') {
    this.selected = slot;
    this.emit('select', { slot, from });
  }

  setLabels(names, { source = null, pinned = false } = {}) {
    this.labels = names;
    this.labelsSource = source;
    this.labelsPinned = pinned;
    this.emit('labels', names);
  }

  hover(slot) {
    this.emit('hover', { slot });
  }

  setExpected(expected) {
    this.expected = expected;
    this.emit('expected', { expected });
  }

  setPair(pair) {
    this.pair = pair;
    this.emit('pair', { pair });
  }

  /** Files to read as one run (the run view computes it; the open files stay). */
  openRun(files, trainer = null) {
    this.emit('run', { files, trainer });
  }

  setNotices(notices) {
    this.notices = notices;
    this.emit('notices', notices);
  }

  // ---- reading ---------------------------------------------------------------------------------

  /** The optimizer file and the state file, whichever roles they came in. */
  get optimizer() {
    return [this.files.a, this.files.b].find((f) => f?.cols.kind === 'optimizer') ?? null;
  }

  get stateFile() {
    return [this.files.a, this.files.b].find((f) => f?.cols.kind === 'state') ?? null;
  }

  /** The file the page is about: the optimizer checkpoint, else the state file, else whatever
   *  was opened (a file of no known family). */
  get primary() {
    return this.optimizer ?? this.stateFile ?? this.files.a;
  }

  /** The worker's name for an open file. */
  roleOf(file) {
    return file === this.files.a ? 'a' : 'b';
  }

  label(i) {
    return this.labels?.[i] ?? '';
  }
}
