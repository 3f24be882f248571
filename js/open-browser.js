// Open a URL in the user's default browser, best effort: `open` on macOS, `cmd /c start` on
// Windows, `xdg-open` elsewhere when a graphical session exists. The opener runs detached and
// its failure is ignored; the caller prints the URL either way.
//
// A URL holding a secret (view's per-file tokens) never goes on the opener's command line,
// where any local user reads it from `ps`: the browser opens a redirect page instead, a 0600
// file in a 0700 folder of its own (as Jupyter does), removed when the process ends.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function onPath(command, PATH = '') {
  return PATH.split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir || '.', command), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** [command, args, spawn options] that open `url` here, or null when there is none to try. */
export function browserCommand(url, { platform = process.platform, env = process.env } = {}) {
  if (platform === 'darwin') return ['open', [url], {}];
  if (platform === 'win32') {
    // cmd.exe splits commands at & (one per extra file in the URL): ^& keeps it literal; the
    // empty "" is start's window title, without which a quoted URL would be taken for one.
    return ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')], { windowsVerbatimArguments: true }];
  }
  // Without a graphical session xdg-open may start a text browser in this very terminal.
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return null;
  if (!onPath('xdg-open', env.PATH)) return null;
  return ['xdg-open', [url], {}];
}

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The redirect page to `url`: readable by this user only, removed at exit. Its file: URL. */
export function redirectFile(url) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckptscope-open-'));   // 0700
  const file = path.join(dir, 'open.html');
  const html = `<!doctype html>\n<meta charset="utf-8">\n<meta http-equiv="refresh" content="0;url=${escapeHtml(url)}">\n`
    + `<title>ckptscope</title>\n<p><a href="${escapeHtml(url)}">Open the ckptscope viewer</a></p>\n`;
  fs.writeFileSync(file, html, { mode: 0o600, flag: 'wx' });
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return pathToFileURL(file).href;
}

/** Start the default browser on `url` (through a redirect page: no secret in argv); false
 *  when there is no browser to try. */
export function openBrowser(url) {
  if (!browserCommand(url)) return false;
  let command;
  try {
    command = browserCommand(redirectFile(url));
  } catch {
    return false;   // no private temporary file: the URL is printed anyway
  }
  const [cmd, args, options] = command;
  try {
    const child = spawn(cmd, args, { ...options, detached: true, stdio: 'ignore' });
    child.on('error', () => {});   // best effort: the URL is printed anyway
    child.unref();
    return true;
  } catch {
    return false;
  }
}
