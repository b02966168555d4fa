/**
 * CPU time of running processes, read from /proc (Linux): what a benchmark divides by the
 * requests it served to say where the milliseconds of one request went, per process.
 */
import { readdirSync, readFileSync } from "node:fs";

/** Clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ; 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of one process, or undefined when it is gone or /proc is absent. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

export type CpuSnapshot = Map<string, number>;

/** Parent pid of every live process (a unit may run as a primary with worker children). */
function parents(): Map<number, number> {
  const ppid = new Map<number, number>();
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc").filter((e) => /^\d+$/.test(e));
  } catch {
    return ppid;
  }
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      ppid.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  return ppid;
}

/** CPU seconds of each named process and all its descendants. */
export function snapshot(pids: Record<string, number | undefined>): CpuSnapshot {
  const snap: CpuSnapshot = new Map();
  const ppid = parents();
  for (const [name, pid] of Object.entries(pids)) {
    if (!pid) continue;
    const tree = [pid];
    for (let i = 0; i < tree.length; i++) for (const [child, parent] of ppid) if (parent === tree[i]) tree.push(child);
    let total: number | undefined;
    for (const p of tree) {
      const s = cpuSeconds(p);
      if (s !== undefined) total = (total ?? 0) + s;
    }
    if (total !== undefined) snap.set(name, total);
  }
  return snap;
}

/** Milliseconds of CPU per unit of work (a request, an email), per process, largest first. */
export function cpuPerUnit(before: CpuSnapshot, after: CpuSnapshot, units: number): { name: string; ms: number }[] {
  const rows: { name: string; ms: number }[] = [];
  for (const [name, start] of before) {
    const end = after.get(name);
    if (end !== undefined && units > 0) rows.push({ name, ms: ((end - start) * 1000) / units });
  }
  return rows.sort((a, b) => b.ms - a.ms);
}

export const formatCpu = (rows: { name: string; ms: number }[]) =>
  rows.map((r) => `${r.name} ${r.ms.toFixed(3)}`).join(", ") + ` (total ${rows.reduce((t, r) => t + r.ms, 0).toFixed(3)})`;
