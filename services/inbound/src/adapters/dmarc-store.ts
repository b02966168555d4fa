import { createHash } from "node:crypto";
import type { Collection, Store } from "@mailroom/store/port.js";
import type { AggregateReport } from "../domain/dmarc/model.js";
import type { DmarcReportStore, StoredDmarcReport, StoredDmarcRow } from "../domain/dmarc/ports.js";

/**
 * One document per report and header From domain. Keyed by DOMAIN NAME, not workspace: the
 * report names the domain, and the gateway checks the domain is the caller's before it asks
 * (see DmarcReportStore). The _id is the reporter and report id hashed, then the domain: a
 * redelivered report finds its documents there and adds nothing.
 */
type DmarcDoc = {
  _id: string;
  reportKey: string;
  domain: string;
  orgName: string;
  reportId: string;
  policyDomain: string;
  day: string;
  begin: Date;
  end: Date;
  receivedAt: Date;
  rows: StoredDmarcRow[];
};

/** How long reports are kept after their period ends: a year of history for the chart. */
export const DMARC_RETENTION_DAYS = 400;

export class StoreDmarcReports implements DmarcReportStore {
  private readonly docs: Collection<DmarcDoc>;

  private constructor(store: Store) {
    this.docs = store.collection<DmarcDoc>("dmarc_reports");
  }

  static async open(store: Store, retentionDays = DMARC_RETENTION_DAYS): Promise<StoreDmarcReports> {
    const repo = new StoreDmarcReports(store);
    await repo.docs.createIndex({ keys: { domain: 1, end: 1 } });
    await repo.docs.createIndex({ keys: { end: 1 }, expireAfterSeconds: retentionDays * 24 * 3600 });
    return repo;
  }

  async save(report: AggregateReport, receivedAt: Date): Promise<boolean> {
    const reportKey = createHash("sha256").update(`${report.orgName.toLowerCase()}\u0000${report.reportId}`).digest("hex").slice(0, 40);
    const byDomain = new Map<string, Map<string, StoredDmarcRow>>();
    // A report without records still counts as received for its policy domain.
    if (!report.rows.length) byDomain.set(report.policy.domain, new Map());
    for (const row of report.rows) {
      let rows = byDomain.get(row.headerFrom);
      if (!rows) byDomain.set(row.headerFrom, (rows = new Map()));
      // Rows of the same source and outcome are one (a reporter may split them by envelope or reason).
      const key = `${row.sourceIp}|${row.disposition}|${row.dkimAligned}|${row.spfAligned}`;
      const same = rows.get(key);
      if (same) same.count += row.count;
      else rows.set(key, { sourceIp: row.sourceIp, count: row.count, disposition: row.disposition, dkimAligned: row.dkimAligned, spfAligned: row.spfAligned });
    }
    let fresh = false;
    for (const [domain, rows] of byDomain) {
      const doc: Omit<DmarcDoc, "_id"> = {
        reportKey,
        domain,
        orgName: report.orgName,
        reportId: report.reportId,
        policyDomain: report.policy.domain,
        day: report.begin.toISOString().slice(0, 10),
        begin: report.begin,
        end: report.end,
        receivedAt,
        rows: [...rows.values()],
      };
      // Insert-if-absent: a redelivery (or a retry after a partial save) leaves what is kept alone.
      const result = await this.docs.updateOne({ _id: `${reportKey}:${domain}` }, { $setOnInsert: doc }, { upsert: true });
      if (result.upsertedId !== undefined) fresh = true;
    }
    return fresh;
  }

  async reportsFor(domain: string, since: Date): Promise<StoredDmarcReport[]> {
    const docs = await this.docs.find({ domain, end: { $gte: since } });
    return docs.map((d) => ({ reportKey: d.reportKey, orgName: d.orgName, day: d.day, end: new Date(d.end), rows: d.rows }));
  }
}
