// The health view (placeholder until the package's health() lands): nothing is shown.
export class HealthView {
  constructor(store, { rpc, onSelect, status }) {
    this.store = store;
    this.rpc = rpc;
    this.onSelect = onSelect;
    this.status = status;
    this.lr = null;
    this.canExport = false;
  }
  setLr(lr) { this.lr = lr; }
  reset() {}
  pairChanged() {}
  select() {}
  render() {}
}
