import type { Disposition } from "./model.js";
import type { StoredDmarcReport } from "./ports.js";

interface Tally {
  messages: number;
  spfAligned: number;
  dkimAligned: number;
  /** Messages with neither an aligned SPF pass nor an aligned DKIM pass. */
  unaligned: number;
  disposition: Record<Disposition, number>;
}

export interface DmarcTotals {
  messages: number;
  /** Shares of messages, 0 to 1 (0 when there were none). */
  spfAlignedPassRate: number;
  dkimAlignedPassRate: number;
  /** Messages that passed DMARC: SPF or DKIM aligned and passed. */
  dmarcPassRate: number;
  disposition: Record<Disposition, number>;
}

export interface DmarcSummary {
  /** By messages, most first (then by address). */
  sources: (DmarcTotals & { sourceIp: string; failingAlignment: boolean })[];
  /** Oldest first. */
  days: (DmarcTotals & { day: string })[];
  reports: number;
  /** The reporting organisations, sorted. */
  reporters: string[];
}

const emptyTally = (): Tally => ({ messages: 0, spfAligned: 0, dkimAligned: 0, unaligned: 0, disposition: { none: 0, quarantine: 0, reject: 0 } });

const totals = (t: Tally): DmarcTotals => ({
  messages: t.messages,
  spfAlignedPassRate: t.messages ? t.spfAligned / t.messages : 0,
  dkimAlignedPassRate: t.messages ? t.dkimAligned / t.messages : 0,
  dmarcPassRate: t.messages ? (t.messages - t.unaligned) / t.messages : 0,
  disposition: { ...t.disposition },
});

/**
 * Stored reports of one domain, summed per source IP and per day (the day the report's date
 * range begins). A source fails alignment when some of its messages passed neither SPF nor
 * DKIM aligned: under p=quarantine or reject those are the messages receivers act on.
 */
export function summarise(reports: StoredDmarcReport[]): DmarcSummary {
  const bySource = new Map<string, Tally>();
  const byDay = new Map<string, Tally>();
  const keys = new Set<string>();
  const reporters = new Set<string>();
  for (const report of reports) {
    keys.add(report.reportKey);
    reporters.add(report.orgName);
    for (const row of report.rows) {
      for (const [map, key] of [[bySource, row.sourceIp], [byDay, report.day]] as const) {
        let t = map.get(key);
        if (!t) map.set(key, (t = emptyTally()));
        t.messages += row.count;
        if (row.spfAligned) t.spfAligned += row.count;
        if (row.dkimAligned) t.dkimAligned += row.count;
        if (!row.spfAligned && !row.dkimAligned) t.unaligned += row.count;
        t.disposition[row.disposition] += row.count;
      }
    }
  }
  return {
    sources: [...bySource]
      .map(([sourceIp, t]) => ({ sourceIp, ...totals(t), failingAlignment: t.unaligned > 0 }))
      .sort((a, b) => b.messages - a.messages || (a.sourceIp < b.sourceIp ? -1 : 1)),
    days: [...byDay].map(([day, t]) => ({ day, ...totals(t) })).sort((a, b) => (a.day < b.day ? -1 : 1)),
    reports: keys.size,
    reporters: [...reporters].sort(),
  };
}
