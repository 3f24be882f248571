// ckptscope command line (docs/cli.md). Exit status: 0 valid / would load / no
// differences; 1 invalid checkpoint, would not load, or differences; 2 usage or I/O error;
// 141 when stdout's reader went away. A bad file never produces a stack trace: the reference
// diagnostic, its offset, a hint. Every line for a person goes out through terminal.js.

import fs from 'node:fs';
import net from 'node:net';
// The modules of every command; a command's own (write, export, convert, run, view) load when it runs:
// every command starts sooner (`inspect --stats` also starts its workers sooner).
import { open } from '../checkpoint.js';
import { check, pair, diff, health, readerNames } from '../api.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { readJsonSource } from '../sources.js';
import { openWithStats, workerCount } from '../parallel.js';
import { jsonKind } from '../layout.js';
import { summaryLines, errorLines, pairLines, healthLines, isWarningFlag, namedSlot } from './text.js';
import { say, terminalJSON, sameDestination, writeStdout, outputColumns } from '../terminal.js';
import { FileError, STDIN, checkInput, reading, writing, displayName, sourceOf, readMessage, isStream, streamName, readJsonFile, readNamesFile, fileStamp, stillWriting, isFresh } from '../user-files.js';
import { loadsInLine, checkEveryReader, convertFile, convertTorchFile, convertedLines } from './readers.js';
import { USAGE, COMMANDS as KNOWN, UsageError, parseArgs, usageOf, helpOf, refuseIdle, ratioBandArg, positiveArg } from './args.js';
import { decimalNumber } from '../options.js';
import { folderFiles, applyKind, FolderError } from '../trainer-run.js';
import { nearest, didYouMean, shown, PATH_ECHO_MAX } from '../suggest.js';

// --help: the usage and how the CLI behaves in a shell.
const HELP = `${USAGE}

FILE (and write's DESCRIPTION) may be - for the standard input:
  ckptscope inspect - < model.ckpt
exit status: 0 valid, would load, no differences; 1 invalid, would not load,
differences; 2 usage or I/O error; 3 (run) nothing breaks, but a pair cannot
tell; 141 when the reader of stdout goes away (ckptscope inspect F | head).
An invalid file: stdout has the summary (or --json report) with the diagnostic;
stderr has the diagnostic too, unless stderr goes where stdout goes (a terminal,
2>&1), to show it once.
Control characters from files and arguments are shown as escapes (\\u001b).
Output fits 80 columns (a wider terminal: its width); a path or name longer
than a line gets a line of its own; --json is never wrapped.
serve and view: 127.0.0.1 only; the port is --port, else PORT, else 8080 (view:
the first free one from 8080 up); view prints the page URL and opens it unless
--no-open. Ctrl-C stops them (exit status 0).`;

/** Anything else the user can act on, said in words; exit status 2. */
class Failure extends Error {}

// ---- commands -------------------------------------------------------------------------------

/** --workers N: how many workers read the statistics (default 'auto': what pays for the files' size). */
function workersArg(seen) {
  const given = seen['--workers'];
  if (given === undefined) return 'auto';
  if (!/^[0-9]{1,2}$/.test(given) || Number(given) < 1 || Number(given) > 64) throw new UsageError(`--workers must be a number from 1 to 64, got ${given}`);
  return Number(given);
}

/** A layout JSON's object, or the path itself for another checkpoint (the one rule of the
 *  package: a file whose first non-blank byte is { or [ is JSON). Never a bare JSON value: the
 *  API would take a string for a path and a number for a file descriptor. */
async function layoutArg(path) {
  checkInput(path, 'layout or checkpoint');
  const layout = await reading(path, 'layout', () => readJsonSource(path)).catch((err) => {
    throw err instanceof LayoutError ? new LayoutError(err.message) : err;
  });
  if (layout === undefined) return path;
  if (layout === null || typeof layout !== 'object' || Array.isArray(layout)) {
    throw new LayoutError(`${path}: a layout must be a JSON object ({"shapes": ..., "requiresGrad": ...}) or a report from ckptscope inspect --json`);
  }
  return layout;
}

/** Slot names from --names (null without): as many as the file has slots, else a warning. */
function readNames(path, count, ties = null) {
  if (path === undefined) return null;
  return readNamesFile(path, { slots: count, ties, onMismatch: (text) => say(process.stderr, `warning: ${text}`) });
}

/** Open a file the user named, with its name in any I/O error. */
function openFile(file, what, options) {
  checkInput(file, what);
  return reading(file, what, () => open(sourceOf(file), options));
}

/** --kind adam|adamw: a PyTorch optimizer's kind its file does not say (null when not given). */
function kindArg(seen, command) {
  const kind = seen['--kind'];
  if (kind === undefined) return null;
  if (kind !== 'adam' && kind !== 'adamw') throw new UsageError(`--kind takes adam or adamw, not ${shown(kind, PATH_ECHO_MAX)}`, command);
  return kind;
}

const isFolder = (file) => !isStream(file) && fs.statSync(file, { throwIfNoEntry: false })?.isDirectory() === true;

/** A Trainer checkpoint-N/ folder given for `positional[at]`: the folder's optimizer.pt in its
 *  place and its model as --state. Returns the kind to give the optimizer: {kind} from --kind
 *  (null: none), and in a folder {fallback} from training_args.bin, where the file says none. */
