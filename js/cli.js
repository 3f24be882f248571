#!/usr/bin/env node
// The ckptscope command (package.json `bin`): js/cli/main.js reads the command line; this file
// only guards the output and sets the exit status.
import { guardOutput } from './terminal.js';
import { main } from './cli/main.js';

guardOutput();
const code = await main(process.argv.slice(2));
if (code !== null) process.exitCode = code;
