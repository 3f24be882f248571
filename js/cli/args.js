// The CLI's arguments: one spec per command (its usage lines, flags, options with their help),
// the one parser that reads every command's argv by it (a misspelt option or command refused
// with the nearest known one, js/suggest.js), and the validators of the values options take.
// The words a value may be (the versions convert writes, the optimizer kinds, export's formats
// and their extensions) are the core's, from its description: js/cli/main.js loads the core
// before a command line is read.

import { nearest, didYouMean, shown, PATH_ECHO_MAX } from '../suggest.js';
import { wrapLine } from '../terminal.js';
import { abi } from '../binding.js';
import { readerNames } from '../api.js';
import { ratioBand, decimalNumber, positiveNumber, kindNames, optimizerKind, convertVersions, listed } from '../options.js';

/** What the core's description says the options take, as the texts show them. */
function facts() {
  const versions = convertVersions();
  return {
    versions,
    kind: kindNames().join('|'),
    to: versionTargets().join('|'),
    outs: exportOutputs({ bar: true }),
  };
}

// 80 columns (docs/cli.md "Columns"): what each command does on the lines below it, indented 6;
// usageOf takes a command's lines with every indented line after them.
function usageText({ kind, to, outs }) {
  return `usage:
  ckptscope inspect FILE [--state MODEL] [--json] [--stats] [--names NAMES.json]
                    [--workers N] [--kind ${kind}] [--frozen NAMES]
      summary, or the JSON report: TorchLean's, PyTorch's and safetensors files;
      FILE (OPT) may be a Trainer checkpoint-N/ folder: its optimizer and model
  ckptscope check FILE --expect LAYOUT [--reader NAME|all] [--names NAMES.json]
      would the trainer load it? LAYOUT: a layout .json or another file;
      NAME: the TorchLean reader (v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5)
  ckptscope check OPT --state STATE [--names NAMES.json] [--kind ${kind}]
                  [--frozen NAMES]
      same slots, shapes and ties as this model-state file? (structural)
  ckptscope check FILE [--kind ${kind}] [--frozen NAMES]
      a PyTorch file holding its optimizer and its model (or a checkpoint-N/
      folder): do they pair?
  ckptscope check TAGDIR [--state MODEL] [--names NAMES.json] [--world-size N]
      a DeepSpeed checkpoint's checks; with the model it will be loaded into:
      does DeepSpeed pair them as they were trained? (a DCP folder: by name)
  ckptscope diff A B [--names NAMES.json] [--state MODEL [MODEL_B]]
      every difference between two layouts/checkpoints (steps, counter, moments)
  ckptscope health OPT [--state STATE] [--lr X] [--ratio-band LO,HI]
                   [--strict] [--json] [--names NAMES.json] [--workers N]
                   [--kind ${kind}] [--sort ratio|rms|name] [--frozen NAMES]
      the next Adam step per slot: update/weight ratios, consistency
  ckptscope export FILE ${outs} [--state MODEL]
                   [--names NAMES.json] [--kind ${kind}] [--frozen NAMES]
      moments (or state tensors) for NumPy/PyTorch, bit for bit
  ckptscope write DESCRIPTION.json OUT
      make a checkpoint or a model-state file (the reference writers' rules)
  ckptscope convert IN OUT --to ${to} | --for READER
                   [--random-counter N] [--drop-random-counter] [--untie]
                   [--round-to-float32]
      the same optimizer state as another version, for an older TorchLean
  ckptscope convert IN OUT.pt|OUT.pth|OUT.bin --lr X [--state STATE]
      the optimizer state as a torch.save file, for PyTorch's Adam/AdamW
  ckptscope convert DIR OUT_DIR --to universal
      a DeepSpeed ZeRO-1/2 folder as a universal checkpoint (ds_to_universal's)
  ckptscope convert optimizer.pt OUT_DIR --to dcp --state MODEL [--torch 1.13]
      a PyTorch optimizer and its model as a DCP folder, for dcp.load
  ckptscope convert optimizer.pt OUT --state MODEL [--to V] [--kind ${kind}]
                   [--weight-decay X] [--betas B1,B2] [--eps X] [--drop-amsgrad]
                   [--frozen NAMES]
      a PyTorch optimizer's state as a TLADAMF file, on its model's slots;
      optimizer.pt may be a checkpoint-N/ folder (its optimizer and model)
  ckptscope convert optimizer.pt OUT.pt --state MODEL --to ids
                   [--group-order stored] [--names NAMES.json]
      a name-keyed PyTorch optimizer (FSDP's) as a torch.optim state dict
      keyed by ids, numbered in its model's module order
  ckptscope convert DIR OPTIMIZER.pt --model MODEL.pt|MODEL.safetensors
      a DeepSpeed checkpoint as a torch.optim state dict and its fp32 model
  ckptscope convert DIR OUT [--to V] [--kind ${kind}] [--weight-decay X] ...
      a DeepSpeed or DCP checkpoint as a TLADAMF file, through its consolidated
      pair (never written)
  ckptscope run A B [C ...] [--state SA SB ...] [--lr X] [--ratio-band LO,HI]
               [--residual-limit X] [--names NAMES.json] [--slots] [--json]
  ckptscope run DIR [--lr X] [--ratio-band LO,HI] [--residual-limit X]
               [--names NAMES.json] [--slots] [--json] [--kind ${kind}]
      checkpoints of one run: is each the continuation of the one before?
      the gradient and learning rate of one-step pairs; DIR: TorchLean files,
      a Trainer output folder of checkpoint-N/ folders, a DeepSpeed save_dir
      or a folder of DCP folders; A B ...: files, checkpoint-N/ folders,
      DeepSpeed tag folders or DCP folders
  ckptscope run A B --grad ${outs} [--names NAMES.json]
      the gradient of B's step as {name}.grad tensors
  ckptscope serve [--port N]
      the viewer on http://127.0.0.1:8080
  ckptscope view FILE [FILE2 ...] [NAMES.json] [--port N] [--no-open]
      the viewer on those files, in your browser; FILE may be a checkpoint-N/
      folder or a Trainer output folder
  ckptscope --version`;
}

