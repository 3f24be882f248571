// How files reach the page: drag and drop anywhere (on an element marked data-drop="expect": the
// layout to compare with; data-drop="state": the model-state file), the pickers, the examples,
// the page address, and the top bar menus' keyboard and outside-click behaviour. Everything ends
// in handleFiles(files, target) or setLabels.
import { $, button } from './dom.js';

export function wireInputs({ handleFiles, readNames }) {
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
    const target = at?.closest('[data-drop]')?.dataset.drop ?? 'open';
    // a dropped folder's files are read from its entries (each named by its path in the folder)
    const entries = [...(e.dataTransfer?.items ?? [])].map((item) => item.webkitGetAsEntry?.()).filter(Boolean);
    const files = [...(e.dataTransfer?.files ?? [])];
    if (!entries.some((entry) => entry.isDirectory)) handleFiles(files, target);
    else folderFiles(entries).then((list) => handleFiles(list, target));
  });

  const picked = (target) => (e) => {
    const files = [...e.target.files];
    e.target.value = '';
    handleFiles(files, target);
  };
  $('file-input').addEventListener('change', picked('open'));
  $('state-input').addEventListener('change', picked('state'));
  $('expect-input').addEventListener('change', picked('expect'));
  $('run-input').addEventListener('change', picked('run'));
  $('run-folder-input').addEventListener('change', picked('run'));
  $('labels-input').addEventListener('change', (e) => {
    const [file] = e.target.files;
    e.target.value = '';
    if (file) readNames(file);
  });

  // A menu opens under its button and stays in the window: one that would cross the right edge
  // (a narrow window) moves left, never past the left edge.
  document.addEventListener('toggle', (e) => {
    const menu = e.target;
    if (!(menu instanceof HTMLDetailsElement) || !menu.classList.contains('menu') || !menu.open) return;
    const body = menu.querySelector('.menu-body');
    if (!body) return;
    body.style.left = '0px';
    const { left, right } = body.getBoundingClientRect();
    const over = right - (document.documentElement.clientWidth - 8);
    if (over > 0) body.style.left = `${-Math.min(over, left - 8)}px`;
  }, true);

  // The menus (Examples, Export…) close on a click outside them and on Escape.
  const menus = () => document.querySelectorAll('details.menu');
  document.addEventListener('click', (e) => {
    for (const m of menus()) if (m.open && !m.contains(e.target)) m.open = false;
  });
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    for (const m of menus()) {
      if (!m.open) continue;
      m.open = false;
      m.querySelector('summary').focus();
    }
  });
}

/** The files of dropped entries, folders walked three levels deep (an output folder's
 *  checkpoint-N/global_stepN/ files): [{source: a File, name: its path from the dropped entry,
 *  "save/global_step2/latest"}], as a picked folder's files are named. */
async function folderFiles(entries) {
  const out = [];
  const walk = async (entry, prefix, depth) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      out.push({ source: file, name: `${prefix}${entry.name}` });
      return;
    }
    if (depth > 2) return;
    const reader = entry.createReader();
    for (let batch; (batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject))).length;) {
      for (const e of batch) await walk(e, `${prefix}${entry.name}/`, depth + 1);
    }
  };
  for (const entry of entries) await walk(entry, '', 0);
  return out;
}

/** Sort the files of one drop or pick by what the package says they are (readJsonSource,
 *  jsonKind, in the worker): slot names, a layout or report to compare with, checkpoints, and
 *  the files that are none of these with why ({name, text}). */
export async function sortFiles(files, classify) {
  const checkpoints = [], names = [], notices = [];
  let expected = null;
  for (const file of files) {
    const source = file.source ?? file;   // a File, or {source: a path of this server, name}
    let kind;
    try {
      kind = await classify(file);
    } catch (err) {
      if (err.name === 'LayoutError') {   // JSON, but not valid
        notices.push({ name: file.name, text: err.message });
        continue;
      }
      kind = { json: null };   // unreadable: opening it says why, in the problem view
    }
    if (kind.json === 'names') names.push({ names: kind.names, name: file.name });
    else if (kind.json === 'layout' || kind.json === 'report') {
      if (expected) notices.push({ name: expected.name, text: `not used: one layout is compared at a time, and ${file.name} (the last given) is the one.` });
      expected = { source, name: file.name };
    }
    else if (kind.json) {
      notices.push({ name: file.name, text: `JSON, but neither slot names (an array of strings) nor a layout (an object with shapes): a ${kind.json === 'description' ? 'writer description' : 'JSON document'} is not opened here.` });
    } else checkpoints.push({ source, name: file.name, sniffed: kind.sniffed ?? null });
  }
  return { checkpoints, expected, names, notices };
}

/** The built-in examples (made by the package's writers in the worker), in the Examples menu and
 *  on the welcome card. */
export function loadExamples(rpc, { open, status }) {
  rpc.request('examples').then((examples) => {
    const choose = (ex) => {
      $('examples-menu').open = false;
      const files = ex.files.map((f) => ({ source: new File([f.bytes], f.name), name: f.name }));
      const expected = ex.expected ? { source: ex.expected, name: 'an untied layout' } : null;
      open(files, { labels: ex.labels, expected, lr: ex.lr ?? null, run: !!ex.run });
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
 *  read by the worker over HTTP with range requests. A path whose name is not valid
 *  percent-encoding (a URIError) goes to fail(path, message). */
export function openFromAddress(open, fail) {
  const go = () => {
    const paths = new URLSearchParams(location.hash.slice(1)).getAll('open');
    if (!paths.length) return;
    const items = [];
    for (const p of paths) {   // sorted as a drop is: names, a pair, or a run of three or more
      const last = p.split('/').pop() || p;
      try {
        items.push({ source: p, name: decodeURIComponent(last) });
      } catch {
        fail(p, `the page address names ${p}, which is not a file path: "${last}" is not valid percent-encoding (a % must be followed by two hexadecimal digits). Open the address that ckptscope view printed.`);
        return;
      }
    }
    open(items);
  };
  window.addEventListener('hashchange', go);
  go();
}