async function folderArgs(positional, seen, command, at = 0) {
  const kind = kindArg(seen, command);
  const file = positional[at];
  if (file === undefined || !isFolder(file)) return { kind, fallback: null };
  if (seen['--state'] !== undefined) throw new UsageError(`--state goes with an optimizer file: ${shown(file, PATH_ECHO_MAX)} is a checkpoint folder, paired with its own model`, command);
  const f = await folderFiles(file, { kind }).catch((err) => {
    throw err instanceof FolderError ? new Failure(err.message) : err;
  });
  if (!f) return { kind, fallback: null };   // not a Trainer's: a folder, refused as one
  positional[at] = f.optimizer;
  seen['--state'] = f.model;
  return { kind, fallback: f.fallback };
}

/** The open optimizer `ck` given its kind ({kind, fallback} of folderArgs); a given kind the file
 *  contradicts is refused in the core's words (exit 2). */
async function giveKind(ck, { kind, fallback }, file) {
  if (kind === null && fallback === null) return;
  try {
    await applyKind(ck, kind, fallback);
  } catch (err) {
    if (err instanceof CheckpointError) throw new Failure(`${displayName(file)}: ${err.message}`);
    throw err;
  }
}

/** The longest report inspect --json indents (its indented form is several times longer). */
const REPORT_INDENT_LIMIT = 4 << 20;

async function cmdInspect(argv) {
  const { positional, seen } = parseArgs('inspect', argv);
  if (positional.length !== 1) throw new UsageError('inspect takes one FILE', 'inspect');
  const kind = await folderArgs(positional, seen, 'inspect');
  refuseIdle('inspect', seen, '--workers', seen['--stats'], 'workers read the payloads, which only --stats reads');
  refuseIdle('inspect', seen, '--names', !seen['--json'], 'the JSON report has no names; drop --json to see them');
  const file = positional[0];
  const stats = !!seen['--stats'];
  const workers = workersArg(seen);
  // Statistics of a real file by several workers; a pipe is read once, in order.
  const n = stats && !isStream(file) && seen['--state'] === undefined ? await workerCount(workers, [file]) : 1;
  const parallel = n > 1;
  checkInput(file, 'checkpoint');
  const stamp = fileStamp(file);   // a file still being written is named as such
  // Every thread reads this one open file (a file renamed over the path mid-run changes nothing).
  const source = parallel ? reading(file, 'checkpoint', () => fs.openSync(file, 'r')) : sourceOf(file);
  let ck;
  try {
    // with workers: they start (and open the file) while this thread parses it
    const openFile = (src, options) => reading(file, 'checkpoint', () => open(src, options));
    ck = parallel ? await openWithStats(source, n, { openFile }) : await openFile(source, { stats });
  } catch (err) {
    if (parallel) fs.closeSync(source);
    throw err;
  }
  let model = null, pairing = null;
  try {
    await giveKind(ck, kind, file);
    // an optimizer with its model (--state MODEL, or the model its own file holds): the pair's
    // slots, as a PyTorch optimizer has none of its own, and the pair's verdict
    const modelPath = seen['--state'] ?? (ck.summary.needsModel && ck.summary.tensorCount && ck.summary.optimizer ? file : undefined);
    if (modelPath !== undefined) {
      if (modelPath !== file) checkInput(modelPath, 'checkpoint');
      model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath), { stats }));
      pairing = await pairForInspect(ck, model, file, modelPath, readNames(seen['--names'], null));
    }
    const summary = ck.summary;
    const slots = summary.kind === 'state' ? summary.tensorCount : summary.slotCount;
    if (seen['--json'] && pairing) {
      writeStdout(terminalJSON({ ...JSON.parse(ck.reportText()), pair: pairing.result }, 2) + '\n');
    } else if (seen['--json']) {
      // Indented for people; past 10,000 slots, or a report of more than REPORT_INDENT_LIMIT
      // characters (a slot of rank 2^26), streamed from the core as one line: a million slots
      // never become one string, nor does an indented copy pass the longest string there is.
      const text = (slots ?? 0) > 10_000 ? null : ck.reportText();
      if (text === null || text.length > REPORT_INDENT_LIMIT) ck.writeReport(writeStdout);
      else writeStdout(terminalJSON(JSON.parse(text), 2) + '\n');
    } else {
      const names = readNames(seen['--names'], slots, () => ck.report.schema?.effectiveRepresentatives ?? null) ?? summary.pairing?.slots ?? null;
      say(process.stdout, summaryLines(ck.report, displayName(file), names, { width: outputColumns(process.stdout) }));
      if (ck.readers) say(process.stdout, loadsInLine(ck.readers));
      if (pairing) say(process.stdout, pairing.lines);
    }
    // The reference diagnostic also goes to stderr, for scripts and logs; not when stderr is
    // where stdout goes (a terminal, 2>&1), where the summary or JSON already shows it.
    if (!summary.ok && !sameDestination()) say(process.stderr, summary.error.message);
    else if (pairing && !pairing.result.pairs && !sameDestination()) say(process.stderr, pairing.result.error.message);
    await warnStillWriting(file, stamp, summary.ok ? null : summary.error.code);
    return summary.ok && (!pairing || pairing.result.pairs) ? 0 : 1;
  } finally {
    model?.close();
    ck.close();
    if (parallel) fs.closeSync(source);
  }
}

/** inspect OPT --state MODEL: the pair's verdict as check --state gives it, in lines. */
async function pairForInspect(ck, model, file, modelPath, names) {
  let result;
  try {
    result = await pair(ck, model, { names });
  } catch (err) {
    if (!(err instanceof CheckpointError) || !err.result) throw err;
    result = err.result;   // an invalid file, or files in the wrong roles: said below the summary
    return { result, lines: [`${displayName(file)} does not pair with ${modelPath}: ${err.message}`] };
  }
  return { result, lines: ['', ...pairLines(result, displayName(file), modelPath, names)] };
}

/** How long a fresh file read as truncated is watched for growth. */
const GROWTH_WATCH_MS = 250;