const NAMES_HELP = 'slot names: a JSON array of strings, one per slot';
const WORKERS_HELP = 'threads that read the payloads (1 to 64; default: what pays for the files\' size, docs/cli.md)';
const kindHelp = (kind) => `${kind}  a PyTorch optimizer's kind, when its file does not say it (torch 1.13's AdamW does not); a Trainer folder's default: its training_args.bin's optim`;
const PAIR_HELP = 'I  an Accelerate save_state folder: its optimizer_I with model_I (default 0)';
const PORT_HELP = 'the port (0 to 65535); else PORT, else';
const FROZEN_HELP = 'NAMES  NAME[,NAME...]: the model\'s tensors a PyTorch optimizer\'s training code does not train (frozen parameters, or buffers): no index goes to them, and their missing state is no question';

/** Per command: flags (no value), options (a value) and a line of help for each; `gathers`: the
 *  options that take every file after them (run's --state SA SB ...). */
function specsOf({ kind, versions }) {
  const KIND_HELP = kindHelp(kind);
  return {
    inspect: {
      flags: { '--json': 'the JSON report (docs/report.md) instead of the summary', '--stats': 'read the payloads: min, max, rms, NaN and inf per moment or tensor' },
      options: { '--state': 'MODEL  an optimizer\'s model: the pair\'s slots and its verdict (a PyTorch file holding its model needs none)', '--names': `NAMES.json  ${NAMES_HELP}`, '--workers': `N  with --stats: ${WORKERS_HELP}`, '--kind': KIND_HELP, '--frozen': FROZEN_HELP, '--pair': PAIR_HELP },
    },
    check: {
      flags: {},
      options: { '--expect': 'LAYOUT  a layout .json, a report, or another checkpoint: would FILE load into it?', '--state': 'STATE  a model-state file: same slots, shapes and ties as OPT? (structural: the values are not compared)', '--reader': 'NAME  with --expect: the TorchLean reader that loads (v2, v2-lists, v2-v3, v2-v4, v2-v4-f32, v2-v5; default v2-v5), or all: a verdict per reader', '--names': `NAMES.json  ${NAMES_HELP}`, '--kind': KIND_HELP, '--frozen': FROZEN_HELP, '--world-size': 'N  a DeepSpeed checkpoint: the data-parallel world size it will be loaded on', '--pair': PAIR_HELP },
    },
    diff: { gathers: ['--state'], flags: {}, options: { '--names': `NAMES.json  ${NAMES_HELP}`, '--state': 'MODEL [MODEL_B]  PyTorch optimizers\' model (one for both, or A\'s then B\'s): their slots come from it' } },
    health: {
      flags: { '--json': 'the health JSON (docs/health.md) instead of the table', '--strict': 'ratio flags (ratioHigh, ratioLow) fail too (exit 1); without it they are warnings' },
      options: { '--state': 'STATE  the model-state file: parameters for the update/weight ratio', '--lr': 'X  the learning rate (the checkpoint does not store it)', '--ratio-band': 'LO,HI  with --lr and --state: the update/weight ratios outside it are flagged (default 1e-5,1e-2)', '--names': `NAMES.json  ${NAMES_HELP}`, '--workers': `N  ${WORKERS_HELP}`, '--kind': KIND_HELP, '--sort': 'KEY  the table\'s order: ratio or rms, the largest update/weight ratio or rms(u) first; name, by name (default: slot order)', '--frozen': FROZEN_HELP, '--pair': PAIR_HELP },
    },
    export: { flags: {}, options: { '--state': 'MODEL  a PyTorch optimizer\'s model: its slots, and their names', '--names': `NAMES.json  ${NAMES_HELP}; else the model's names, else slot0, slot1, ...`, '--kind': KIND_HELP, '--frozen': FROZEN_HELP, '--pair': PAIR_HELP } },
    write: { flags: {}, options: {}, more: 'DESCRIPTION.json: docs/layout.md#descriptions-for-write' },
    convert: {
      flags: { '--drop-amsgrad': 'a PyTorch IN with amsgrad: max_exp_avg_sq is left out (TorchLean\'s Adam keeps two moments)', '--drop-random-counter': 'write a version without a random counter, dropping it (stochastic training cannot resume exactly)', '--untie': 'every alias its own owner, with a copy of its owner\'s moments (for a reader without ties)', '--round-to-float32': 'float64 moments rounded to float32 (the largest relative error is reported)' },
      options: { '--to': `V  the version to write: ${versions.join(', ')}, or oldest (the lowest that loses nothing); universal, with a DeepSpeed DIR: its universal checkpoint; dcp, with a PyTorch optimizer and --state MODEL: a DCP folder; ids, with a name-keyed PyTorch optimizer (FSDP) and OUT.pt: keyed by ids`, '--for': 'READER  the newest version that TorchLean reader reads, losing nothing', '--random-counter': 'N  supply a random counter for a file without one (to write version 4)', '--lr': 'X  with OUT.pt: the learning rate of the group (TorchLean does not store it)', '--state': 'STATE  with OUT.pt: the model-state file, paired first (as check --state); with a PyTorch IN: its model', '--kind': `${kind}  a PyTorch IN whose file does not say`, '--weight-decay': 'X  a PyTorch IN: one weight decay for every group', '--betas': 'B1,B2  a PyTorch IN: one pair of betas for every group', '--eps': 'X  a PyTorch IN: one epsilon for every group', '--names': 'NAMES.json  a PyTorch IN with a model.safetensors: the model\'s names in order', '--frozen': `${FROZEN_HELP}; they are frozen slots of OUT`, '--model': 'MODEL.pt|MODEL.safetensors  a DeepSpeed DIR with OPTIMIZER.pt: where its fp32 model is written; a DCP DIR: where its model part is written (MODEL.pt)', '--torch': 'VERSION  with --to dcp: 1.13 writes torch 1.13\'s form (default: torch >= 2.4\'s)', '--group-order': 'module|stored  with --to ids: each group\'s ids in module order (default) or in its stored list\'s order' },
    },
    run: {
      gathers: ['--state'],
      flags: { '--json': 'the run JSON (docs/runs.md) instead of the lines', '--slots': 'each pair\'s per-slot table under its line' },
      options: { '--state': 'SA SB ...  one model-state file per checkpoint, in the same order', '--lr': 'X  the learning rate, for the update/weight ratio of each file\'s health', '--ratio-band': 'LO,HI  with --lr and --state: the update/weight ratios outside it are flagged, as warnings (default 1e-5,1e-2)', '--residual-limit': 'X  with state files at k = 1: a learning-rate residual above it (and above θ\'s rounding) breaks the pair (default 0.1)', '--grad': `OUT  with two checkpoints one step apart: their gradient as {name}.grad tensors (${listed(abi().exportFormats.map((f) => f.extension))})`, '--names': `NAMES.json  ${NAMES_HELP} (and with --grad, the tensors' names)`, '--kind': KIND_HELP },
    },
    serve: { flags: {}, options: { '--port': `N  ${PORT_HELP} 8080` } },
    view: { flags: { '--no-open': 'print the URL, do not open a browser' }, options: { '--port': `N  ${PORT_HELP} the first free one from 8080 up` } },
  };
}


