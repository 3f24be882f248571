// The views, registered in one place, in page order. Each is a module of web/views/ whose class
// has mount(root) (it builds and owns its card), onFiles(files), onSelect({slot, from}) and
// onLabels(names), and may have a handler for any other event of the store (state.js: onHover,
// onStats, onExpected, onPair, onNotices). A view gets ctx = {store, rpc, stats, status,
// readBytes}; it never holds another view: views talk through the store. `place: 'bar'` mounts a
// view in the top bar (a menu) instead of among the cards. A new card is one more line here.
import { ExportsView } from './views/exports.js';
import { HeaderView, StateHeaderView } from './views/header.js';
import { ProblemView } from './views/problem.js';
import { NoticesView } from './views/notices.js';
import { NamesView } from './views/names.js';
import { WarningsView } from './views/warnings.js';
import { CompareView } from './views/compare.js';
import { ReadersView } from './views/readers.js';
import { PairView } from './views/pair.js';
import { HealthView } from './views/health.js';
import { MapView } from './views/sharing-map.js';
import { ParamsView } from './views/params-table.js';
import { EntriesView } from './views/entries-table.js';
import { TensorsView } from './views/state-tensors.js';
import { RunView } from './views/run.js';
import { TorchView } from './views/pytorch.js';
import { DeepSpeedView } from './views/deepspeed.js';
import { DcpView } from './views/dcp.js';

export const VIEWS = [
  { name: 'exports', View: ExportsView, place: 'bar' },
  { name: 'run', View: RunView },
  { name: 'header', View: HeaderView },
  { name: 'problem', View: ProblemView },
  { name: 'notices', View: NoticesView },
  { name: 'names', View: NamesView },
  { name: 'warnings', View: WarningsView },
  { name: 'compare', View: CompareView },
  { name: 'readers', View: ReadersView },
  { name: 'state-header', View: StateHeaderView },
  { name: 'pair', View: PairView },
  { name: 'torch', View: TorchView },
  { name: 'deepspeed', View: DeepSpeedView },
  { name: 'dcp', View: DcpView },
  { name: 'health', View: HealthView },
  { name: 'sharing-map', View: MapView },
  { name: 'params', View: ParamsView },
  { name: 'entries', View: EntriesView },
  { name: 'tensors', View: TensorsView },
];