/** A warning on stderr when FILE may still be being written: it changed while it was read, or,
 *  read as truncated and modified moments ago, it grows while watched a moment. */
async function warnStillWriting(file, stamp, code) {
  let text = stillWriting(file, stamp);
  const { codes } = await loadBinding();
  if (!text && code === codes.TRUNCATED && isFresh(fileStamp(file))) {
    const watched = fileStamp(file);
    await new Promise((resolve) => setTimeout(resolve, GROWTH_WATCH_MS));
    text = stillWriting(file, watched);
  }
  if (text) say(process.stderr, `warning: ${text}`);
}

async function cmdCheck(argv) {
  const { positional, seen } = parseArgs('check', argv);
  refuseIdle('check', seen, '--kind', seen['--expect'] === undefined, 'the kind is a PyTorch optimizer\'s, checked with its model (OPT --state MODEL, or a checkpoint folder)');
  const kind = await folderArgs(positional, seen, 'check');
  // a PyTorch file that holds its model too (Lightning, {'model', 'optimizer'}) pairs with it
  if (positional.length === 1 && !seen['--expect'] && !seen['--state'] && await holdsBoth(positional[0])) return checkPair(positional[0], positional[0], seen['--names'], kind);
  if (positional.length !== 1 || (!seen['--expect'] === !seen['--state'])) throw new UsageError(`check takes FILE --expect LAYOUT, or OPT --state STATE${await checkOrder(positional, seen)}`, 'check');
  const reader = seen['--reader'];
  if (reader !== undefined && seen['--state'] !== undefined) throw new UsageError('--reader goes with --expect: a reader loads into a layout', 'check');
  if (reader !== undefined && reader !== 'all') await knownReader('--reader', reader, ', or all');
  if (seen['--state'] !== undefined) return checkPair(positional[0], seen['--state'], seen['--names'], kind);
  const [file] = positional;
  const expect = seen['--expect'];
  if (isStream(expect)) throw new UsageError(`check --expect needs a file: ${streamName(expect)} works for FILE only`);
  // every reader reads FILE again: a stream is read once
  if (reader === 'all' && isStream(file)) throw new UsageError(`check --reader all needs a file: ${streamName(file)} cannot be read once per reader; give one --reader, or a file`);
  checkInput(file, 'checkpoint');
  const layout = await layoutArg(expect);
  const stamp = fileStamp(file);
  let result;
  try {
    if (reader === 'all') {
      const every = await checkEveryReader(file, layout, expect);
      say(process.stdout, every.lines);
      return every.ok ? 0 : 1;
    }
    result = await reading(file, 'checkpoint', () => check(sourceOf(file), layout, { reader }));
  } catch (err) {
    if (err instanceof LayoutError) throw new LayoutError(`${expect}: ${err.message}`);
    if (!(err instanceof CheckpointError)) throw err;
    // The layout at fault: no verdict on the file.
    if (err.subject === 'expected') {
      if (typeof layout === 'string') throw new CheckpointError(err, { context: `cannot check against ${expect}: it is not a valid checkpoint` });
      say(process.stderr, errorLines(err, { layoutName: expect }));
      return 1;
    }
    // The verdict and the trainer's diagnostic on stdout, as inspect and check --state show
    // theirs; the diagnostic on stderr too, unless that is where stdout goes (shown once).
    const why = errorLines(err, { layoutName: expect, names: readNames(seen['--names'], null) });
    say(process.stdout, `${displayName(file)}: does not load into ${expect}`, why);
    if (!sameDestination()) say(process.stderr, why);
    await warnStillWriting(file, stamp, err.code);
    return 1;
  }
  for (const w of result.warnings) say(process.stderr, `warning: ${w}`);
  say(process.stdout, `${displayName(file)}: loads into ${expect}`);
  return 0;
}

/** Of FILE: does it hold an optimizer that takes its slots from a model (a PyTorch file's, which
 *  also stores its groups' learning rates), and that model too? */
async function modelFacts(file) {
  if (isStream(file) || !fs.existsSync(file)) return { needsModel: false, holdsBoth: false };
  const ck = await open(sourceOf(file)).catch(() => null);
  try {
    const needsModel = !!(ck?.summary.needsModel && ck.summary.optimizer);
    return { needsModel, holdsBoth: needsModel && !!ck.summary.tensorCount };
  } finally {
    ck?.close();
  }
}

const holdsBoth = async (file) => (await modelFacts(file)).holdsBoth;

/** check OPT --state STATE: the pairing verdict (docs/format.md 6), every failure listed. */
async function checkPair(opt, state, namesPath, kind = { kind: null, fallback: null }) {
  if (isStream(state)) throw new UsageError(`check --state needs a file: ${streamName(state)} works for OPT only`);
  checkInput(opt, 'checkpoint');
  checkInput(state, 'checkpoint');
  let result;
  const names = readNames(namesPath, null);   // they also order a state file that keeps no module order
  // with a kind: the optimizer opened here, to be given it before the pairing
  const optimizer = kind.kind === null && kind.fallback === null ? null : await openFile(opt, 'checkpoint');
  try {
    if (optimizer) await giveKind(optimizer, kind, opt);
    result = await reading(state, 'checkpoint', () => pair(optimizer ?? sourceOf(opt), state, { names }));
  } catch (err) {
    if (!(err instanceof CheckpointError) || !err.result) throw err;
    const invalid = err.result.invalid;
    if (invalid) {
      // An invalid file never pairs: its own diagnostic first, then the verdict.
      const name = invalid === 'state' ? state : displayName(opt);
      const why = [`${name}: ${err.message}`, ...errorLines(err).slice(1)];
      say(process.stdout, why, `${displayName(opt)} does not pair with ${state}: ${name} is invalid, and an invalid file never pairs`);
      if (!sameDestination()) say(process.stderr, why);
      return 1;
    }
    // Not a verdict: the files cannot be paired at all (the wrong roles: swapped?).
    throw new Failure(`cannot pair ${displayName(opt)} with ${state}: ${err.message}${await pairOrder(opt, state)}`);
  } finally {
    optimizer?.close();
  }
  const lines = pairLines(result, displayName(opt), state, names);
  say(process.stdout, lines);
  if (!result.pairs && !sameDestination()) say(process.stderr, result.error.message);
  return result.pairs ? 0 : 1;
}

