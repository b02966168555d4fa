/**
 * Reads the `.cpuprofile` files that `--cpu-prof` leaves when a process exits and says, per
 * unit, which functions took the most self time: the first place to look before optimising.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name and source position), largest first, in milliseconds. */
export function selfTimes(profile: CpuProfile): { frame: string; ms: number }[] {
  const frameOf = new Map<number, string>();
  for (const n of profile.nodes) {
    const { functionName, url, lineNumber } = n.callFrame;
    const where = url ? `${url.replace(/^file:\/\//, "").replace(/^.*\/node_modules\//, "~/")}:${lineNumber + 1}` : "";
    frameOf.set(n.id, `${functionName || "(anonymous)"} ${where}`.trim());
  }
  const totals = new Map<string, number>();
  profile.samples.forEach((id, i) => {
    const frame = frameOf.get(id) ?? "?";
    totals.set(frame, (totals.get(frame) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return [...totals].map(([frame, ms]) => ({ frame, ms })).sort((a, b) => b.ms - a.ms);
}

/** A few lines per unit: its profile's total and hottest functions. */
export async function summarizeProfiles(dir: string, pidsByUnit: Record<string, number | undefined>, top = 8): Promise<string[]> {
  const unitOfPid = new Map(Object.entries(pidsByUnit).map(([unit, pid]) => [String(pid), unit]));
  const lines: string[] = [];
  // Thread 0 only: tsx's module loader runs in a worker thread of its own that profiles too.
  for (const file of (await readdir(dir)).filter((f) => f.endsWith(".cpuprofile") && f.split(".")[4] === "0").sort()) {
    // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile
    const unit = unitOfPid.get(file.split(".")[3] ?? "") ?? file;
    const times = selfTimes(JSON.parse(await readFile(path.join(dir, file), "utf8")) as CpuProfile);
    // Shares of the time the process was on the CPU (idle excluded), so units compare.
    const total = times.filter((r) => !r.frame.startsWith("(idle)")).reduce((t, r) => t + r.ms, 0);
    const busy = times.filter((r) => !/^\((idle|program|garbage collector)\)/.test(r.frame));
    const gc = times.find((r) => r.frame.startsWith("(garbage collector)"))?.ms ?? 0;
    lines.push(`profile ${unit}: ${(total / 1000).toFixed(1)} s on CPU, garbage collection ${((gc / total) * 100).toFixed(1)}%`);
    for (const r of busy.slice(0, top)) lines.push(`  ${((r.ms / total) * 100).toFixed(1).padStart(5)}%  ${r.frame}`);
  }
  return lines;
}
