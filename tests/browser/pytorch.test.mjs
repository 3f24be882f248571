// PyTorch files in the viewer (docs/pytorch.md), made by torch at test time
// (tests/c/torch_pair_seeds.py): an optimizer.pt alone (its container, groups, weights-only
// verdict, state by index, the model it needs), with its model (the pair verdict, the
// parameters by the model's names, the tie of lm_head to wte, PyTorch's positional pairing, the
// parameters not in the optimizer, health at the groups' lr), a file holding both, a Lightning
// checkpoint naming a global weights_only refuses, a safetensors model, a model that does not
// fit, and a Trainer's checkpoint-N/ folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startViewer, dropFiles, shotAt } from './browser.mjs';
import { text, waitText } from './fixtures.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-torch-view-'));
const seeds = new URL('../c/torch_pair_seeds.py', import.meta.url).pathname;
let viewer;
before(async () => {
  execFileSync('/usr/bin/python3', [seeds, tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  viewer = await startViewer();
});
after(async () => {
  await viewer?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const file = (name) => ({ bytes: fs.readFileSync(path.join(tmp, name)), name });
const rows = (page, sel) => page.locator(sel).allInnerTexts();
const NOTE = 'same shapes, index by index; ties not compared (an optimizer saves none); the values are not compared: `run` with both steps\' state files compares them';
// lm's float buffer has no optimizer state, and a state dict does not say it is a buffer
const MASK = 'PyTorch: mask has no optimizer state: the pair holds only if the training code does not train it (a frozen parameter, or a buffer: --frozen mask says so); if it trains it, torch\'s load_state_dict refuses this state (loaded state dict contains a parameter group that doesn\'t match the size of optimizer\'s group)';
const CANNOT_TELL = 'load_state_dict pairs by position with the parameters the training code gives the optimizer again: the files do not say which (cannot tell).';
const GROUPS = ['0\t0.001\t0.9, 0.95\t1e-8\t0.1\tno\tno\t6', '1\t0.001\t0.9, 0.95\t1e-8\t0\tno\tno\t10'];

test('an optimizer.pt alone: its container, param groups, weights-only verdict and state by index; it needs its model', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt')]);
  await page.waitForSelector('[data-testid=torch]:not([hidden])');
  assert.equal(await text(page, '[data-testid=torch-container]'), 'lm.opt.pt is a torch.save zip of 48 records; its optimizer state dict at the top level.');
  assert.equal(await text(page, '[data-testid=weights-only]'),
    'torch.load(weights_only=True) of torch 2.14 and later loads it: the globals it names are torch._utils._rebuild_tensor_v2, torch.FloatStorage, collections.OrderedDict.');
  // every release read and every range between, one line each
  assert.deepEqual(await page.$$eval('[data-testid=weights-only-by] li', (ls) => ls.map((l) => l.textContent)), [
    'torch 1.13: no, BINFLOAT at byte 2958 of "lm.opt/data.pkl": Unsupported operand 71',
    'torch 2.0 to 2.5: yes', 'torch 2.6: yes', 'torch 2.7 to 2.13: yes', 'torch 2.14 and later: yes']);
  assert.deepEqual(await rows(page, '[data-testid=torch-group]'), GROUPS);
  const indices = await rows(page, '[data-testid=torch-index]');
  assert.equal(indices.length, 16);
  assert.equal(indices[0], '0\t0\t[11, 4]\tfloat32\t3');
  assert.equal(indices[15], '15\t1\t[4]\tfloat32\t3');
  assert.equal(await text(page, '[data-testid=needs-model]'),
    'Its slots (which parameter each index is) come from its model: drop the optimizer with its model (pytorch_model.bin, a .pt, model.safetensors), or add the model with Add model state….');
  assert.equal(await text(page, '[data-testid=field-kind]'), 'Adam or AdamW');
  assert.equal(await page.locator('#pair').isHidden(), true);
  await shotAt(page, 'torch-optimizer');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

/** The cards of lm's optimizer paired with its model (the same from two files or one): every
 *  index placed, but whether mask is trained the files cannot tell (the core's condition). */
/** A virtual table's row scrolled into view and read; a row the table redraws meanwhile (the
 *  statistics that follow a pass) is looked up again. */
async function rowSpans(page, sel) {
  for (let tries = 0; ; tries++) {
    try {
      const row = page.locator(sel);
      await row.scrollIntoViewIfNeeded({ timeout: 2000 });
      return await row.locator('span').allTextContents();
    } catch (err) {
      if (tries >= 10) throw err;
    }
  }
}

async function assertLmPaired(page) {
  await page.waitForSelector('[data-testid=pair-verdict].cannot-tell');
  assert.equal(await text(page, '[data-testid=pair-verdict]'), `Cannot tell whether they pair: ${MASK}`);
  assert.equal(await text(page, '[data-testid=positional-verdict]'), CANNOT_TELL);
  assert.equal(await text(page, '[data-testid=not-in-optimizer]'), 'Not in the optimizer: mask.');
  assert.equal(await text(page, '[data-testid=tie-equality]'), 'slot 17 lm_head.weight and slot 1 wte.weight: saved values equal');
  // the parameters by the model's names; lm_head shares wte's storage (read once the health
  // pass is done: its statistics redraw the rows)
  await waitText(page, '[data-testid=param-count]', '18 slots');
  await page.waitForFunction(() => /^18 slots in /.test(document.querySelector('[data-testid=health-state]')?.textContent ?? ''));
  assert.deepEqual((await rowSpans(page, '[data-testid=param-row][data-index="17"]')).slice(0, 7), ['17', 'lm_head.weight', '[11, 4]', '44', 'yes', '→ 1 wte.weight', '3']);
  const indices = await rows(page, '[data-testid=torch-index]');
  assert.equal(indices[0], '0\t0\twte.weight\t1\t[11, 4]\tfloat32\t3');
  assert.equal(indices[15], '15\t1\tln_f.bias\t16\t[4]\tfloat32\t3');
  // health at the param groups' lr, none typed
  await page.waitForFunction(() => /^18 slots in /.test(document.querySelector('[data-testid=health-state]')?.textContent ?? ''));
  assert.match(await text(page, '[data-testid=health-state]'), /: 3 slots flagged\. The chart shows the update-to-weight ratio at the optimizer's param groups' lr 0\.001 \(log scale;/);
  assert.equal(await page.inputValue('[data-testid=lr-input]'), '');
  assert.equal(await page.locator('[data-testid=health-chart]').getAttribute('data-mode'), 'ratio');
}

test('an optimizer.pt with its pytorch_model.bin: paired, the parameters by the model\'s names, lm_head sharing wte, health at the groups\' lr', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt'), file('lm.model.bin')]);
  await assertLmPaired(page);
  assert.equal(await text(page, '#pair .meta'), 'lm.opt.pt with lm.model.bin');
  await shotAt(page, 'torch-pair');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a file holding both (lm.both.pt): its optimizer paired with its own model; statistics of both sides', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.both.pt')]);
  await assertLmPaired(page);
  await page.click('#scan');
  await page.waitForFunction(() => /^Statistics for 16 entries in \d+ ms\.$/.test(document.getElementById('status').textContent));
  await page.click('#scan-tensors');
  await page.waitForFunction(() => /^Statistics for 18 tensors in \d+ ms\.$/.test(document.getElementById('status').textContent));
  assert.equal(await page.locator('#warnings').isHidden(), true);
  assert.equal(await text(page, '#pair .meta'), 'lm.both.pt: its optimizer with its model');
  assert.equal(await text(page, '[data-testid=torch-container]'),
    'lm.both.pt is a torch.save zip of 65 records; its optimizer state dict at optimizer; its model\'s state dict at model.');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the model added to an optimizer.pt open alone (Add model state…) pairs them', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt')]);
  await page.waitForSelector('[data-testid=needs-model]');
  await dropFiles(page, [file('lm.model.bin')], '#state-label');
  await assertLmPaired(page);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a Lightning .ckpt: the globals torch.load(weights_only=True) refuses, its warning once, the model it holds paired', async () => {
  const objects = path.join(tmp, 'objects');
  execFileSync('/usr/bin/python3', [new URL('../c/torch_objects_seeds.py', import.meta.url).pathname, objects], { stdio: 'ignore' });
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [{ bytes: fs.readFileSync(path.join(objects, 'lightning.ckpt')), name: 'lightning.ckpt' }]);
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=weights-only]'), 'torch.load(weights_only=True) of torch 2.14 and later refuses it: it names __main__.HParams. '
    + 'Every global it names: collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch.BFloat16Storage, torch.FloatStorage, __main__.HParams.');
  assert.equal(await text(page, '[data-testid=torch-container]'),
    'lightning.ckpt is a torch.save zip of 16 records; its optimizer state dict at optimizer_states[0]; its model\'s state dict at state_dict.');
  assert.deepEqual(await page.locator('#warnings [data-testid=warning]').allTextContents(),
    ['PyTorch: the file names Python callables that torch.load(weights_only=True) refuses: "__main__.HParams"']);
  assert.deepEqual(await rows(page, '[data-testid=torch-index]'),
    ['0\t0\t0.weight\t0\t[4, 3]\tbfloat16\t2', '1\t0\t0.bias\t1\t[4]\tbfloat16\t2', '2\t0\t1.weight\t2\t[1, 4]\tbfloat16\t2', '3\t0\t1.bias\t3\t[1]\tbfloat16\t2']);
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a model.safetensors keeps no module order: it pairs by shape with the core\'s warning, by the names once they are given', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt'), file('lm.model.safetensors')]);
  await page.waitForSelector('[data-testid=pair-verdict].cannot-tell');
  assert.deepEqual(await page.locator('#pair [data-testid=warning]').allTextContents(),
    ['warning: safetensors: model.safetensors keeps no module order: same-shaped parameters cannot be told apart (give --names NAMES.json)']);
  await waitText(page, '[data-testid=param-count]', '17 slots');
  // the names in module order (Slot names…): the two are paired again by them, without the warning
  await page.setInputFiles('#labels-input', path.join(tmp, 'lm.names.json'));
  await page.waitForFunction(() => document.querySelector('[data-testid=pair-verdict].cannot-tell') && !document.querySelector('#pair [data-testid=warning]'));
  assert.equal((await rows(page, '[data-testid=torch-index]'))[0], '0\t0\twte.weight\t1\t[11, 4]\tfloat32\t3');
  assert.equal(await page.locator('#names-note').isHidden(), true);   // the slots are named by the model, not by the list
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
  // dropped together with the files, the names order the model from the start (a fresh page: on
  // the page above, the verdict waited for is already there and the rows are being redrawn)
  const fresh = await viewer.page({ width: 800 });
  await dropFiles(fresh, [file('lm.opt.pt'), file('lm.model.safetensors'), file('lm.names.json')]);
  await fresh.waitForSelector('[data-testid=pair-verdict].cannot-tell');
  assert.equal(await fresh.locator('#pair [data-testid=warning]').count(), 0);
  assert.equal((await rows(fresh, '[data-testid=torch-index]'))[2], '2\t0\th.0.fc.weight\t5\t[8, 4]\tfloat32\t3');
  assert.deepEqual(fresh.consoleErrors, []);
  await fresh.context().close();
});

