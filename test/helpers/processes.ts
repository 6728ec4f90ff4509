/**
 * Live child processes, read from `/proc` (Linux): what tests of process supervision count and
 * kill (Python stubs, isolated backend hosts). Zombies (state `Z`) are not live.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The live children of `parent` (default: this process), optionally only those whose command line
 * (`/proc/<pid>/cmdline`, arguments NUL-separated) matches `cmdline`. A process that exits while
 * it is read is left out.
 */
export function childProcesses(cmdline?: RegExp | string, parent: number = process.pid): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== parent || state === 'Z') continue;
      if (cmdline === undefined) {
        out.push(Number(d));
        continue;
      }
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      if (typeof cmdline === 'string' ? cmd.includes(cmdline) : cmdline.test(cmd)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}
