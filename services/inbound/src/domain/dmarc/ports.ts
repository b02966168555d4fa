import type { AggregateReport, Disposition } from "./model.js";

/** One source's outcome in a stored report: the rows of a report for one header From domain. */
export interface StoredDmarcRow {
  sourceIp: string;
  count: number;
  disposition: Disposition;
  dkimAligned: boolean;
  spfAligned: boolean;
}

/** A report's rows for one header From domain. */
export interface StoredDmarcReport {
  /** The reporter and its report id, as one key: a report is counted once however often it arrives. */
  reportKey: string;
  orgName: string;
  /** YYYY-MM-DD (UTC) of the date range's begin. */
  day: string;
  end: Date;
  rows: StoredDmarcRow[];
}

/**
 * Where aggregate reports are kept (../../adapters/dmarc-store.ts). Reports are stored by
 * DOMAIN NAME, not by workspace: a report names the domain the mail claimed to be from
 * (identifiers/header_from, else policy_published/domain), and the inbound unit does not
 * know which workspace sends from it. The gateway checks that the domain is the caller's
 * (the accounts unit's GetDomain for the caller's workspace) before it asks for a summary.
 */
export interface DmarcReportStore {
  /**
   * Keeps the report's rows, grouped by header From domain; false when this reporter's report
   * with this id was kept already (a redelivery), which is then left as it was.
   */
  save(report: AggregateReport, receivedAt: Date): Promise<boolean>;
  /** The rows for `domain` of the reports whose date range ends at or after `since`. */
  reportsFor(domain: string, since: Date): Promise<StoredDmarcReport[]>;
}