/** --help: the usage and how the CLI behaves in a shell. */
function helpText(usage) {
  return `${usage}

FILE (and write's DESCRIPTION) may be - for the standard input:
  ckptscope inspect - < model.ckpt
exit status: 0 valid, would load, no differences; 1 invalid, would not load,
differences; 2 usage or I/O error; 3 (run) nothing breaks, but a pair cannot
tell; (check, inspect) the files cannot tell whether an optimizer and its model
pair; 141 when the reader of stdout goes away (ckptscope inspect F | head).
An invalid file: stdout has the summary (or --json report) with the diagnostic;
stderr has the diagnostic too, unless stderr goes where stdout goes (a terminal,
2>&1), to show it once.
Control characters from files and arguments are shown as escapes (\\u001b).
Output fits 80 columns (a wider terminal: its width); a path or name longer
than a line gets a line of its own; --json is never wrapped.
serve and view: 127.0.0.1 only; the port is --port, else PORT, else 8080 (view:
the first free one from 8080 up); view prints the page URL and opens it unless
--no-open. Ctrl-C stops them (exit status 0).`;
}

let texts = null;   // built once the core is loaded: {usage, help, specs}

function built() {
  if (!texts) {
    const f = facts();
    const usage = usageText(f);
    texts = { usage, help: helpText(usage), specs: specsOf(f) };
  }
  return texts;
}