test('a resized model does not pair: the core\'s failure, the index placed on nothing', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt'), file('lm.resized.bin')]);
  await page.waitForSelector('[data-testid=pair-verdict].fails');
  assert.deepEqual(await page.locator('[data-testid=pair-failure] [data-testid=error]').allTextContents(),
    ['PyTorch: wte.weight is [13, 4] in the model, [11, 4] in the optimizer\'s state (index 0)']);
  assert.equal(await page.locator('[data-testid=pair-verdict] strong').textContent(), 'Does not pair: 1 failure.');
  assert.equal(await text(page, '[data-testid=positional-verdict]'), CANNOT_TELL);
  const indices = await rows(page, '[data-testid=torch-index]');
  assert.equal(indices[0], '0\t0\tnot placed\t—\t[11, 4]\tfloat32\t3');
  assert.equal(indices[1], '1\t0\twpe.weight\t2\t[7, 4]\tfloat32\t3');
  // the no-decay group fits still: placed
  assert.equal(indices[15], '15\t1\tln_f.bias\t16\t[4]\tfloat32\t3');
  assert.equal(await page.locator('#names-note').isHidden(), true);
  await shotAt(page, 'torch-resized');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('one group of every parameter: PyTorch\'s positional pairing beside the verdict, the indices it gives another parameter', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('mlp.opt.pt'), file('mlp.swapped.bin')]);
  await page.waitForSelector('[data-testid=pair-verdict].fails');
  assert.equal(await text(page, '[data-testid=positional-verdict]'), 'load_state_dict pairs by position, without a word: 2 indices to another parameter than found:');
  assert.deepEqual(await page.locator('[data-testid=positional-moved]').allTextContents(), ['index 0 (l1.weight) → l2.weight', 'index 1 (l1.bias) → l2.bias']);
  assert.equal(await text(page, '[data-testid=positional-failed]'), 'load_state_dict gives index 2 to l1.weight, without a word.');
  await dropFiles(page, [file('mlp.opt.pt'), file('mlp.model.bin')]);
  await page.waitForSelector('[data-testid=pair-verdict].loads');
  assert.equal(await text(page, '[data-testid=positional-verdict]'), 'load_state_dict pairs by position: here it gives every index the parameter found for it.');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('a Trainer\'s checkpoint-N/ folder (A folder…): its optimizer.pt with its pytorch_model.bin, the other files named', async () => {
  const dir = path.join(tmp, 'checkpoint-3');
  fs.mkdirSync(dir);
  fs.copyFileSync(path.join(tmp, 'lm.opt.pt'), path.join(dir, 'optimizer.pt'));
  fs.copyFileSync(path.join(tmp, 'lm.model.bin'), path.join(dir, 'pytorch_model.bin'));
  fs.copyFileSync(path.join(tmp, 'lm.model.bin'), path.join(dir, 'rng_state.pth'));
  const page = await viewer.page({ width: 800 });
  await page.setInputFiles('[data-testid=run-folder-input]', dir);
  await page.waitForSelector('[data-testid=pair-verdict].cannot-tell');
  assert.equal(await text(page, '#pair .meta'), 'optimizer.pt with pytorch_model.bin');
  assert.equal(await text(page, '[data-testid=notice][data-file="rng_state.pth"]'), 'rng_state.pth: not opened: a Trainer folder\'s optimizer.pt is shown with its pytorch_model.bin.');
  await waitText(page, '[data-testid=param-count]', '18 slots');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});

