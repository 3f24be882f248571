// The guard that js/ and web/ state no fact of the format or of the wasm ABI: a syntax-tree
// check (TypeScript's parser, the devDependency, through its API) for the facts the core describes (src/abi.c) — a
// family magic, a dtype name, a column stride, an element width or struct size in arithmetic
// or an allocation, a code by number — and an import-graph check: only js/binding.js calls the
// wasm exports or loads the raw core, and web/ reaches the package through /js/index.js only.
// The facts to look for come from the core's own description, so a new family or dtype is
// guarded without editing this file.
import fs from 'node:fs';
import path from 'node:path';
import { API } from 'typescript/unstable/sync';
import { SyntaxKind as K } from 'typescript/unstable/ast';
import { skipTrivia, computeLineStarts } from 'typescript/unstable/ast/scanner';
import { loadBinding } from '../../js/binding.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** The facts to look for, from the core's description. */
export async function facts() {
  const { abi } = await loadBinding();
  return {
    // the 7-byte magics; a family a probe recognises (safetensors) has a name, not a magic
    magics: new Set(abi.families.filter((f) => f.fixedMagic).map((f) => f.magic)),
    dtypes: new Set(abi.dtypes.map((d) => d.name)),
    widths: new Set(abi.dtypes.map((d) => d.width)),
    strides: new Set([abi.words.entryRow.length, abi.words.tensorRow.length]),
    sizes: new Set(Object.values(abi.structs).map((s) => s.size)),
    codes: new Set(Object.keys(abi.codes).filter((k) => k.length > 3)),
  };
}

/** The files guarded: every .js of js/ and web/ (declarations and the wasm build's stubs apart). */
export function guardedFiles() {
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? walk(p) : d.name.endsWith('.js') ? [p] : [];
  });
  return [...walk(path.join(ROOT, 'js')), ...walk(path.join(ROOT, 'web'))].sort();
}

/** The syntax trees of files (absolute paths): Map path -> SourceFile. */
export function parse(paths) {
  const api = new API({ cwd: ROOT });
  try {
    const snapshot = api.updateSnapshot({ openFiles: paths });
    return new Map(paths.map((p) => {
      const sf = snapshot.getDefaultProjectForFile(p)?.program.getSourceFile(p);
      if (!sf) throw new Error(`TypeScript did not parse ${p}`);
      return [p, sf];
    }));
  } finally {
    api.close();
  }
}

const isNumeric = (n) => n?.kind === K.NumericLiteral;
const isNumber = (n, set) => isNumeric(n) && set.has(Number(n.text));
const nameOf = (n) => (n && (n.kind === K.Identifier || n.kind === K.StringLiteral || n.kind === K.PrivateIdentifier) ? n.text : null);
const isStringy = (n) => n.kind === K.StringLiteral || n.kind === K.NoSubstitutionTemplateLiteral;
const isProperty = (n, name) => n?.kind === K.PropertyAccessExpression && nameOf(n.name) === name;

/** Findings [{line, what, text}] in one parsed file; `file` is its path relative to the root
 *  (it decides the import-graph rules). */
