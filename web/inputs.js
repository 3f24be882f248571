// How files reach the page: drag and drop anywhere (on the compare card: the layout to compare
// with; on "Add model state…": the state file), the pickers, and the header menus' keyboard and
// outside-click behaviour. Everything ends in handleFiles(files, target) or setLabels.
import { $ } from './dom.js';

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
