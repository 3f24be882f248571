// ckptscope check: FILE --expect LAYOUT [--reader NAME|all] (would the trainer load it?), OPT
// --state STATE (the pairing verdict), or FILE alone for a PyTorch file holding its optimizer and
// its model (docs/cli.md "check"). Exit status 0 loads or pairs, 1 not, 3 the files cannot tell
// whether they pair.

import { check, pair, readerNames } from '../api.js';
import { open } from '../checkpoint.js';
import { CheckpointError, LayoutError } from '../errors.js';
import { say, sameDestination } from '../terminal.js';
import { checkInput, reading, displayName, sourceOf, isStream, streamName, fileStamp } from '../user-files.js';
import { UsageError, parseArgs, refuseIdle, readerArg, meant, frozenArg, worldSizeArg } from './args.js';
import { Failure, layoutArg, readNames, openFile, openInput, folderArgs, givesKind, giveKind, modelFacts, roleOf, warnStillWriting, trainedModelOf } from './inputs.js';
import { dcpErrors } from './dcp-text.js';
import { errorLines, pairLines, pairStatus, loadLine, everyReaderLines, invalidPairLines, deepspeedPairLines } from './text.js';

export async function cmdCheck(argv) {
  const { positional, seen } = parseArgs('check', argv);
  refuseIdle('check', seen, '--kind', seen['--expect'] === undefined, 'the kind is that of an optimizer whose files do not say it: a PyTorch optimizer checked with its model (OPT --state MODEL, or a checkpoint folder), a DeepSpeed or DCP folder');
  refuseIdle('check', seen, '--frozen', seen['--expect'] === undefined, 'it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model (OPT --state MODEL)');
  const kind = await folderArgs(positional, seen, 'check');
  const frozen = frozenArg(seen, 'check');
  if (kind.deepspeed) {
    if (seen['--state'] !== undefined || seen['--names'] !== undefined) return checkDeepSpeedPair(positional[0], seen['--state'], seen['--names'], worldSizeArg(seen), undefined, kind);
    if (seen['--world-size'] !== undefined) throw new UsageError('--world-size goes with the model the checkpoint will be loaded into: --state MODEL or --names NAMES.json', 'check');
    return checkDeepSpeed(positional[0], kind);
  }
  refuseIdle('check', seen, '--world-size', false, 'it is the world size a DeepSpeed checkpoint will be loaded on (TAGDIR --state MODEL)');
  if (kind.dcp) {
    // the model it will be loaded into, compared by name (docs/distributed.md "Pairing with a model")
    if (seen['--state'] !== undefined || seen['--names'] !== undefined) return checkDeepSpeedPair(positional[0], seen['--state'], seen['--names'], undefined, frozen, kind);
    return checkDcp(positional[0], kind);
  }
  // a PyTorch file that holds its model too (Lightning, {'model', 'optimizer'}) pairs with it
  if (positional.length === 1 && !seen['--expect'] && !seen['--state'] && (await modelFacts(positional[0])).holdsBoth) return checkPair(positional[0], positional[0], seen['--names'], kind, frozen, true);
  if (positional.length !== 1 || (!seen['--expect'] === !seen['--state'])) throw new UsageError(`check takes FILE --expect LAYOUT, or OPT --state STATE${await checkOrder(positional, seen)}`, 'check');
  const reader = seen['--reader'];
  if (reader !== undefined && seen['--state'] !== undefined) throw new UsageError('--reader goes with --expect: a reader loads into a layout', 'check');
  if (reader !== undefined && reader !== 'all') await readerArg('--reader', reader, ', or all');
  if (seen['--state'] !== undefined) return checkPair(positional[0], seen['--state'], seen['--names'], kind, frozen);
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

/** check DIR for a DeepSpeed checkpoint: the checks of format.md 11.5, every failure listed (the
 *  first is the verdict), the warnings on stderr; exit status 1 on an error. */
async function checkDeepSpeed(dir, kind) {
  const ck = await reading(dir, 'checkpoint', () => open(dir));
  try {
    if (ck.ok) await giveKind(ck, kind, dir);   // --kind: checked against ds_config's
    const r = ck.report;
    for (const w of r.warnings) say(process.stderr, `warning: ${w}`);
    const what = r.deepspeed?.kind ? `a DeepSpeed ${r.deepspeed.kind} checkpoint` : 'a DeepSpeed checkpoint';
    if (r.ok) {
      say(process.stdout, `${displayName(dir)}: ${what} that passes every check`);
      return 0;
    }
    const failures = r.deepspeed?.failures?.length ? r.deepspeed.failures : [r.error];
    say(process.stdout, `${displayName(dir)}: ${what} that fails ${failures.length === 1 ? 'a check' : `${failures.length} checks`}`, ...failures.map((f) => f.message));
    if (!sameDestination()) say(process.stderr, r.error.message);
    return 1;
  } finally {
    ck.close();
  }
}

/** check DIR for a distributed checkpoint (DCP): the checks of docs/distributed.md, every
 *  failure listed in the core's order (the first is the verdict), the warnings on stderr; exit
 *  status 1 on an error. */
async function checkDcp(dir, kind) {
  const ck = await reading(dir, 'checkpoint', () => open(dir));
  try {
    if (ck.ok) await giveKind(ck, kind, dir);   // --kind: refused where the folder holds no optimizer or says another kind
    const r = ck.report;
    for (const w of r.warnings) say(process.stderr, `warning: ${w}`);
    if (r.ok) {
      say(process.stdout, `${displayName(dir)}: a distributed checkpoint (DCP) that passes every check`);
      return 0;
    }
    const errors = dcpErrors(r);
    const failures = errors.length ? errors.map((g) => g.text) : [r.error.message];
    say(process.stdout, `${displayName(dir)}: a distributed checkpoint (DCP) that fails ${failures.length === 1 ? 'a check' : `${failures.length} checks`}`, ...failures);
    if (!sameDestination()) say(process.stderr, r.error.message);
    return 1;
  } finally {
    ck.close();
  }
}

/** check TAGDIR --state MODEL | --names NAMES.json [--world-size N]: does DeepSpeed pair the
 *  checkpoint with the model it will be loaded into as it was trained (format.md 11.6)? Every
 *  failure listed, the first the verdict; exit status 0 pairs, 1 not. A DCP folder (DIR --state
 *  MODEL | --names NAMES.json [--frozen NAMES]) pairs the same way, by its own rule (12.8). */
async function checkDeepSpeedPair(dir, model, namesPath, worldSize, frozen = undefined, kind = { kind: null, fallback: null }) {
  if (model !== undefined) {
    if (isStream(model)) throw new UsageError(`check --state needs a file: ${streamName(model)} works for OPT only`);
    checkInput(model, 'checkpoint');
  }
  const names = namesPath === undefined ? null : readNames(namesPath, null);
  const label = model ?? namesPath;
  let result;
  // with a kind: the folder opened here, given it before the pairing
  const optimizer = givesKind(kind) ? await openInput(dir, 'checkpoint', kind) : null;
  try {
    if (optimizer?.ok) await giveKind(optimizer, kind, dir);
    result = await reading(model ?? dir, 'checkpoint', () => pair(optimizer ?? dir, model ?? null, { names, worldSize, frozen }));
  } catch (err) {
    if (!(err instanceof CheckpointError) || !err.result) throw err;
    if (err.result.invalid) {
      const bad = err.result.invalid === 'state' ? label : displayName(dir);
      const { why, verdict } = invalidPairLines(err, displayName(dir), label, bad);
      say(process.stdout, why, verdict);
      if (!sameDestination()) say(process.stderr, why);
      return 1;
    }
    throw new Failure(`cannot pair ${displayName(dir)} with ${label}: ${err.message}`);
  } finally {
    optimizer?.close();
  }
  say(process.stdout, deepspeedPairLines(result, displayName(dir), label));
  return pairStatus(result);
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

/** check OPT --state STATE: the pairing verdict (docs/format.md 6, 10.4), every failure listed;
 *  `alone`: OPT holds its model (STATE is OPT). The verdict is a result: stdout only. */
async function checkPair(opt, state, namesPath, kind = { kind: null, fallback: null }, frozen = undefined, alone = false) {
  if (isStream(state)) throw new UsageError(`check --state needs a file: ${streamName(state)} works for OPT only`);
  checkInput(opt, 'checkpoint');
  checkInput(state, 'checkpoint');
  let result;
  const names = readNames(namesPath, null);   // they also order a state file that keeps no module order
  // an optimizer.pt in its Trainer folder: the model saved beside it is compared with STATE first
  const trained = alone ? {} : { modelLabel: state, ...(await trainedModelOf(opt, state)) };
  // with a kind: the optimizer opened here, to be given it before the pairing
  const optimizer = givesKind(kind) ? await openFile(opt, 'checkpoint') : null;
  try {
    if (optimizer) await giveKind(optimizer, kind, opt);
    result = await reading(state, 'checkpoint', () => pair(optimizer ?? sourceOf(opt), state, { names, frozen, ...trained }));
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
    // Not a verdict: the files cannot be paired at all (the wrong roles: swapped?), or an
    // option refused (a --frozen name the model does not have).
    throw new Failure(`cannot pair ${displayName(opt)} with ${state}: ${err.message}${await pairOrder(opt, state)}`);
  } finally {
    optimizer?.close();
  }
  say(process.stdout, pairLines(result, displayName(opt), state, names, { alone }));
  return pairStatus(result);
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