export function check(sf, file, f) {
  const text = sf.text, lines = computeLineStarts(text);
  const out = [];
  const flag = (node, what) => {
    const start = skipTrivia(text, node.pos);
    let line = 0;
    while (line + 1 < lines.length && lines[line + 1] <= start) line++;
    out.push({ line: line + 1, what, text: text.slice(start, node.end).slice(0, 80) });
  };
  const textOf = (n) => text.slice(skipTrivia(text, n.pos), n.end);
  const binding = file === 'js/binding.js', loader = file === 'js/wasm.js';
  const inWeb = file.startsWith('web/');
  const find = (n, test) => (test(n) ? n : n.forEachChild((c) => find(c, test)));
  const visit = (node) => {
    if (isStringy(node)) {
      if (f.magics.has(node.text)) flag(node, 'a family magic');
      if (f.dtypes.has(node.text)) flag(node, 'a dtype name');
    }
    if (node.kind === K.PropertyAssignment || node.kind === K.ShorthandPropertyAssignment) {
      const key = nameOf(node.name);
      if (f.magics.has(key)) flag(node, 'a family magic (as a key)');
      if (node.kind === K.PropertyAssignment && isNumeric(node.initializer) && Number(node.initializer.text) !== 0) {
        if (key === 'code' || f.codes.has(key)) flag(node, 'a code by number');
      }
    }
    if (node.kind === K.VariableDeclaration && isNumber(node.initializer, f.strides) && /field|stride|per_?row/i.test(nameOf(node.name) ?? '')) {
      flag(node, 'a column stride (named)');
    }
    if (node.kind === K.ElementAccessExpression) {
      // a[6 * k + 2]: a stride multiplying inside an index (a bare a[3] is only an index)
      const strided = (n) => n.kind === K.BinaryExpression && n.operatorToken.kind === K.AsteriskToken && (isNumber(n.left, f.strides) || isNumber(n.right, f.strides));
      const at = find(node.argumentExpression, strided);
      if (at) flag(at, 'a column stride in an index');
    }
    if (node.kind === K.BinaryExpression) {
      const op = node.operatorToken.kind;
      const { left, right } = node;
      if (op === K.SlashToken && isNumber(right, f.strides) && isProperty(left, 'length')) flag(node, 'a column stride dividing a length');
      // count * 4, 8 * n: a width scaling a count, an offset or a length (4 * width of a
      // model's shape is not one)
      const sized = (n) => !isNumeric(n) && /count|offset|length|len\b|size|bytes|\b[nki]\b/i.test(textOf(n));
      if (op === K.AsteriskToken && ((isNumber(left, f.widths) && sized(right)) || (isNumber(right, f.widths) && sized(left)))) {
        flag(node, 'an element width in arithmetic');
      }
      if (op === K.EqualsEqualsEqualsToken || op === K.ExclamationEqualsEqualsToken) {
        const num = (n) => isNumeric(n) && Number(n.text) !== 0;
        if ((isProperty(left, 'code') && num(right)) || (isProperty(right, 'code') && num(left))) flag(node, 'a code by number');
      }
    }
    if (node.kind === K.CallExpression && !loader) {
      const callee = node.expression.kind === K.PropertyAccessExpression ? nameOf(node.expression.name) : nameOf(node.expression);
      if (callee === 'malloc') {
        for (const arg of node.arguments) {
          const at = find(arg, (n) => isNumber(n, f.widths) || isNumber(n, f.sizes));
          if (at) flag(at, 'a width or struct size in an allocation');
        }
      }
    }
    if (node.kind === K.PropertyAccessExpression && /^(w|ckpt)_\w+/.test(nameOf(node.name) ?? '') && !binding && !loader) {
      flag(node, 'a wasm export called outside js/binding.js');
    }
    if ((node.kind === K.ImportDeclaration || node.kind === K.ExportDeclaration) && node.moduleSpecifier) {
      const from = node.moduleSpecifier.text;
      const elements = (node.importClause?.namedBindings ?? node.exportClause)?.elements ?? [];
      const names = elements.map((e) => nameOf(e.propertyName ?? e.name));
      if (/(^|\/)wasm\.js$/.test(from) && names.includes('loadCore') && !binding && file !== 'js/index.js') {
        flag(node, 'the raw core loaded outside js/binding.js');
      }
      // the package's two entries: its API and its plumbing (ckptscope/plumbing)
      if (inWeb && ((from.startsWith('/js/') && from !== '/js/index.js' && from !== '/js/plumbing.js') || /(^|\/)\.\.\/js\//.test(from))) {
        flag(node, 'web/ reaching past the package (/js/index.js)');
      }
    }
    node.forEachChild(visit);
  };
  visit(sf);
  return out;
}

/** Every finding in the tree: [{file, line, what, text}]. */
export async function checkTree() {
  const f = await facts();
  const files = guardedFiles();
  const trees = parse(files);
  return files.flatMap((p) => {
    const rel = path.relative(ROOT, p);
    return check(trees.get(p), rel, f).map((x) => ({ file: rel, ...x }));
  });
}
