#!/usr/bin/env node
// Runs every example of docs/*.md and compares what it prints with what the page shows.
//
//   node docs/examples/verify.mjs            check every page (exit 1 on a difference)
//   node docs/examples/verify.mjs cli.md     check one page (../README.md: the repository's README)
//   node docs/examples/verify.mjs --update   rewrite the shown output with the real output
//
// What runs, page by page, in a fresh folder holding docs/examples/*.json and the files that
// docs/examples/setup.sh makes from them (model.ckpt, state.ckpt, ...):
//   ```console   each `$ ` line is a command (bash, `ckptscope` on the PATH; a here-document's
//                lines and `\` continuations belong to it); the lines after it, up to the next `$ `,
//                are its output (stdout and stderr together, as a terminal
//                shows them). The blocks of a page share one folder, in order.
//   ```js        an ES module (`import ... from 'ckptscope'` works); when a ```text block
//                follows it (only blank lines or one line of prose between), that is its output.
//   ```python    the same, run with python3 (PYTHON overrides).
//   ```ts        compiled (strict, no output) with the repository's tsc against the package's types.
//   ```sh, ```json, ```text alone: shown, not run.
// Needs the WebAssembly module built (bash scripts/build.sh wasm) and, for Python, NumPy.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DOCS = path.dirname(HERE);
const ROOT = path.dirname(DOCS);
const PYTHON = process.env.PYTHON ?? (fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3');

const args = process.argv.slice(2);
const update = args.includes('--update');
const only = args.filter((a) => !a.startsWith('--'));

/** The fenced blocks of a page: {info, start, end (line indexes of the fences), body lines}. */
function blocks(lines) {
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(.*)$/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2];
    let j = i + 1;
    while (j < lines.length && !(lines[j].trim() === fence)) j++;
    out.push({ info: open[3].trim(), start: i, end: j, body: lines.slice(i + 1, j) });
    i = j;
  }
  return out;
}

function setupFolder() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-docs-'));
  for (const f of fs.readdirSync(HERE)) if (f.endsWith('.json')) fs.copyFileSync(path.join(HERE, f), path.join(dir, f));
  const bin = path.join(dir, '.bin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'ckptscope'), `#!/bin/sh\nexec node ${JSON.stringify(path.join(ROOT, 'js', 'cli.js'))} "$@"\n`, { mode: 0o755 });
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'ckptscope'));
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, NO_COLOR: '1' };
  delete env.PORT;
  const r = spawnSync('bash', [path.join(HERE, 'setup.sh')], { cwd: dir, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`setup.sh failed:\n${r.stdout}${r.stderr}`);
  return { dir, env };
}

const clean = (text) => text.split('\n').map((l) => l.replace(/\s+$/, '')).join('\n').replace(/\n+$/, '');

/** Run one console block: returns the real output of each command, in order. */
function runConsole(body, ctx) {
  const commands = [];
  let heredoc = null;
  for (const line of body) {
    if (heredoc) {
      commands[commands.length - 1] += '\n' + line;   // the text of a here-document
      if (line === heredoc) heredoc = null;
    } else if (line.startsWith('$ ')) {
      commands.push(line.slice(2));
      heredoc = /<<-?'?(\w+)'?/.exec(line)?.[1] ?? null;
    } else if (commands.length && /\\$/.test(commands[commands.length - 1])) {
      commands[commands.length - 1] += '\n' + line;   // a continued command
    }
  }
  const marker = (k) => `@@ckptscope-docs-${k}@@`;
  const script = commands.map((c, k) => `printf '%s\\n' '${marker(k)}'\n${c}\n`).join('');
  const r = spawnSync('bash', ['-c', `exec 2>&1\n${script}`], { cwd: ctx.dir, env: ctx.env, encoding: 'utf8', timeout: 120000 });
  const text = r.stdout ?? '';
  return commands.map((_, k) => {
    const from = text.indexOf(marker(k) + '\n');
    const to = k + 1 < commands.length ? text.indexOf(marker(k + 1) + '\n') : text.length;
    return clean(from < 0 ? '(did not run)' : text.slice(from + marker(k).length + 1, to));
  });
}

/** The console block as written, with each command's output replaced. */
function consoleText(body, outputs) {
  const out = [];
  let k = -1;
  let heredoc = null;
  let pending = null;   // the output of the command whose text is still being copied
  const flush = () => {
    if (pending) out.push(...pending.split('\n'));
    pending = null;
  };
  for (const line of body) {
    if (heredoc) {
      out.push(line);
      if (line === heredoc) heredoc = null;
    } else if (line.startsWith('$ ')) {
      flush();
      k++;
      out.push(line);
      heredoc = /<<-?'?(\w+)'?/.exec(line)?.[1] ?? null;
      pending = outputs[k] || null;
    } else if (k >= 0 && pending !== undefined && /\\$/.test(out[out.length - 1] ?? '')) {
      out.push(line);
    }
  }
  flush();
  return out;
}