/** One side of a diff: a layout object, or an open, valid checkpoint (a broken one is named). */
async function diffSide(path) {
  const side = await layoutArg(path);
  if (typeof side === 'string') {
    const ck = await openFile(path, 'checkpoint');
    if (!ck.ok) {
      const error = ck.summary.error;
      ck.close();
      throw new CheckpointError(error, { context: `cannot compare: ${path} is not a valid checkpoint` });
    }
    return ck;
  }
  if (jsonKind(side) === 'report' && side.ok === false) {
    const error = { message: String(side.error?.message ?? 'the report carries no diagnostic'), offset: side.error?.offset ?? null, hint: side.error?.hint ?? null };
    throw new CheckpointError(error, { context: `cannot compare: ${path} is the report of an invalid checkpoint` });
  }
  return side;
}

/** A malformed layout: describe each side alone to name the one at fault. */
async function nameMalformedSide(sides) {
  for (const [side, name] of sides) {
    try {
      await diff(side, side);
    } catch (err) {
      throw err instanceof LayoutError ? new LayoutError(`${name}: ${err.message}`) : err;
    }
  }
}

async function cmdDiff(argv) {
  const { positional, seen } = parseArgs('diff', argv);
  if (positional.length !== 2) throw new UsageError('diff takes two files', 'diff');
  const [a, b] = positional;
  for (const side of [a, b]) if (isStream(side)) throw new UsageError(`diff needs two files: ${streamName(side)} is not supported there`);
  const sides = [];
  let differences;
  try {
    sides.push(await diffSide(a), await diffSide(b));
    differences = await diff(sides[0], sides[1]);
    // two checkpoints of one layout: what they hold too (steps, counter, moments)
    const sameSlots = !differences.some((d) => d.slot !== null && d.slot !== undefined);
    if (sameSlots && sides.every((s) => typeof s?.entry === 'function') && sides[0].summary.slotCount === sides[1].summary.slotCount) {
      const { valueDifferences } = await import('../diff-values.js');
      differences = [...differences, ...(await valueDifferences(sides[0], sides[1]))];
    }
  } catch (err) {
    if (err instanceof LayoutError && sides.length === 2) await nameMalformedSide([[sides[0], a], [sides[1], b]]);
    throw err;
  } finally {
    for (const side of sides) side?.close?.();
  }
  const names = readNames(seen['--names'], null);
  if (!differences.length) {
    say(process.stdout, `no differences between ${a} and ${b}`);
    return 0;
  }
  say(process.stdout, `${differences.length} difference${differences.length === 1 ? '' : 's'} between ${a} and ${b}:`,
    differences.map((d) => `  ${namedSlot(names, d.slot)}${d.message}`));
  return 1;
}

/** health OPT [--state STATE] [--lr X] [--json]: exit 0 healthy, 1 a slot flagged. */
async function cmdHealth(argv) {
  const { positional, seen } = parseArgs('health', argv);
  if (positional.length !== 1) throw new UsageError(`health takes one OPT [--state STATE] [--lr X]${await healthOrder(positional, seen)}`, 'health');
  const kind = await folderArgs(positional, seen, 'health');
  refuseIdle('health', seen, '--names', !seen['--json'], 'the health JSON has no names; drop --json to see them');
  const [opt] = positional;
  const state = seen['--state'];
  const strict = !!seen['--strict'];
  for (const f of [opt, state]) if (f !== undefined && isStream(f)) throw new UsageError(`health needs files: ${streamName(f)} cannot be read twice over`);
  const lr = positiveArg('--lr', seen['--lr'], (text) => new UsageError(text, 'health'));
  // one rule for both: the ratios need --lr and --state (lr · rms(u) / rms(θ))
  // a PyTorch file holding its model has its parameters (and its groups' lr) with it
  const facts = await modelFacts(opt);
  const withParams = state !== undefined || facts.holdsBoth;
  refuseIdle('health', seen, '--lr', withParams, 'the ratios need --lr and --state (lr · rms(u) / rms(θ))');
  refuseIdle('health', seen, '--ratio-band', (seen['--lr'] !== undefined || facts.needsModel) && withParams, 'the ratios need --lr and --state (lr · rms(u) / rms(θ))');
  const band = await ratioBandArg(seen['--ratio-band'], (text) => new UsageError(text, 'health'));
  checkInput(opt, 'checkpoint');
  if (state !== undefined) checkInput(state, 'checkpoint');
  let result;
  // with a kind: the optimizer opened here, given it before health pairs it with its model
  const optimizer = kind.kind === null && kind.fallback === null ? null : await openFile(opt, 'checkpoint');
  try {
    if (optimizer) await giveKind(optimizer, kind, opt);
    const model = state ?? (optimizer && facts.holdsBoth ? opt : null);
    result = await reading(opt, 'checkpoint', () => health(optimizer ?? opt, model, { lr, ratioBand: band, workers: workersArg(seen) }));
  } catch (err) {
    if (err instanceof CheckpointError && err.fileError) {
      throw new CheckpointError(err.fileError, { context: err.message });
    }
    throw err;
  } finally {
    optimizer?.close();
  }
  if (seen['--json']) writeStdout(terminalJSON(result, 2) + '\n');
  else say(process.stdout, healthLines(result, displayName(opt), state, readNames(seen['--names'], result.slots.length) ?? result.names ?? null, { strict, width: outputColumns(process.stdout) }));
  if (!result.ok) {
    say(process.stderr, errorLines(result.error));
    return 1;
  }
  // The core says which flags are warnings (the ratio band, a heuristic): --strict makes them failures.
  return result.flags.some((f) => strict || !isWarningFlag(f)) ? 1 : 0;
}

