// The page's state, and the events views listen to: 'files' (a file opened or closed), 'select'
// (a slot selected: {slot, from}), 'labels' (slot names changed), 'stats' (statistics arrived),
// 'compare' (the expected layout changed), 'health' (the health pass changed).

export class Store extends EventTarget {
  constructor() {
    super();
    this.files = { a: null, b: null };   // a: the file opened; b: its model-state file
    this.labels = null;
    this.labelsSource = null;
    this.expected = null;
    this.selected = -1;
    this.pair = null;
    this.health = null;
  }

  emit(type, detail = {}) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  on(type, fn) {
    this.addEventListener(type, (e) => fn(e.detail));
  }

  /** The file in the main role. */
  get main() {
    return this.files.a;
  }

  /** The optimizer file and the state file, whichever roles they came in. */
  get optimizer() {
    return [this.files.a, this.files.b].find((f) => f?.cols.kind === 'optimizer') ?? null;
  }

  /** The file the page is about: the optimizer checkpoint, else the state file, else whatever
   *  was opened (a file of no known family). */
  get primary() {
    return this.optimizer ?? this.stateFile ?? this.files.a;
  }

  get stateFile() {
    return [this.files.a, this.files.b].find((f) => f?.cols.kind === 'state') ?? null;
  }

  label(i) {
    return this.labels?.[i] ?? '';
  }

  select(slot, from = '') {
    this.selected = slot;
    this.emit('select', { slot, from });
  }
}