/** Every command's usage lines (a command line the CLI cannot read). */
export const usage = () => built().usage;

/** `ckptscope --help`. */
export const help = () => built().help;

/** The commands, in the usage's order. */
export const COMMANDS = ['inspect', 'check', 'diff', 'health', 'export', 'write', 'convert', 'run', 'serve', 'view'];

/** The usage lines of one command (its lines of USAGE, with their continuation lines). */
export function usageOf(command) {
  const lines = usage().split('\n').slice(1);
  const out = [];
  for (let k = 0; k < lines.length; k++) {
    if (!lines[k].startsWith(`  ckptscope ${command} `)) continue;
    out.push(lines[k]);
    while (lines[k + 1]?.startsWith('     ')) out.push(lines[++k]);
  }
  return `usage:\n${out.join('\n')}`;
}

/** `ckptscope CMD --help`: the command's usage, then each option with its help. */
export function helpOf(command) {
  const { flags, options, more } = built().specs[command];
  const rows = [...Object.entries(flags), ...Object.entries(options).map(([k, v]) => {
    const [arg, ...rest] = v.split('  ');
    return [`${k} ${arg}`, rest.join('  ')];
  })];
  const width = Math.max(0, ...rows.map(([k]) => k.length));
  // a long help wraps under its own column
  const hang = ' '.repeat(width + 4);
  const body = rows.length ? `\n\noptions:\n${rows.flatMap(([k, v]) => wrapLine(`  ${k.padEnd(width)}  ${v}`, undefined, hang)).join('\n')}` : '';
  return `${usageOf(command)}${body}${more ? `\n\n${more}` : ''}\n\nmore: docs/cli.md, or ckptscope --help for every command`;
}

export class UsageError extends Error {
  /** `command`: whose usage to show (null: all of it). */
  constructor(message, command = null) {
    super(message);
    this.command = command;
  }
}

/**
 * argv by a command's spec: flags, options (`--opt value` or `--opt=value`), positionals; an
 * option the spec `gathers` takes every positional after it (an array). An unknown option is
 * refused with the nearest known one, or the commands it belongs to; `seen.help` for -h / --help.
 */
export function parseArgs(command, argv) {
  const specs = built().specs;
  const { flags, options, gathers = [] } = specs[command];
  const positional = [];
  const seen = {};
  let into = positional;
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k];
    if (a === '-h' || a === '--help') {
      seen.help = true;
      continue;
    }
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const [name, value] = eq > 0 ? [a.slice(0, eq), a.slice(eq + 1)] : [a, undefined];
    if (Object.hasOwn(flags, name)) {
      if (value !== undefined) throw new UsageError(`${name} takes no value`, command);
      seen[name] = true;
    } else if (gathers.includes(name)) {
      into = seen[name] ??= [];
      if (value !== undefined) into.push(value);
    } else if (Object.hasOwn(options, name)) {
      if (value !== undefined) seen[name] = value;
      else if (k + 1 >= argv.length) throw new UsageError(`${name} needs a value`, command);
      else seen[name] = argv[++k];
    } else if (a.startsWith('--')) {
      const known = [...Object.keys(flags), ...Object.keys(options)];
      const near = nearest(name, known);
      const elsewhere = near ? null : COMMANDS.filter((c) => c !== command && (Object.hasOwn(specs[c].flags, name) || Object.hasOwn(specs[c].options, name)));
      throw new UsageError(`unknown option ${shown(name)}${near ? `: ${didYouMean(near)}` : elsewhere?.length ? ` for ${command} (it belongs to ${elsewhere.join(', ')})` : ''}`, command);
    } else into.push(a);
  }
  return { positional, seen };
}