/** export FILE OUT.safetensors|OUT.npz [--names NAMES.json]: streamed, atomically written. */
async function cmdExport(argv) {
  const { positional, seen } = parseArgs('export', argv);
  if (positional.length !== 2) throw new UsageError('export takes FILE OUT.safetensors|OUT.npz', 'export');
  const [given, out] = positional;
  const format = /\.safetensors$/i.test(out) ? 'safetensors' : /\.npz$/i.test(out) ? 'npz' : null;
  if (!format) {
    const swapped = /\.(safetensors|npz)$/i.test(given) ? meant('export', out, given) : '';
    throw new UsageError(`export writes OUT.safetensors or OUT.npz: the name ${out} says neither${swapped}`, 'export');
  }
  if (isStream(given)) throw new UsageError(`export needs files: ${streamName(given)} cannot be read by ranges`);
  if (out === STDIN) throw new UsageError('export needs files: - (standard output) cannot be written atomically');
  const kind = await folderArgs(positional, seen, 'export');
  const file = positional[0];
  const ck = await openFile(file, 'checkpoint');
  let model = null;
  try {
    if (!ck.ok) throw new CheckpointError(ck.summary.error, { context: `cannot export ${file}: it is not a valid checkpoint` });
    await giveKind(ck, kind, file);
    // a PyTorch optimizer's slots, and their names, come from its model
    const modelPath = seen['--state'] ?? (ck.summary.needsModel && ck.summary.optimizer && ck.summary.tensorCount ? file : undefined);
    refuseIdle('export', seen, '--state', ck.summary.needsModel, 'a model gives its slots to a PyTorch optimizer only; this file has its own');
    if (modelPath !== undefined) {
      if (modelPath !== file) checkInput(modelPath, 'checkpoint');
      model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath)));
      const result = await pair(ck, model);
      if (!result.pairs) throw new CheckpointError(result.error, { context: `cannot export ${file}: it does not pair with ${modelPath}` });
    }
    const slots = ck.kind === 'state' ? ck.summary.tensorCount : ck.summary.slotCount;
    // one name per slot, else refused (exit 2): the names become the tensors' names
    const ties = () => ck.report.schema?.effectiveRepresentatives ?? null;   // read only for a count that differs
    const names = seen['--names'] !== undefined ? readNamesFile(seen['--names'], { slots, ties }) : ck.summary.pairing?.slots ?? undefined;
    const { saveExport } = await import('../export.js');
    const { codes } = await loadBinding();
    await writing(out, () => saveExport(out, ck, { format, names })).catch((err) => {
      // names the core refuses (empty, alike, too long for a zip): the names file is at fault, as
      // when it has too few; the file itself is fine (exit status 2, not 1)
      if (seen['--names'] !== undefined && err instanceof CheckpointError && err.code === codes.INVALID_ARGUMENT) throw new LayoutError(`${seen['--names']}: ${err.message}`);
      throw err;
    });
  } finally {
    model?.close();
    ck.close();
  }
  say(process.stdout, `wrote ${out} (${fs.statSync(out).size} bytes, ${format})`);
  return 0;
}

async function cmdWrite(argv) {
  const { positional } = parseArgs('write', argv);
  if (positional.length !== 2) throw new UsageError('write takes DESCRIPTION.json OUT', 'write');
  if (/\.json$/i.test(positional[1]) && !/\.json$/i.test(positional[0])) {
    throw new UsageError(`write takes DESCRIPTION.json first, then OUT${meant('write', positional[1], positional[0])}`, 'write');
  }
  if (positional[1] === STDIN) {
    throw new UsageError('write needs a file name for OUT, not -: the checkpoint is written to a temporary file beside it, then renamed');
  }
  const description = readJsonFile(positional[0], 'description');
  // A model-state description has one array of values per tensor; an optimizer one, entries.
  const state = description !== null && typeof description === 'object' && Array.isArray(description.values);
  const { saveState, saveCheckpoint } = await import('../write.js');
  await writing(positional[1], () => (state ? saveState : saveCheckpoint)(positional[1], description));
  say(process.stdout, `wrote ${positional[1]} (${fs.statSync(positional[1]).size} bytes)`);
  return 0;
}

/** The port asked for by --port, else by PORT (empty: unset); null when none was. */
function askedPort(seen) {
  const [given, from] = seen['--port'] !== undefined ? [seen['--port'], '--port'] : [process.env.PORT || undefined, 'PORT'];
  if (given === undefined) return null;
  if (!/^\d{1,5}$/.test(given) || Number(given) > 65535) throw new UsageError(`${from} must be a port number (0 to 65535), got ${given}`);
  return Number(given);
}

async function cmdServe(argv) {
  const { positional, seen } = parseArgs('serve', argv);
  if (positional.length) throw new UsageError(`serve takes no files${positional.length <= 2 ? meant('view', ...positional) : ''}`, 'serve');
  const port = askedPort(seen) ?? 8080;
  const { serve } = await import('../server/server.js');
  const server = await listening(() => serve({ port, quiet: true }), port, (next) => `try --port ${next} or PORT=${next} npm start`);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, `ckptscope viewer: ${server.origin}/  (Ctrl-C stops it)`);
  return null;   // keeps running
}

