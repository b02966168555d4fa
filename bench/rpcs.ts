/**
 * RPCs each unit served during a measured window, per request: where the round trips of
 * the send path go. Read from each unit's `mailroom_rpc_server_handled_total` before and
 * after, so it needs no instrumentation of its own.
 */
import { scrape } from "../test/ops/prometheus.js";

export type RpcCounts = Map<string, number>;

const SAMPLE = /^mailroom_rpc_server_handled_total\{(.*)\}\s+(\S+)/;

async function countRpcs(urls: Record<string, string>): Promise<RpcCounts> {
  const counts: RpcCounts = new Map();
  await Promise.all(
    Object.entries(urls).map(async ([unit, url]) => {
      const text = await scrape(url).catch(() => "");
      for (const line of text.split("\n")) {
        const m = SAMPLE.exec(line);
        if (!m) continue;
        const method = /method="([^"]*)"/.exec(m[1]!)?.[1] ?? "?";
        const key = `${unit}.${method}`;
        counts.set(key, (counts.get(key) ?? 0) + Number(m[2]));
      }
    }),
  );
  return counts;
}

/** Starts counting now; `end()` counts again and answers the difference. */
export function rpcMeter(urls: Record<string, string>) {
  let before: Promise<RpcCounts> = Promise.resolve(new Map());
  let after: Promise<RpcCounts> = Promise.resolve(new Map());
  return {
    onMeasure: (phase: "start" | "end") => {
      if (phase === "start") before = countRpcs(urls);
      else after = countRpcs(urls);
    },
    /** "email.SendBatch 0.08, audience.ReserveSendable 0.31, …" per `units` (requests or emails). */
    async perUnit(units: number): Promise<string> {
      const [b, a] = await Promise.all([before, after]);
      const rows = [...a]
        .map(([key, n]) => [key, (n - (b.get(key) ?? 0)) / Math.max(units, 1)] as const)
        .filter(([, n]) => n >= 0.005)
        .sort((x, y) => y[1] - x[1]);
      return rows.length ? rows.map(([key, n]) => `${key} ${n.toFixed(2)}`).join(", ") : "none";
    },
  };
}
