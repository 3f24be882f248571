// ckptscope command line (docs/cli.md). Exit status: 0 valid / would load / no
// differences; 1 invalid checkpoint, would not load, or differences; 2 usage or I/O error;
// 3 (run) nothing breaks, but a pair cannot tell; 141 when stdout's reader went away. A bad file
// never produces a stack trace: the reference diagnostic, its offset, a hint. Every line for a
// person goes out through terminal.js. Each command is a module of this folder, loaded when it
// runs; the core is loaded first, as the words options take are its own (js/cli/args.js).

import fs from 'node:fs';
import { CheckpointError, LayoutError } from '../errors.js';
import { loadBinding } from '../binding.js';
import { say, writeStdout } from '../terminal.js';
import { FileError } from '../user-files.js';
import { UsageError, usage, help, usageOf, helpOf, unknownCommand } from './args.js';
import { Failure } from './inputs.js';
import { errorLines } from './text.js';

/** Each command: its module's function, loaded when it runs. */
const COMMANDS = {
  inspect: async () => (await import('./inspect.js')).cmdInspect,
  check: async () => (await import('./check.js')).cmdCheck,
  diff: async () => (await import('./diff.js')).cmdDiff,
  health: async () => (await import('./health.js')).cmdHealth,
  export: async () => (await import('./export.js')).cmdExport,
  write: async () => (await import('./write.js')).cmdWrite,
  serve: async () => (await import('./serve.js')).cmdServe,
  view: async () => (await import('./serve.js')).cmdView,
  convert: async () => (await import('./convert.js')).cmdConvert,
  run: async () => (await import('./run.js')).cmdRun,
};

export async function main(argv) {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V') {
    const { version } = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    writeStdout(`ckptscope ${version}\n`);
    return 0;
  }
  const known = Object.hasOwn(COMMANDS, command ?? '');
  try {
    await loadBinding();
    if (!command || command === '--help' || command === '-h' || command === 'help') {
      if (command) writeStdout(help() + '\n');
      else process.stderr.write(usage() + '\n');
      return command ? 0 : 2;
    }
    if (!known) throw unknownCommand(command, rest);
    if (rest.includes('--help') || rest.includes('-h')) {
      writeStdout(helpOf(command) + '\n');
      return 0;
    }
    return await (await COMMANDS[command]())(rest);
  } catch (err) {
    return failed(err, known ? command : null);
  }
}

/** What went wrong, said on stderr in words; the exit status. */
function failed(err, command) {
  if (err instanceof UsageError) {
    if (!err.command && command) err.command = command;
    say(process.stderr, `ckptscope: ${err.message}`);
    process.stderr.write((err.command ? `${usageOf(err.command)}\n(ckptscope ${err.command} --help: its options)` : usage()) + '\n');
    return 2;
  }
  if (err instanceof CheckpointError) {
    // `context`: which of the user's files, when the diagnostic alone does not say.
    if (err.context) say(process.stderr, `ckptscope: ${err.context}`);
    say(process.stderr, errorLines(err));
    return 1;
  }
  if (err instanceof FileError || err instanceof Failure || err instanceof LayoutError) {
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