const FIRST_PORT = 8080;
const PORTS_TO_TRY = 100;

/** What view can serve: an existing regular file (ranges need a size and positional reads). */
function regularFile(file) {
  if (file === STDIN) throw new UsageError('view needs files: - (standard input) cannot be served by byte ranges');
  let st;
  try {
    st = fs.statSync(file);   // stat, not open: opening a FIFO would wait for a writer
  } catch (err) {
    throw new FileError(readMessage(err, file, 'checkpoint'));
  }
  if (st.isDirectory()) throw new FileError(readMessage({ code: 'EISDIR' }, file, 'checkpoint'));
  if (!st.isFile()) throw new FileError(`${file} is not a regular file: view serves a file by byte ranges`);
  checkInput(file, 'checkpoint');   // readable
}

async function cmdView(argv) {
  const { positional, seen } = parseArgs('view', argv);
  if (positional.length < 1) throw new UsageError('view takes FILE [FILE2 ...] [NAMES.json]', 'view');
  positional.forEach(regularFile);
  // a JSON array is the slots' names, read here (capped, checked) and served as read; a layout
  // JSON is served as a file
  const files = positional.map((p) => (/\.json$/i.test(p) && Array.isArray(readJsonFile(p, 'names')) ? { path: p, names: readNamesFile(p) } : p));
  if (files.filter((f) => typeof f !== 'string').length > 1) throw new UsageError('view takes one NAMES.json: the slots have one name each', 'view');
  const asked = askedPort(seen);
  const { serve } = await import('../server/server.js');
  const start = (port) => serve({ port, quiet: true, files, passes: true });
  const advice = (next) => `try --port ${next}`;
  const server = asked !== null
    ? await listening(() => start(asked), asked, advice)
    : await listening(() => firstFreePort(start), FIRST_PORT, advice);
  stopOnSignals(server);   // before the URL is out: a Ctrl-C right after it must find the handler
  say(process.stdout, server.viewerUrl);
  const opened = !seen['--no-open'] && (await import('../open-browser.js')).openBrowser(server.viewerUrl);
  say(process.stderr, `ckptscope: ${opened ? 'opening it in your browser' : 'open this URL in your browser'} (Ctrl-C stops the server)`);
  return null;   // keeps running
}

/** The first port from 8080 up that `start(port)` can listen on. */
async function firstFreePort(start) {
  for (let port = FIRST_PORT; port < FIRST_PORT + PORTS_TO_TRY; port++) {
    try {
      return await start(port);
    } catch (err) {
      if (err?.code !== 'EADDRINUSE') throw err;
    }
  }
  throw new Failure(`ports ${FIRST_PORT} to ${FIRST_PORT + PORTS_TO_TRY - 1} are all in use: choose one with --port N`);
}

/** Ctrl-C (SIGINT) and SIGTERM: close the server and its open connections, exit status 0. */
function stopOnSignals(server) {
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();   // keep-alive connections would hold close() open
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Can 127.0.0.1:port be listened on right now? */
function isFree(port) {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port near `port` that is free now (advice only: it may be taken before it is used). */
async function freePortNear(port) {
  for (let next = port + 1; next <= Math.min(65535, port + PORTS_TO_TRY); next++) if (await isFree(next)) return next;
  for (let next = port - 1; next >= Math.max(1024, port - PORTS_TO_TRY); next--) if (await isFree(next)) return next;
  return port < 65535 ? port + 1 : port - 1;
}

/** Start a server; a port that cannot be had becomes advice, not a stack. */
async function listening(start, port, advice) {
  try {
    return await start();
  } catch (err) {
    if (err?.code === 'EADDRINUSE') throw new Failure(`port ${port} is in use: ${advice(await freePortNear(port))}`);
    if (err?.code === 'EACCES') throw new Failure(`port ${port} needs privileges: choose one above 1023, e.g. --port 8080`);
    if (err?.code === 'CKPT_NO_WASM') throw new Failure(err.message);
    throw err;
  }
}

/** convert IN OUT --to V | --for READER [options], or IN OUT.pt --lr X [--state STATE]
 *  (docs/cli.md, cli-readers.js). */
async function cmdConvert(argv) {
  const { positional, seen } = parseArgs('convert', argv);
  if (positional.length === 2 && TORCH_OUT.test(positional[1])) return convertTorch(positional, seen);
  if (positional.length === 2 && (await modelFacts(positional[0])).needsModel) return convertFromTorch(positional, seen);
  for (const option of FROM_TORCH) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a PyTorch optimizer IN: convert optimizer.pt OUT.ckpt --state MODEL ${option}`, 'convert');
  }
  for (const option of ['--lr', '--state']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a PyTorch OUT (.pt, .pth or .bin): convert IN OUT.pt --lr X [--state STATE]`, 'convert');
  }
  if (positional.length !== 2 || (seen['--to'] === undefined) === (seen['--for'] === undefined)) {
    throw new UsageError('convert takes IN OUT and one of --to 2|3|4|5|oldest, --for READER', 'convert');
  }
  const [input, output] = positional;
  // the converter reads the entries again after the parse: a stream is drained by then
  if (isStream(input)) throw new UsageError(`convert needs a file: ${streamName(input)} cannot be read twice over`, 'convert');
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  const to = seen['--to'];
  if (to !== undefined && !['2', '3', '4', '5', 'oldest'].includes(to)) throw new UsageError(`--to takes 2, 3, 4, 5 or oldest, not ${to}`, 'convert');
  const counter = seen['--random-counter'];
  if (counter !== undefined && (!/^[0-9]{1,20}$/.test(counter) || BigInt(counter) >= 1n << 64n)) throw new UsageError(`--random-counter takes a nonnegative integer below 2^64, not ${counter}`, 'convert');
  const options = {
    ...(to === undefined ? { for: seen['--for'] } : { to: to === 'oldest' ? to : Number(to) }),
    randomCounter: counter, dropRandomCounter: !!seen['--drop-random-counter'], untie: !!seen['--untie'], roundToFloat32: !!seen['--round-to-float32'],
  };
  if (seen['--for'] !== undefined) await knownReader('--for', seen['--for'], '');
  say(process.stdout, await convertFile(input, output, options));
  return 0;
}

