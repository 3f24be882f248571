// Open a URL in the user's default browser, best effort: `open` on macOS, `cmd /c start` on
// Windows, `xdg-open` elsewhere when a graphical session exists. The opener runs detached and
// its failure is ignored; the caller prints the URL either way.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

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

/** Start the default browser on `url`; false when there is no browser to try. */
export function openBrowser(url) {
  const command = browserCommand(url);
  if (!command) return false;
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
