// ckptscope health OPT [--state STATE] [--lr X] [--ratio-band LO,HI] [--strict] [--json]: the next
// Adam step per slot (docs/health.md). Exit status 0 healthy, 1 a slot flagged (the ratio band's
// flags are warnings unless --strict).

import { health } from '../api.js';
import { CheckpointError } from '../errors.js';
import { say, terminalJSON, writeStdout, outputColumns } from '../terminal.js';
import { checkInput, reading, displayName, isStream, streamName } from '../user-files.js';
import { UsageError, parseArgs, refuseIdle, positiveArg, ratioBandArg, workersArg, meant, frozenArg } from './args.js';
import { Failure, readNames, openInput, folderArgs, givesKind, giveKind, modelFacts, roleOf, trainedModelOf } from './inputs.js';
import { errorLines, healthLines, isWarningFlag, pairLines, HEALTH_SORTS } from './text.js';
import { shown } from '../suggest.js';
import { loadBinding } from '../binding.js';

export async function cmdHealth(argv) {
  const { positional, seen } = parseArgs('health', argv);
  if (positional.length !== 1) throw new UsageError(`health takes one OPT [--state STATE] [--lr X]${await healthOrder(positional, seen)}`, 'health');
  const kind = await folderArgs(positional, seen, 'health');
  const [opt] = positional;
  const state = seen['--state'];
  const strict = !!seen['--strict'];
  for (const f of [opt, state]) if (f !== undefined && isStream(f)) throw new UsageError(`health needs files: ${streamName(f)} cannot be read twice over`);
  const lr = positiveArg('--lr', seen['--lr'], (text) => new UsageError(text, 'health'));
  const sort = seen['--sort'];
  if (sort !== undefined && !HEALTH_SORTS.includes(sort)) throw new UsageError(`--sort takes ${HEALTH_SORTS.join(', ')}, got ${shown(sort)}`, 'health');
  refuseIdle('health', seen, '--sort', !seen['--json'], 'it orders the table; the JSON keeps slot order');
  // one rule for both: the ratios need --lr and --state (lr · rms(u) / rms(θ))
  // a PyTorch file holding its model has its parameters (and its groups' lr) with it
  // a DeepSpeed folder holds its parameters too (the fp32 master weights), a DCP folder its
  // model part
  const facts = kind.whole ? { needsModel: false, holdsBoth: false } : await modelFacts(opt);
  const withParams = state !== undefined || facts.holdsBoth || !!kind.whole;
  refuseIdle('health', seen, '--lr', withParams, 'the ratios need --lr and --state (lr · rms(u) / rms(θ))');
  refuseIdle('health', seen, '--ratio-band', (seen['--lr'] !== undefined || facts.needsModel) && withParams, 'the ratios need --lr and --state (lr · rms(u) / rms(θ))');
  const band = await ratioBandArg(seen['--ratio-band'], (text) => new UsageError(text, 'health'));
  refuseIdle('health', seen, '--frozen', facts.needsModel && withParams, 'it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model (--state MODEL)');
  const frozen = frozenArg(seen, 'health');
  if (!kind.whole) checkInput(opt, 'checkpoint');
  if (state !== undefined) checkInput(state, 'checkpoint');
  let result;
  // with a kind: the optimizer opened here, given it before health pairs it with its model
  const optimizer = givesKind(kind) ? await openInput(opt, 'checkpoint', kind) : null;
  try {
    if (optimizer) await giveKind(optimizer, kind, opt);
    const model = state ?? (optimizer && facts.holdsBoth ? opt : null);
    const trained = state === undefined ? {} : { modelLabel: state, ...(await trainedModelOf(opt, state)) };
    result = await reading(opt, 'checkpoint', () => health(optimizer ?? opt, model, { lr, ratioBand: band, workers: kind.whole ? 1 : workersArg(seen), frozen, ...trained }));
  } catch (err) {
    // a DCP folder whose state health cannot read (the core says why): which folder
    if (err instanceof CheckpointError && kind.dcp && !err.context && !err.fileError && !err.result) throw new CheckpointError(err, { context: `cannot compute the health of ${displayName(opt)}` });
    if (err instanceof CheckpointError && err.fileError) {
      throw new CheckpointError(err.fileError, { context: err.message });
    }
    // the optimizer does not pair with its model: the verdict as check gives it
    if (err instanceof CheckpointError && err.result?.failures?.length) {
      say(process.stdout, pairLines(err.result, displayName(opt), state ?? displayName(opt), null, { alone: state === undefined }));
      return 1;
    }
    if (err instanceof CheckpointError && err.code === (await loadBinding()).codes.INVALID_ARGUMENT && frozen !== undefined) throw new Failure(`cannot pair ${displayName(opt)} with ${state ?? 'its model'}: ${err.message}`);
    throw err;
  } finally {
    optimizer?.close();
  }
  // --names name the slots (the JSON's slots[].name), else a PyTorch pair's model does
  const names = readNames(seen['--names'], result.slots.length);
  if (names) {
    result.names = names;
    for (const s of result.slots) s.name = names[s.slot] ?? null;
  }
  if (seen['--json']) writeStdout(terminalJSON(result, 2) + '\n');
  else say(process.stdout, healthLines(result, displayName(opt), state, result.names ?? null, { strict, width: outputColumns(process.stdout), sort: sort ?? null }));
  if (!result.ok) {
    say(process.stderr, errorLines(result.error));
    return 1;
  }
  // The core says which flags are warnings (the ratio band, a heuristic): --strict makes them failures.
  return result.flags.some((f) => strict || !isWarningFlag(f)) ? 1 : 0;
}

/** health A B: the optimizer checkpoint first, the model-state file after --state. */
async function healthOrder(positional, seen) {
  if (positional.length !== 2 || seen['--state'] !== undefined) return '';
  const [a, b] = positional;
  const [opt, state] = (await roleOf(a)) === 'state' ? [b, a] : [a, b];
  return meant('health', opt, '--state', state, ...(seen['--lr'] !== undefined ? ['--lr', seen['--lr']] : []));
}