// OUT's extension says the direction: a torch.save file for PyTorch, else a TLADAMF version
const TORCH_OUT = /\.(pt|pth|bin)$/i;
// the options of a PyTorch optimizer's conversion: TorchLean's file holds one configuration
const FROM_TORCH = ['--kind', '--weight-decay', '--betas', '--eps', '--drop-amsgrad'];

/** A number option's value, else a usage error naming it. */
function numberOption(seen, option) {
  if (seen[option] === undefined) return undefined;
  const x = decimalNumber(seen[option]);
  if (Number.isNaN(x)) throw new UsageError(`${option} takes a number, not ${shown(seen[option], PATH_ECHO_MAX)}`, 'convert');
  return x;
}

/** convert optimizer.pt OUT.ckpt [--state MODEL] [--to V] [--kind K] ...: PyTorch to TorchLean
 *  (docs/pytorch.md): the pair's slots (FORMAT.md 10.4) written as a TLADAMF file, the lowest
 *  version that holds it unless --to or --for says. */
async function convertFromTorch([input, output], seen) {
  for (const option of ['--lr', '--drop-random-counter']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} does nothing here: ${displayName(input)} is a PyTorch optimizer: it holds no random counter (--random-counter N supplies one)`, 'convert');
  }
  const counter = seen['--random-counter'];
  if (counter !== undefined && (!/^[0-9]{1,20}$/.test(counter) || BigInt(counter) >= 1n << 64n)) throw new UsageError(`--random-counter takes a nonnegative integer below 2^64, not ${counter}`, 'convert');
  if (output === STDIN) throw new UsageError('convert needs a file name for OUT, not -: the file is written to a temporary file beside it, then renamed', 'convert');
  if (seen['--to'] !== undefined && seen['--for'] !== undefined) throw new UsageError('convert takes one of --to and --for', 'convert');
  const to = seen['--to'] ?? (seen['--for'] === undefined ? 'oldest' : undefined);
  if (to !== undefined && !['2', '3', '4', '5', 'oldest'].includes(to)) throw new UsageError(`--to takes 2, 3, 4, 5 or oldest, not ${to}`, 'convert');
  if (seen['--for'] !== undefined) await knownReader('--for', seen['--for'], '');
  const kind = seen['--kind'];
  if (kind !== undefined && kind !== 'adam' && kind !== 'adamw') throw new UsageError(`--kind takes adam or adamw, not ${shown(kind, PATH_ECHO_MAX)}`, 'convert');
  let betas;
  if (seen['--betas'] !== undefined) {
    betas = seen['--betas'].split(',').map((x) => decimalNumber(x));
    if (betas.length !== 2 || betas.some(Number.isNaN)) throw new UsageError(`--betas takes B1,B2 (two numbers), not ${shown(seen['--betas'], PATH_ECHO_MAX)}`, 'convert');
  }
  const options = {
    ...(to === undefined ? { for: seen['--for'] } : { to: to === 'oldest' ? to : Number(to) }),
    untie: !!seen['--untie'], roundToFloat32: !!seen['--round-to-float32'], kind, betas, randomCounter: counter,
    weightDecay: numberOption(seen, '--weight-decay'), eps: numberOption(seen, '--eps'), dropAmsgrad: !!seen['--drop-amsgrad'],
  };
  const modelPath = seen['--state'] ?? ((await modelFacts(input)).holdsBoth ? input : undefined);
  if (modelPath === undefined) throw new UsageError(`convert ${displayName(input)} needs its model: a PyTorch optimizer's slots come from it (--state MODEL)`, 'convert');
  if (modelPath !== input) checkInput(modelPath, 'checkpoint');
  const ck = await reading(input, 'checkpoint', () => open(sourceOf(input)));
  const model = await reading(modelPath, 'checkpoint', () => open(sourceOf(modelPath))).catch((err) => {
    ck.close();
    throw err;
  });
  let result;
  try {
    const paired = await pair(ck, model, { names: readNames(seen['--names'], null) }).catch((err) => {
      if (err instanceof CheckpointError && err.result?.invalid) throw new CheckpointError(err.fileError ?? err, { context: `cannot convert ${displayName(input)}: ${err.result.invalid === 'state' ? modelPath : displayName(input)} is not a valid checkpoint` });
      throw err;
    });
    if (!paired.pairs) throw new CheckpointError(paired.error, { context: `cannot convert ${displayName(input)}: it does not pair with ${modelPath}` });
    const { convert } = await import('../convert.js');
    result = await writing(output, () => convert(ck, output, options));
  } finally {
    model.close();
    ck.close();
  }
  say(process.stdout, `${displayName(output)}: version ${result.version} (${result.dtype}), from ${displayName(input)} with ${modelPath}`, await convertedLines(output, result));
  return 0;
}

