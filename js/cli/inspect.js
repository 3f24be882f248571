// ckptscope inspect FILE [--state MODEL] [--json] [--stats] [--names NAMES.json] [--workers N]
// [--kind K]: the summary or the JSON report; with a model (or the one the file holds) the pair's
// slots and its verdict (docs/cli.md "inspect").

import fs from 'node:fs';
import { open } from '../checkpoint.js';
import { pair } from '../api.js';
import { CheckpointError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { openWithStats, workerCount } from '../parallel.js';
import { say, terminalJSON, sameDestination, writeStdout, outputColumns } from '../terminal.js';
import { checkInput, reading, displayName, sourceOf, isStream, fileStamp } from '../user-files.js';
import { UsageError, parseArgs, refuseIdle, workersArg, frozenArg } from './args.js';
import { Failure, readNames, folderArgs, giveKind, warnStillWriting, trainedModelOf, refuseUnreadStream } from './inputs.js';
import { summaryLines, loadsInLine, inspectPairLines, unpairedLine, pairStatus } from './text.js';
import { accelerateLines } from './accelerate-text.js';
import { accelerateJson } from '../accelerate-folder.js';
import { dcpAlone } from '../dcp.js';

/** The longest report inspect --json indents (its indented form is several times longer). */
const REPORT_INDENT_LIMIT = 4 << 20;

export async function cmdInspect(argv) {
  const { positional, seen } = parseArgs('inspect', argv);
  if (positional.length !== 1) throw new UsageError('inspect takes one FILE', 'inspect');
  const kind = await folderArgs(positional, seen, 'inspect');
  const frozen = frozenArg(seen, 'inspect');
  refuseIdle('inspect', seen, '--workers', seen['--stats'], 'workers read the payloads, which only --stats reads');
  const file = positional[0];
  const stats = !!seen['--stats'];
  const workers = workersArg(seen);
  // Statistics of a real file by several workers; a pipe is read once, in order.
  // a folder's statistics (DeepSpeed, DCP) come with its open, from its fragments (one thread)
  const n = stats && !isStream(file) && seen['--state'] === undefined && !kind.whole ? await workerCount(workers, [file]) : 1;
  const parallel = n > 1;
  if (!kind.whole) checkInput(file, 'checkpoint');
  const stamp = fileStamp(file);   // a file still being written is named as such
  // Every thread reads this one open file (a file renamed over the path mid-run changes nothing).
  const source = parallel ? reading(file, 'checkpoint', () => fs.openSync(file, 'r')) : sourceOf(file);
  let ck;
  try {
    // with workers: they start (and open the file) while this thread parses it
    const openFile = (src, options) => reading(file, 'checkpoint', () => open(src, options));
    ck = parallel ? await openWithStats(source, n, { openFile }) : await refuseUnreadStream(await openFile(source, { stats }), file);
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
      const alone = modelPath === file;
      const trained = alone ? {} : { modelLabel: modelPath, ...(await trainedModelOf(file, modelPath)) };
      pairing = await pairForInspect(ck, model, file, modelPath, readNames(seen['--names'], null), { frozen, ...trained }, alone);
    } else if (frozen !== undefined) {
      throw new UsageError('--frozen does nothing here: it names what a PyTorch optimizer\'s training code does not train, for its pairing with its model (--state MODEL)', 'inspect');
    }
    const summary = ck.summary;
    const slots = summary.kind === 'state' ? summary.tensorCount : summary.slotCount;
    // an Accelerate folder: its reading as the report's `accelerate` member, or lines first
    const accelerate = kind.accelerate ? { accelerate: accelerateJson(kind.accelerate, kind.pair) } : {};
    if (kind.accelerate && !seen['--json']) say(process.stdout, accelerateLines(kind.accelerate, kind.pair));
    if (seen['--json'] && pairing) {
      // the pair's names are the report's own (the core's `names`)
      writeStdout(terminalJSON({ ...JSON.parse(ck.reportText()), pair: pairing.result, ...accelerate }, 2) + '\n');
    } else if (seen['--json']) {
      // --names become the report's `names`, after the core's members
      const names = readNames(seen['--names'], slots, () => ck.report.schema?.effectiveRepresentatives ?? null);
      // Indented for people; past 10,000 slots, or a report of more than REPORT_INDENT_LIMIT
      // characters (a slot of rank 2^26), streamed from the core as one line: a million slots
      // never become one string, nor does an indented copy pass the longest string there is.
      const text = (slots ?? 0) > 10_000 ? null : ck.reportText();
      if (text === null || text.length > REPORT_INDENT_LIMIT) {
        const write = names ? withNamesMember(writeStdout, names) : writeStdout;
        ck.writeReport(write);
        write.end?.();
      } else writeStdout(terminalJSON({ ...JSON.parse(text), ...(names ? { names } : {}), ...accelerate }, 2) + '\n');
    } else {
      const names = readNames(seen['--names'], slots, () => ck.report.schema?.effectiveRepresentatives ?? null) ?? summary.pairing?.slots ?? null;
      say(process.stdout, summaryLines(ck.report, displayName(file), names, { width: outputColumns(process.stdout) }));
      if (ck.readers) say(process.stdout, loadsInLine(ck.readers));
      if (pairing) say(process.stdout, pairing.lines);
    }
    // The reference diagnostic also goes to stderr, for scripts and logs; not when stderr is
    // where stdout goes (a terminal, 2>&1), where the summary or JSON already shows it. A pair's
    // verdict is a result, on stdout only.
    if (!summary.ok && !sameDestination()) say(process.stderr, summary.error.message);
    await warnStillWriting(file, stamp, summary.ok ? null : summary.error.code);
    if (!summary.ok) return 1;
    // a DCP data file or index alone: not an all-clear (its note says to open the folder)
    if (dcpAlone(ck.report)) return 3;
    return pairing ? (pairing.unpaired ? 1 : pairStatus(pairing.result)) : 0;
  } finally {
    model?.close();
    ck.close();
    if (parallel) fs.closeSync(source);
  }
}

/** A writer of the core's one-line report that adds `"names": [...]` as its last member: the
 *  report's closing brace (its last text but the newline) is held back until the end. */
function withNamesMember(write, names) {
  const end = Buffer.from(`,"names":${terminalJSON(names)}}\n`);
  let held = Buffer.alloc(0);
  const writer = (bytes) => {
    const all = Buffer.concat([held, Buffer.from(bytes)]);
    held = all.subarray(Math.max(0, all.length - 2));
    if (all.length > 2) write(all.subarray(0, all.length - 2));
  };
  writer.end = () => write(end);
  return writer;
}

/** inspect OPT --state MODEL: the pair's verdict as check --state gives it, in lines. */
async function pairForInspect(ck, model, file, modelPath, names, options, alone) {
  let result;
  try {
    result = await pair(ck, model, { names, ...options });
  } catch (err) {
    if (!(err instanceof CheckpointError) || !err.result) throw err;
    // a --frozen name the model does not have: the command line's to fix
    if (err.code === (await loadBinding()).codes.INVALID_ARGUMENT) throw new Failure(`cannot pair ${displayName(file)} with ${modelPath}: ${err.message}`);
    // an invalid file, or files in the wrong roles: said below the summary
    return { result: err.result, lines: [unpairedLine(displayName(file), modelPath, err.message)], unpaired: true };
  }
  return { result, lines: inspectPairLines(result, displayName(file), modelPath, names, { alone }) };
}