/** A TypeScript block: compiled with the repository's tsc, strict, against the package's types. */
function compileTs(code, ctx, n) {
  const file = path.join(ctx.dir, `.snippet-${n}.mts`);
  fs.writeFileSync(file, code);
  const config = path.join(ctx.dir, `.tsconfig-${n}.json`);
  fs.writeFileSync(config, JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'esnext.disposable', 'dom'], types: [] },
    files: [file],
  }));
  const tsc = path.join(ROOT, 'node_modules', '.bin', 'tsc');
  const r = spawnSync(tsc, ['-p', config], { cwd: ctx.dir, env: ctx.env, encoding: 'utf8', timeout: 120000 });
  return { status: r.status, text: clean((r.stdout ?? '') + (r.stderr ?? '')) };
}

function runProgram(kind, code, ctx, n) {
  const file = path.join(ctx.dir, `.snippet-${n}.${kind === 'js' ? 'mjs' : 'py'}`);
  fs.writeFileSync(file, code);
  const cmd = kind === 'js' ? process.execPath : PYTHON;
  const r = spawnSync(cmd, [file], { cwd: ctx.dir, env: ctx.env, encoding: 'utf8', timeout: 120000 });
  return { status: r.status, text: clean((r.stdout ?? '') + (r.stderr ?? '')) };
}

let failures = 0;
let checked = 0;
// docs/*.md by their names, and the repository's README.md as ../README.md
const pages = [...fs.readdirSync(DOCS).filter((f) => f.endsWith('.md')).sort(), '../README.md'].filter((f) => !only.length || only.includes(f));
for (const page of pages) {
  const file = path.join(DOCS, page);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const all = blocks(lines);
  const runnable = all.some((b) => ['console', 'js', 'ts', 'python'].includes(b.info.split(/\s+/)[0]));
  if (!runnable) continue;
  const ctx = setupFolder();
  const edits = [];   // {start, end, body} replacements, applied bottom-up
  let n = 0;
  for (let b = 0; b < all.length; b++) {
    const block = all[b];
    const kind = block.info.split(/\s+/)[0];
    if (kind === 'console') {
      const outputs = runConsole(block.body, ctx);
      const real = consoleText(block.body, outputs);
      checked++;
      if (real.join('\n') !== block.body.map((l) => l.replace(/\s+$/, '')).join('\n')) {
        if (update) edits.push({ start: block.start, end: block.end, body: real });
        else {
          failures++;
          console.log(`${page}:${block.start + 1}: console output differs\n--- shown\n${block.body.join('\n')}\n--- real\n${real.join('\n')}\n`);
        }
      }
    } else if (kind === 'ts') {
      const r = compileTs(block.body.join('\n') + '\n', ctx, n++);
      checked++;
      if (r.status !== 0) {
        failures++;
        console.log(`${page}:${block.start + 1}: ts snippet does not compile\n${r.text}\n`);
      }
    } else if (kind === 'js' || kind === 'python') {
      const next = all[b + 1];
      const between = next ? lines.slice(block.end + 1, next.start).filter((l) => l.trim()) : [];
      const expected = next && next.info === 'text' && between.length <= 1 ? next : null;
      const r = runProgram(kind, block.body.join('\n') + '\n', ctx, n++);
      checked++;
      if (!expected) {
        if (r.status !== 0) {
          failures++;
          console.log(`${page}:${block.start + 1}: ${kind} snippet failed (status ${r.status})\n${r.text}\n`);
        }
        continue;
      }
      if (r.text !== clean(expected.body.join('\n'))) {
        if (update) edits.push({ start: expected.start, end: expected.end, body: r.text.split('\n') });
        else {
          failures++;
          console.log(`${page}:${block.start + 1}: ${kind} output differs\n--- shown\n${expected.body.join('\n')}\n--- real\n${r.text}\n`);
        }
      }
      b++;   // the output block is consumed
    }
  }
  if (edits.length) {
    for (const e of edits.sort((x, y) => y.start - x.start)) lines.splice(e.start + 1, e.end - e.start - 1, ...e.body);
    fs.writeFileSync(file, lines.join('\n'));
    console.log(`${page}: updated ${edits.length} block${edits.length === 1 ? '' : 's'}`);
  }
  fs.rmSync(ctx.dir, { recursive: true, force: true });
}
console.log(`${checked} examples checked, ${failures} differ${failures === 1 ? 's' : ''}`);
process.exitCode = failures ? 1 : 0;