/** convert IN OUT.pt --lr X [--state STATE]: TorchLean to PyTorch (docs/pytorch.md). */
async function convertTorch([input, output], seen) {
  for (const option of ['--to', '--for', '--random-counter', '--drop-random-counter', '--untie', '--round-to-float32']) {
    if (seen[option] !== undefined) throw new UsageError(`${option} goes with a TLADAMF OUT: ${shown(output, PATH_ECHO_MAX)} is written as a torch.save file (its extension)`, 'convert');
  }
  if (isStream(input)) throw new UsageError(`convert needs a file: ${streamName(input)} cannot be read twice over`, 'convert');
  const state = seen['--state'];
  if (state !== undefined && isStream(state)) throw new UsageError(`convert --state needs a file: ${streamName(state)} works for IN only`, 'convert');
  // a number: the core's rule decides which (finite and not negative, as torch's Adam takes it)
  const lr = numberOption(seen, '--lr');
  say(process.stdout, await convertTorchFile(input, output, { lr, state }));
  return 0;
}

async function knownReader(option, name, more) {
  const names = await readerNames();
  if (!names.includes(name)) throw new UsageError(`${option} takes a TorchLean reader: ${names.join(', ')}${more}; not ${name}`);
}

// ---- did you mean (js/suggest.js: the rule and the words) ------------------------------------

/** `: did you mean \`ckptscope ARGS\`?`, each argument echoed within bounds. */
const meant = (...args) => `: ${didYouMean(`\`ckptscope ${args.map((a) => shown(a, PATH_ECHO_MAX)).join(' ')}\``)}`;

/** An unknown command: a misspelt one, or a file given before its command. */
function commandSuggestion(command, rest) {
  const near = nearest(command, KNOWN);
  if (near) return [meant(near, ...rest), near];
  const k = rest.findIndex((a) => KNOWN.includes(a));
  if (k >= 0) return [meant(rest[k], command, ...rest.filter((_, j) => j !== k)), rest[k]];
  return ['', null];
}

/** What a file is, for a suggestion only: 'state', 'optimizer', 'json' or null (unreadable). */
async function kindOf(file) {
  if (/\.json$/i.test(file)) return 'json';
  try {
    const ck = await open(file);
    try {
      return ck.summary.family ? (ck.kind === 'state' ? 'state' : 'optimizer') : null;
    } finally {
      ck.close();
    }
  } catch {
    return null;
  }
}

/** check A B (no --expect, no --state): the command line meant, from what A and B are. */
async function checkOrder(positional, seen) {
  if (positional.length !== 2 || seen['--expect'] !== undefined || seen['--state'] !== undefined) return '';
  const [a, b] = positional;
  const [ka, kb] = [await kindOf(a), await kindOf(b)];
  if (ka === 'state' && kb === 'optimizer') return meant('check', b, '--state', a);
  if (ka === 'optimizer' && kb === 'state') return meant('check', a, '--state', b);
  return meant('check', a, '--expect', b);
}

/** check STATE --state OPT: the two given the other way round. */
async function pairOrder(opt, state) {
  if (isStream(opt)) return '';
  const [ko, ks] = [await kindOf(opt), await kindOf(state)];
  return ko === 'state' && ks === 'optimizer' ? meant('check', state, '--state', opt) : '';
}

/** health A B: the optimizer checkpoint first, the model-state file after --state. */
async function healthOrder(positional, seen) {
  if (positional.length !== 2 || seen['--state'] !== undefined) return '';
  const [a, b] = positional;
  const [opt, state] = (await kindOf(a)) === 'state' ? [b, a] : [a, b];
  return meant('health', opt, '--state', state, ...(seen['--lr'] !== undefined ? ['--lr', seen['--lr']] : []));
}

const COMMANDS = { inspect: cmdInspect, check: cmdCheck, diff: cmdDiff, health: cmdHealth, export: cmdExport, write: cmdWrite, serve: cmdServe, view: cmdView, convert: cmdConvert,
  run: async (argv) => (await import('./run.js')).cmdRun(argv, (text) => new UsageError(text, 'run'), readNames) };

export async function main(argv) {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V') {
    const { version } = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    writeStdout(`ckptscope ${version}\n`);
    return 0;
  }
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    if (command) writeStdout(HELP + '\n');
    else process.stderr.write(USAGE + '\n');
    return command ? 0 : 2;
  }
  const run = COMMANDS[command];
  try {
    if (!run) {
      const [text, near] = commandSuggestion(command, rest);
      throw new UsageError(`unknown command ${shown(command)}${text}`, near);
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      writeStdout(helpOf(command) + '\n');
      return 0;
    }
    return await run(rest);
  } catch (err) {
    if (err instanceof UsageError) {
      if (!err.command && run) err.command = command;
      say(process.stderr, `ckptscope: ${err.message}`);
      process.stderr.write((err.command ? `${usageOf(err.command)}\n(ckptscope ${err.command} --help: its options)` : USAGE) + '\n');
      return 2;
    }
    if (err instanceof CheckpointError) {
      // `context`: which of the user's files, when the diagnostic alone does not say.
      if (err.context) say(process.stderr, `ckptscope: ${err.context}`);
      say(process.stderr, errorLines(err));
      return 1;
    }
    if (err instanceof FileError || err instanceof Failure) {
      say(process.stderr, `ckptscope: ${err.message}`);
      return 2;
    }
    if (err instanceof LayoutError) {
      say(process.stderr, `ckptscope: ${err.message}`);
      return 2;
    }
    if (err && typeof err.code === 'string' && err.syscall) {  // Node I/O errors
      say(process.stderr, `ckptscope: ${err.path ? `${err.path}: ` : ''}${err.message}`);
      return 2;
    }
    say(process.stderr, `ckptscope: unexpected error: ${err?.message ?? err}`);
    return 2;
  }
}

