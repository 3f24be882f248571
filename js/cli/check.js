// ckptscope check: FILE --expect LAYOUT [--reader NAME|all] (would the trainer load it?), OPT
// --state STATE (the pairing verdict), or FILE alone for a PyTorch file holding its optimizer and
// its model (docs/cli.md "check"). Exit status 0 loads or pairs, 1 not.

import { check, pair, readerNames } from '../api.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { say, sameDestination } from '../terminal.js';
import { checkInput, reading, displayName, sourceOf, isStream, streamName, fileStamp } from '../user-files.js';
import { UsageError, parseArgs, refuseIdle, readerArg, meant } from './args.js';
import { Failure, layoutArg, readNames, openFile, folderArgs, givesKind, giveKind, modelFacts, roleOf, warnStillWriting } from './inputs.js';
import { errorLines, pairLines, loadLine, everyReaderLines, invalidPairLines } from './text.js';

export async function cmdCheck(argv) {
  const { positional, seen } = parseArgs('check', argv);
  refuseIdle('check', seen, '--kind', seen['--expect'] === undefined, 'the kind is a PyTorch optimizer\'s, checked with its model (OPT --state MODEL, or a checkpoint folder)');
  const kind = await folderArgs(positional, seen, 'check');
  // a PyTorch file that holds its model too (Lightning, {'model', 'optimizer'}) pairs with it
  if (positional.length === 1 && !seen['--expect'] && !seen['--state'] && (await modelFacts(positional[0])).holdsBoth) return checkPair(positional[0], positional[0], seen['--names'], kind);
  if (positional.length !== 1 || (!seen['--expect'] === !seen['--state'])) throw new UsageError(`check takes FILE --expect LAYOUT, or OPT --state STATE${await checkOrder(positional, seen)}`, 'check');
  const reader = seen['--reader'];
  if (reader !== undefined && seen['--state'] !== undefined) throw new UsageError('--reader goes with --expect: a reader loads into a layout', 'check');
  if (reader !== undefined && reader !== 'all') await readerArg('--reader', reader, ', or all');
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
      const verdicts = await checkEveryReader(file, layout);
      say(process.stdout, everyReaderLines(displayName(file), expect, verdicts));
      return verdicts.every((v) => v.loads) ? 0 : 1;
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
    say(process.stdout, loadLine(displayName(file), expect, false), why);
    if (!sameDestination()) say(process.stderr, why);
    await warnStillWriting(file, stamp, err.code);
    return 1;
  }
  for (const w of result.warnings) say(process.stderr, `warning: ${w}`);
  say(process.stdout, loadLine(displayName(file), expect, true));
  return 0;
}

/**
 * check FILE --expect LAYOUT --reader all: every TorchLean reader's verdict, [{reader, loads,
 * warnings, message}] in the core's order. A layout that is itself at fault is thrown, as for
 * one reader.
 */
async function checkEveryReader(file, layout) {
  const verdicts = [];
  for (const reader of await readerNames()) {
    try {
      const result = await reading(file, 'checkpoint', () => check(sourceOf(file), layout, { reader }));
      verdicts.push({ reader, loads: true, warnings: result.warnings, message: null });
    } catch (err) {
      if (!(err instanceof CheckpointError) || err.subject === 'expected') throw err;
      verdicts.push({ reader, loads: false, warnings: [], message: err.message });
    }
  }
  return verdicts;
}

/** check OPT --state STATE: the pairing verdict (docs/format.md 6), every failure listed. */
async function checkPair(opt, state, namesPath, kind = { kind: null, fallback: null }) {
  if (isStream(state)) throw new UsageError(`check --state needs a file: ${streamName(state)} works for OPT only`);
  checkInput(opt, 'checkpoint');
  checkInput(state, 'checkpoint');
  let result;
  const names = readNames(namesPath, null);   // they also order a state file that keeps no module order
  // with a kind: the optimizer opened here, to be given it before the pairing
  const optimizer = givesKind(kind) ? await openFile(opt, 'checkpoint') : null;
  try {
    if (optimizer) await giveKind(optimizer, kind, opt);
    result = await reading(state, 'checkpoint', () => pair(optimizer ?? sourceOf(opt), state, { names }));
  } catch (err) {
    if (!(err instanceof CheckpointError) || !err.result) throw err;
    const invalid = err.result.invalid;
    if (invalid) {
      // An invalid file never pairs: its own diagnostic first, then the verdict.
      const { why, verdict } = invalidPairLines(err, displayName(opt), state, invalid === 'state' ? state : displayName(opt));
      say(process.stdout, why, verdict);
      if (!sameDestination()) say(process.stderr, why);
      return 1;
    }
    // Not a verdict: the files cannot be paired at all (the wrong roles: swapped?).
    throw new Failure(`cannot pair ${displayName(opt)} with ${state}: ${err.message}${await pairOrder(opt, state)}`);
  } finally {
    optimizer?.close();
  }
  say(process.stdout, pairLines(result, displayName(opt), state, names));
  if (!result.pairs && !sameDestination()) say(process.stderr, result.error.message);
  return result.pairs ? 0 : 1;
}

/** check A B (no --expect, no --state): the command line meant, from what A and B are. */
async function checkOrder(positional, seen) {
  if (positional.length !== 2 || seen['--expect'] !== undefined || seen['--state'] !== undefined) return '';
  const [a, b] = positional;
  const [ka, kb] = [await roleOf(a), await roleOf(b)];
  if (ka === 'state' && kb === 'optimizer') return meant('check', b, '--state', a);
  if (ka === 'optimizer' && kb === 'state') return meant('check', a, '--state', b);
  return meant('check', a, '--expect', b);
}

/** check STATE --state OPT: the two given the other way round. */
async function pairOrder(opt, state) {
  if (isStream(opt)) return '';
  const [ko, ks] = [await roleOf(opt), await roleOf(state)];
  return ko === 'state' && ks === 'optimizer' ? meant('check', state, '--state', opt) : '';
}