/** An option given where it does nothing: refused, with why. */
export function refuseIdle(command, seen, option, unless, why) {
  if (seen[option] !== undefined && !unless) throw new UsageError(`${option} does nothing here: ${why}`, command);
}

/** A positive number option (--lr, --residual-limit) from its text; `usage(text)` makes the
 *  command's usage error (exit 2). Undefined when not given. */
export function positiveArg(option, given, usage) {
  if (given === undefined) return undefined;
  const x = positiveNumber(given);
  if (Number.isNaN(x)) throw usage(`${option} must be a positive number, got ${shown(given)}`);
  return x;
}

/** --ratio-band LO,HI (health, run): two numbers, then the core's rules for a band (its words);
 *  `usage(text)` makes the command's usage error (exit 2). Null when not given. */
export async function ratioBandArg(given, usage) {
  if (given === undefined) return null;
  const parts = given.split(',').map((x) => x.trim());
  const numbers = parts.map(decimalNumber);
  if (parts.length !== 2 || numbers.some(Number.isNaN)) {
    throw usage(`--ratio-band takes two numbers LO,HI (e.g. 1e-5,1e-2), got ${shown(given)}`);
  }
  try {
    return await ratioBand(numbers);
  } catch (err) {
    if (err instanceof RangeError) throw usage(`--ratio-band ${shown(given)}: ${err.message}`);
    throw err;
  }
}

// ---- the values options take ---------------------------------------------------------------

/** --workers N: how many workers read the statistics (default 'auto': what pays for the files' size). */
export function workersArg(seen) {
  const given = seen['--workers'];
  if (given === undefined) return 'auto';
  if (!/^[0-9]{1,2}$/.test(given) || Number(given) < 1 || Number(given) > 64) throw new UsageError(`--workers must be a number from 1 to 64, got ${given}`);
  return Number(given);
}

/** --world-size N: the data-parallel world size a DeepSpeed checkpoint will be loaded on
 *  (undefined when not given). */
export function worldSizeArg(seen) {
  const given = seen['--world-size'];
  if (given === undefined) return undefined;
  if (!/^[1-9][0-9]{0,8}$/.test(given)) throw new UsageError(`--world-size must be a positive whole number, got ${shown(given, PATH_ECHO_MAX)}`, 'check');
  return Number(given);
}

/** --frozen NAME[,NAME...]: the names, each once (undefined when not given); whether the model
 *  has them is the core's to say. */
export function frozenArg(seen, command) {
  const given = seen['--frozen'];
  if (given === undefined) return undefined;
  const names = given.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) throw new UsageError(`--frozen takes NAME[,NAME...], the model's tensor names: ${shown(given, PATH_ECHO_MAX)} holds an empty one`, command);
  return [...new Set(names)];
}

/** --kind K: a PyTorch optimizer's kind its file does not say, one of the core's kinds (null
 *  when not given). */
export function kindArg(seen, command) {
  const kind = seen['--kind'];
  if (kind === undefined) return null;
  return optimizerKind(kind, (names) => new UsageError(`--kind takes ${listed(names)}, not ${shown(kind, PATH_ECHO_MAX)}`, command)).name;
}

/** --pair I: an Accelerate folder's pair index (a decimal count), or null when not given. */
export function pairArg(seen, command) {
  const text = seen['--pair'];
  if (text === undefined) return null;
  if (!/^[0-9]{1,9}$/.test(text)) throw new UsageError(`--pair takes a pair's index (0, 1, ...), not ${shown(text, PATH_ECHO_MAX)}`, command);
  return Number(text);
}

/** What --to takes: the versions convert writes, then oldest (the lowest that loses nothing). */
export const versionTargets = () => [...convertVersions(), 'oldest'];

