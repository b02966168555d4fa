/** Memory of the benchmarks' processes, read from /proc (Linux). */
import { readdir, readFile } from "node:fs/promises";

/** Anonymous resident memory (RssAnon) of a process in MB, or undefined once it is gone. */
export async function anonMb(pid: number | undefined): Promise<number | undefined> {
  if (!pid) return undefined;
  const m = /RssAnon:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, "utf8").catch(() => ""));
  return m ? Math.round(Number(m[1]) / 1024) : undefined;
}

/** Keeps the largest RssAnon seen of each process, sampled every `everyMs` until stopped. */
export function sampleAnonPeaks(pids: Map<string, number | undefined>, everyMs = 250) {
  const peaks = new Map<string, number>();
  const sample = async () => {
    for (const [name, pid] of pids) {
      const mb = await anonMb(pid);
      if (mb !== undefined && mb > (peaks.get(name) ?? 0)) peaks.set(name, mb);
    }
  };
  const timer = setInterval(() => void sample(), everyMs);
  return { peaks, stop: async () => (clearInterval(timer), await sample()) };
}

/** The pid of a process whose command line names `binary` and `port` (nats-server does not say its pid). */
export async function pidListeningAs(binary: string, port: number): Promise<number | undefined> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(binary) && cmdline.includes(String(port))) return Number(entry);
  }
  return undefined;
}
