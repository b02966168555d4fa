/**
 * DMARC aggregate reports (RFC 7489 §7.2 and Appendix C), as far as Mailroom reads them:
 * who reported, for which policy, and per source IP how many messages passed the aligned
 * checks and what the receiver did with them.
 */

export type Disposition = "none" | "quarantine" | "reject";

/** One <record>: messages from one source with one outcome. */
export interface AggregateRow {
  sourceIp: string;
  count: number;
  disposition: Disposition;
  /**
   * policy_evaluated's dkim / spf: the receiver's *aligned* results (RFC 7489 §7.2: "the
   * results of applying DMARC"), so "pass" is an aligned pass; auth_results hold the raw ones.
   */
  dkimAligned: boolean;
  spfAligned: boolean;
  /** identifiers/header_from, lower-case; the policy domain when the reporter left it out. */
  headerFrom: string;
}

export interface AggregateReport {
  /** report_metadata/org_name: the reporting organisation ("google.com"). */
  orgName: string;
  /** report_metadata/report_id: unique per reporter. */
  reportId: string;
  /** report_metadata/date_range: the period the records cover. */
  begin: Date;
  end: Date;
  /** policy_published: what the domain owner had published. */
  policy: { domain: string; adkim: "r" | "s"; aspf: "r" | "s"; p: string };
  rows: AggregateRow[];
}

/** What one received message held: the reports read, and why any attached file was not. */
export interface ReadReports {
  reports: AggregateReport[];
  refused: string[];
}