/** --to V: a version convert writes (a number), or 'oldest'; undefined when not given. */
export function versionArg(to, command) {
  if (to === undefined) return undefined;
  const words = versionTargets().map(String);
  if (!words.includes(to)) throw new UsageError(`--to takes ${listed(words)}, not ${shown(to)}`, command);
  return to === 'oldest' ? to : Number(to);
}

/** --random-counter N: a nonnegative integer below 2^64, kept as its text. */
export function randomCounterArg(seen, command) {
  const counter = seen['--random-counter'];
  if (counter !== undefined && (!/^[0-9]{1,20}$/.test(counter) || BigInt(counter) >= 1n << 64n)) throw new UsageError(`--random-counter takes a nonnegative integer below 2^64, not ${counter}`, command);
  return counter;
}

/** A number option's value (the core decides which numbers), else a usage error naming it. */
export function numberArg(seen, option, command) {
  if (seen[option] === undefined) return undefined;
  const x = decimalNumber(seen[option]);
  if (Number.isNaN(x)) throw new UsageError(`${option} takes a number, not ${shown(seen[option], PATH_ECHO_MAX)}`, command);
  return x;
}

/** The options of a conversion to TorchLean from a PyTorch optimizer (docs/pytorch.md), for
 *  convert(): the target (--to, --for; the lowest version that holds it by default), --untie,
 *  --round-to-float32, --random-counter, and TorchLean's one configuration (--kind,
 *  --weight-decay, --betas, --eps, --drop-amsgrad); the core checks the values. */
export async function fromTorchArgs(seen, command) {
  if (seen['--to'] !== undefined && seen['--for'] !== undefined) throw new UsageError(`${command} takes one of --to and --for`, command);
  const to = versionArg(seen['--to'] ?? (seen['--for'] === undefined ? 'oldest' : undefined), command);
  if (seen['--for'] !== undefined) await readerArg('--for', seen['--for'], '');
  let betas;
  if (seen['--betas'] !== undefined) {
    betas = seen['--betas'].split(',').map((x) => decimalNumber(x));
    if (betas.length !== 2 || betas.some(Number.isNaN)) throw new UsageError(`--betas takes B1,B2 (two numbers), not ${shown(seen['--betas'], PATH_ECHO_MAX)}`, command);
  }
  return {
    ...(to === undefined ? { for: seen['--for'] } : { to }),
    untie: !!seen['--untie'], roundToFloat32: !!seen['--round-to-float32'], kind: kindArg(seen, command) ?? undefined, betas,
    randomCounter: randomCounterArg(seen, command), weightDecay: numberArg(seen, '--weight-decay', command),
    eps: numberArg(seen, '--eps', command), dropAmsgrad: !!seen['--drop-amsgrad'],
  };
}

/** The export format a file name asks for by its extension (the core's formats), or null. */
export function exportFormatOf(file) {
  const lower = String(file).toLowerCase();
  return abi().exportFormats.find((f) => lower.endsWith(f.extension))?.name ?? null;
}

/** The output names export writes: `OUT.safetensors or OUT.npz` (`bar`: `OUT.safetensors|OUT.npz`). */
export function exportOutputs({ bar = false } = {}) {
  const names = abi().exportFormats.map((f) => `OUT${f.extension}`);
  return bar ? names.join('|') : listed(names);
}

/** A TorchLean reader's name (--reader, --for), else a usage error listing the core's readers. */
export async function readerArg(option, name, more) {
  const names = await readerNames();
  if (!names.includes(name)) throw new UsageError(`${option} takes a TorchLean reader: ${names.join(', ')}${more}; not ${name}`);
}

// ---- did you mean (js/suggest.js: the rule and the words) ------------------------------------

/** `: did you mean \`ckptscope ARGS\`?`, each argument echoed within bounds. */
export const meant = (...args) => `: ${didYouMean(`\`ckptscope ${args.map((a) => shown(a, PATH_ECHO_MAX)).join(' ')}\``)}`;

/** An unknown command, refused with the command line meant: a misspelt command, or a file
 *  given before its command (the usage shown: the command meant, else all of it). */
export function unknownCommand(command, rest) {
  const near = nearest(command, COMMANDS);
  if (near) return new UsageError(`unknown command ${shown(command)}${meant(near, ...rest)}`, near);
  const k = rest.findIndex((a) => COMMANDS.includes(a));
  if (k >= 0) return new UsageError(`unknown command ${shown(command)}${meant(rest[k], command, ...rest.filter((_, j) => j !== k))}`, rest[k]);
  return new UsageError(`unknown command ${shown(command)}`);
}
