import PostalMime from "postal-mime";
import type { Clock, DmarcReports, Logger } from "../ports.js";
import { DEFAULT_DMARC_LIMITS, readAggregateReports, type DmarcLimits, type MessagePart } from "./parse.js";
import type { DmarcReportStore } from "./ports.js";

/** The local part of the rua address the domain page suggests: `mailto:dmarc@<inbound host>`. */
export const DMARC_LOCAL_PART = "dmarc";

/** The rua value for a domain's DMARC record, reports to this unit. */
export const ruaFor = (inboundHost: string) => `mailto:${DMARC_LOCAL_PART}@${inboundHost}`;

export interface DmarcMailboxDeps {
  store: DmarcReportStore;
  /** The inbound unit's public host names (MAILROOM_INBOUND_MX_HOST): `dmarc@` each is the report mailbox. */
  hosts: string[];
  clock: Clock;
  logger: Logger;
  limits?: DmarcLimits;
}

const hasBinaryAttachments = (parsed: unknown): parsed is { attachments: MessagePart[] } => {
  const attachments = (parsed as { attachments?: unknown } | null)?.attachments;
  return Array.isArray(attachments) && attachments.every((a) => a && typeof a === "object" && typeof (a as MessagePart).content !== "string");
};

/**
 * The DMARC report mailbox: aggregate reports mailed to `dmarc@<inbound host>` are read and
 * kept. A message that holds none (or only files beyond the limits) is logged and dropped,
 * never refused: the reporter would only send it again. A store that fails throws, so the
 * SMTP reply is 451 and the reporter retries; a redelivered report is kept once.
 */
export class DmarcReportMailbox implements DmarcReports {
  private readonly addresses: Set<string>;

  constructor(private readonly deps: DmarcMailboxDeps) {
    this.addresses = new Set(deps.hosts.filter(Boolean).map((h) => `${DMARC_LOCAL_PART}@${h.toLowerCase().replace(/\.$/, "")}`));
  }

  isReportMailbox(address: string): boolean {
    return this.addresses.has(address.trim().toLowerCase());
  }

  /**
   * `parsed`: the message as postal-mime read it, when the caller did; its attachments are
   * used when they are bytes, else the raw message is read again (binary attachments decoded
   * as text would have lost the gzip and zip files).
   */
  async receive(raw: Uint8Array, parsed?: unknown): Promise<void> {
    const { logger } = this.deps;
    let parts: MessagePart[];
    try {
      parts = hasBinaryAttachments(parsed) ? parsed.attachments : (await PostalMime.parse(raw)).attachments;
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "DMARC mailbox: unreadable message dropped");
      return;
    }
    const { reports, refused } = readAggregateReports(parts, this.deps.limits ?? DEFAULT_DMARC_LIMITS);
    if (refused.length) logger.warn({ refused }, "DMARC mailbox: report files not read");
    if (!reports.length) {
      logger.info({ parts: parts.length }, "DMARC mailbox: message without an aggregate report dropped");
      return;
    }
    const now = this.deps.clock.now();
    for (const report of reports) {
      const fresh = await this.deps.store.save(report, now);
      logger.info(
        { reporter: report.orgName, reportId: report.reportId, domain: report.policy.domain, records: report.rows.length, redelivered: !fresh },
        fresh ? "DMARC aggregate report kept" : "DMARC aggregate report already kept (redelivered)",
      );
    }
  }
}