test('the lm pair\'s health at 800 px: every flag in view, the frozen mask in the frozen lane, the moments\' statistics after the pass', async () => {
  const page = await viewer.page({ width: 800 });
  await dropFiles(page, [file('lm.opt.pt'), file('lm.model.bin')]);
  await page.waitForFunction(() => /^18 slots in /.test(document.querySelector('[data-testid=health-state]')?.textContent ?? ''));
  // three warnings, each in view: the list has no scroll of its own
  assert.equal(await page.locator('[data-testid=health-flag]').count(), 3);
  assert.equal(await text(page, '.health-flags > p.meta'), '3 flags on 3 slots:');
  const list = await page.locator('.flag-list').evaluate((ul) => ({ scroll: ul.scrollHeight, client: ul.clientHeight, many: ul.classList.contains('many') }));
  assert.ok(list.scroll <= list.client && !list.many, `the flags are all in view: ${JSON.stringify(list)}`);
  // slot 0 (the mask buffer) has no update: drawn in the frozen lane, not on the ratio scale
  assert.equal(await page.getAttribute('[data-testid=health-chart]', 'data-frozen'), '0');
  // the moments' statistics come after the pass, without a click: wte.weight's row has its m rms
  const row = page.locator('[data-testid=entry-row][data-index="0"]');
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('[data-testid=entry-row][data-index="0"] span')].map((s) => s.textContent);
    return cells.length && !cells.includes('click row');
  });
  const cells = await row.locator('span').allTextContents();
  assert.equal(cells[1], 'wte.weight');
  assert.deepEqual([cells[6], cells[7]].map((c) => /^-?\d[\d.]*(e[-+]\d+)?$/.test(c)), [true, true], `m rms, v mean: ${cells.join(' | ')}`);
  assert.match(await text(page, '#status'), /^Opened lm\.opt\.pt and lm\.model\.bin in \d+ ms/);
  await shotAt(page, 'torch-health');
  assert.deepEqual(page.consoleErrors, []);
  await page.context().close();
});
