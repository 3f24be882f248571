// How files reach the page: drag and drop anywhere (on the compare card: the layout to compare
// with; on "Add model state…": the state file), the pickers, and the header menus' keyboard and
// outside-click behaviour. Everything ends in handleFiles(files, target) or setLabels.
import { $, button } from './dom.js';

export function wireInputs({ handleFiles, setLabels, classify, hasFile, status }) {
  let dragDepth = 0;
  window.addEventListener('dragenter', (e) => {
    e.preventDefault();
    dragDepth++;
    $('drop-overlay').hidden = false;
  });
  window.addEventListener('dragover', (e) => e.preventDefault());
  window.addEventListener('dragleave', () => {
    dragDepth = Math.max(0, dragDepth - 1);
    if (!dragDepth) $('drop-overlay').hidden = true;
  });
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    dragDepth = 0;
    $('drop-overlay').hidden = true;
    const at = e.target instanceof Element ? e.target : null;
    const target = at?.closest('#compare, label:has(#expect-input)') ? 'expect' : at?.closest('#state-label, #state-summary') ? 'state' : 'open';
    handleFiles(e.dataTransfer?.files ?? [], target);
  });

  const picked = (target) => (e) => {
    const files = [...e.target.files];
    e.target.value = '';
    handleFiles(files, target);
  };
  $('file-input').addEventListener('change', picked('open'));
  $('state-input').addEventListener('change', picked('state'));
  $('expect-input').addEventListener('change', (e) => {
    const files = [...e.target.files];
    e.target.value = '';
    if (!hasFile()) status('Open a checkpoint first, then choose the layout or checkpoint to compare it with.');
    else handleFiles(files, 'expect');
  });
  $('labels-input').addEventListener('change', async (e) => {
    const [file] = e.target.files;
    e.target.value = '';
    if (!file) return;
    try {
      const kind = await classify(file);
      if (kind.json !== 'names') throw new Error('expected a JSON array of slot names (strings)');
      setLabels(kind.names, file.name);
    } catch (err) {
      status(`${file.name}: ${err.message}`);
    }
  });

  // The menus (Examples, Export…) close on a click outside them and on Escape.
  const menus = [$('examples-menu'), $('export-menu')];
  document.addEventListener('click', (e) => {
    for (const m of menus) if (m.open && !m.contains(e.target)) m.open = false;
  });
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    for (const m of menus) {
      if (!m.open) continue;
      m.open = false;
      m.querySelector('summary').focus();
    }
  });
}

/** Sort the files of one drop or pick: names JSON applied at once (setLabels); a layout or report
 *  JSON is the layout to compare with; other JSON is said to be neither; the rest are checkpoints.
 *  The package says what a JSON file is (readJsonSource, jsonKind, in the worker). */
export async function sortFiles(files, { classify, setLabels, status, hasFile }) {
  const checkpoints = [];
  let expected = null;
  for (const file of files) {
    const source = file.source ?? file;   // a File, or {source: a path of this server, name}
    let kind;
    try {
      kind = await classify(file);
    } catch (err) {
      if (err.name === 'LayoutError') {   // JSON, but not valid: say so
        status(`${file.name}: ${err.message}`);
        continue;
      }
      kind = { json: null };   // unreadable: opening it says why, in the problem view
    }
    if (kind.json === 'names') setLabels(kind.names, file.name);
    else if (kind.json === 'layout' || kind.json === 'report') {
      if (!hasFile() && files.length === 1) status(`${file.name} is a layout: open a checkpoint first, then drop the layout to see whether it would load.`);
      else expected = { source, name: file.name };
    } else if (kind.json) {
      status(`${file.name} is JSON but neither slot names (an array of strings) nor a layout (an object with shapes): a ${kind.json === 'description' ? 'writer description' : 'JSON document'} is not opened here.`);
    } else checkpoints.push({ source, name: file.name });
  }
  return { checkpoints, expected };
}

/** The built-in examples (made by the package's writers in the worker), in the Examples menu and
 *  on the welcome card. */
export function loadExamples(rpc, { open, status }) {
  rpc.request('examples').then((examples) => {
    const choose = (ex) => {
      $('examples-menu').open = false;
      const files = ex.files.map((f) => ({ source: new File([f.bytes], f.name), name: f.name }));
      const expected = ex.expected ? { source: ex.expected, name: 'an untied layout' } : null;
      open(files, { labels: ex.labels, expected, lr: ex.lr ?? null });
    };
    for (const ex of examples) {
      const b = button(ex.title, { onClick: () => choose(ex) });
      b.dataset.example = ex.name;
      $('examples').append(b);
      $('welcome-examples').append(button(ex.title, { onClick: () => choose(ex) }));
    }
  }, (err) => status(`Examples unavailable: ${err.message}`));
}

/** The page address names files to open: #open=/files/TOKEN/NAME[&open=…] (`ckptscope view`),
 *  read by the worker over HTTP with range requests. */
export function openFromAddress(open) {
  const go = () => {
    const paths = new URLSearchParams(location.hash.slice(1)).getAll('open');
    if (!paths.length) return;
    open(paths.slice(0, 2).map((p) => ({ source: p, name: decodeURIComponent(p.split('/').pop() || p) })));
  };
  window.addEventListener('hashchange', go);
  go();
}
