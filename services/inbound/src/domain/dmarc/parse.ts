import { isIP } from "node:net";
import { XMLParser } from "fast-xml-parser";
import { Gunzip, Unzip, UnzipInflate } from "fflate";
import type { AggregateReport, AggregateRow, Disposition, ReadReports } from "./model.js";

/**
 * Reads DMARC aggregate reports (RFC 7489 Appendix C) out of a received message: each part
 * that is XML, gzip or zip (by its bytes first, as reporters label them loosely, then by type
 * and file name) is unpacked and read. Pure: no I/O; whatever cannot be read is named in
 * `refused` and skipped, never thrown, so one odd reporter never fails the message.
 */

/** A part of a message as postal-mime gives it (attachments; a body that is the file itself counts as one). */
export interface MessagePart {
  filename?: string | null;
  mimeType?: string;
  content: ArrayBuffer | Uint8Array | string;
}

export interface DmarcLimits {
  /** Bytes of XML read from one message, after unpacking (a zip bomb stops here). */
  maxXmlBytes: number;
  /** <record> elements read from one message. */
  maxRecords: number;
  /** Report files read from one message (a zip of thousands of entries stops here). */
  maxFiles: number;
}

export const DEFAULT_DMARC_LIMITS: DmarcLimits = { maxXmlBytes: 20 * 1024 * 1024, maxRecords: 50_000, maxFiles: 10 };

type Kind = "gzip" | "zip" | "xml";

const GZIP_TYPES = new Set(["application/gzip", "application/x-gzip", "application/x-gunzip", "application/gzip-compressed"]);
const ZIP_TYPES = new Set(["application/zip", "application/x-zip-compressed", "application/x-zip"]);
const XML_TYPES = new Set(["text/xml", "application/xml"]);

/** What a part holds: its leading bytes decide (magic numbers); else its declared type or file name; undefined: not a report. */
export function kindOf(part: MessagePart, bytes: Uint8Array): Kind | undefined {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return "gzip";
  if (bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04) return "zip";
  const type = (part.mimeType ?? "").toLowerCase();
  const name = (part.filename ?? "").toLowerCase();
  if (XML_TYPES.has(type) || name.endsWith(".xml")) return "xml";
  // Declared compressed but not by its bytes: read it as what it is, which fails as a refusal.
  if (GZIP_TYPES.has(type) || name.endsWith(".gz") || name.endsWith(".gzip")) return "gzip";
  if (ZIP_TYPES.has(type) || name.endsWith(".zip")) return "zip";
  return undefined;
}

const bytesOf = (content: MessagePart["content"]): Uint8Array =>
  typeof content === "string" ? new TextEncoder().encode(content) : content instanceof Uint8Array ? content : new Uint8Array(content);

class Refused extends Error {}

/**
 * Compressed input is fed in slices this large: one slice of deflate inflates to at most
 * ~1032 times its size (16.5 MB), and the output is counted after each, so a bomb is stopped
 * within one slice of the limit, in memory and in CPU alike, whatever its headers declare.
 */
const SLICE_BYTES = 16 * 1024;

function feed(bytes: Uint8Array, push: (slice: Uint8Array, final: boolean) => void): void {
  if (!bytes.length) push(bytes, true);
  for (let at = 0; at < bytes.length; at += SLICE_BYTES) push(bytes.subarray(at, at + SLICE_BYTES), at + SLICE_BYTES >= bytes.length);
}

/** Output of a streaming decompressor, drawing on a budget shared by a part's files: throws Refused beyond it. */
class CappedOutput {
  readonly chunks: Uint8Array[] = [];
  size = 0;
  done = false;
  constructor(private readonly budget: { left: number; limit: number }, private readonly what: string) {}
  add(chunk: Uint8Array, final: boolean): void {
    this.budget.left -= chunk.length;
    if (this.budget.left < 0) throw new Refused(`${this.what} unpacks to more than the ${this.budget.limit}-byte limit`);
    this.size += chunk.length;
    this.chunks.push(chunk);
    if (final) this.done = true;
  }
  bytes(): Uint8Array {
    if (!this.done) throw new Refused(`truncated ${this.what}`);
    const out = new Uint8Array(this.size);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

/** The XML files in one part, at most `budget` bytes and `maxFiles` files in all; throws Refused. */
function unpack(kind: Kind, bytes: Uint8Array, budget: number, maxFiles: number): Uint8Array[] {
  const fail = (what: string, err: unknown) => (err instanceof Refused ? err : new Refused(`unreadable ${what} (${(err as Error).message})`));
  switch (kind) {
    case "xml":
      if (bytes.length > budget) throw new Refused(`XML of ${bytes.length} bytes is over the ${budget}-byte limit`);
      return [bytes];
    case "gzip": {
      const out = new CappedOutput({ left: budget, limit: budget }, "gzip file");
      try {
        const gunzip = new Gunzip((chunk, final) => out.add(chunk, final));
        feed(bytes, (slice, final) => gunzip.push(slice, final));
        return [out.bytes()];
      } catch (err) {
        throw fail("gzip file", err);
      }
    }
    case "zip": {
      const files: CappedOutput[] = [];
      const shared = { left: budget, limit: budget };
      try {
        const unzip = new Unzip((file) => {
          // Other entries are never started: skipped without being inflated.
          if (!file.name.toLowerCase().endsWith(".xml")) return;
          if (files.length >= maxFiles) throw new Refused(`zip holds more than ${maxFiles} XML files`);
          const out = new CappedOutput(shared, "zip");
          files.push(out);
          file.ondata = (err, chunk, final) => {
            if (err) throw err;
            out.add(chunk, final);
          };
          file.start();
        });
        unzip.register(UnzipInflate);
        feed(bytes, (slice, final) => unzip.push(slice, final));
        if (!files.length) throw new Refused("zip without an XML file");
        return files.map((f) => f.bytes());
      } catch (err) {
        throw fail("zip file", err);
      }
    }
  }
}

/** Elements that repeat in Appendix C's schema: always arrays, however many a report has. */
const REPEATED = new Set(["feedback.record", "feedback.record.auth_results.dkim", "feedback.record.auth_results.spf", "feedback.record.row.policy_evaluated.reason"]);

const xmlParser = new XMLParser({
  ignoreAttributes: true,
  // Every value stays text (a report id of digits must not become a rounded number).
  parseTagValue: false,
  trimValues: true,
  // DMARCbis reports carry a namespace; some reporters prefix it.
  removeNSPrefix: true,
  isArray: (_name, jpath) => REPEATED.has(String(jpath)),
});

type Node = Record<string, unknown>;
const node = (v: unknown): Node => (v && typeof v === "object" && !Array.isArray(v) ? (v as Node) : {});
const text = (v: unknown): string => (typeof v === "string" ? v.trim() : typeof v === "number" ? String(v) : "");
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);

const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const domainOf = (v: unknown): string => {
  const d = text(v).toLowerCase().replace(/\.$/, "");
  return DOMAIN.test(d) ? d : "";
};
const DISPOSITIONS = new Set<Disposition>(["none", "quarantine", "reject"]);
/** Seconds since the epoch, as date_range gives them. */
const epochSeconds = (v: unknown): Date | undefined => {
  const s = text(v);
  if (!/^\d{1,12}$/.test(s)) return undefined;
  return new Date(Number(s) * 1000);
};
const MAX_TEXT = 256;

/**
 * One aggregate report's XML into its report; throws Refused naming what is missing.
 * Rows without a source IP or a count are left out (`skipped`); alignment is read from
 * policy_evaluated, the receiver's DMARC (aligned) results, not from auth_results.
 */
export function parseAggregateXml(xml: string, maxRecords = DEFAULT_DMARC_LIMITS.maxRecords): { report: AggregateReport; skipped: number } {
  // No report needs a DTD; refusing them refuses entity expansion ("billion laughs") outright.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new Refused("XML with a DTD");
  let doc: Node;
  try {
    doc = node(xmlParser.parse(xml));
  } catch (err) {
    throw new Refused(`not XML (${(err as Error).message.split("\n")[0]})`);
  }
  const feedback = node(doc.feedback);
  const metadata = node(feedback.report_metadata);
  const range = node(metadata.date_range);
  const published = node(feedback.policy_published);
  const orgName = text(metadata.org_name).slice(0, MAX_TEXT);
  const reportId = text(metadata.report_id).slice(0, MAX_TEXT);
  const begin = epochSeconds(range.begin);
  const end = epochSeconds(range.end);
  const domain = domainOf(published.domain);
  if (!doc.feedback) throw new Refused("no <feedback> element: not a DMARC aggregate report");
  if (!orgName || !reportId) throw new Refused("report_metadata without org_name or report_id");
  if (!begin || !end || end < begin) throw new Refused(`report ${reportId}: date_range without a valid begin and end`);
  if (!domain) throw new Refused(`report ${reportId}: policy_published without a valid domain`);
  const records = list(feedback.record);
  if (records.length > maxRecords) throw new Refused(`report ${reportId} has ${records.length} records, over the ${maxRecords} limit`);
  const rows: AggregateRow[] = [];
  let skipped = 0;
  for (const r of records) {
    const record = node(r);
    const row = node(record.row);
    const evaluated = node(row.policy_evaluated);
    const sourceIp = text(row.source_ip).toLowerCase();
    const countText = text(row.count);
    const count = /^\d{1,15}$/.test(countText) ? Number(countText) : NaN;
    if (!isIP(sourceIp) || !Number.isSafeInteger(count)) {
      skipped++;
      continue;
    }
    const disposition = text(evaluated.disposition).toLowerCase() as Disposition;
    rows.push({
      sourceIp,
      count,
      // RFC 7489's three; a reporter's own word ("pass" in some old reports) reads as none: nothing was done.
      disposition: DISPOSITIONS.has(disposition) ? disposition : "none",
      dkimAligned: text(evaluated.dkim).toLowerCase() === "pass",
      spfAligned: text(evaluated.spf).toLowerCase() === "pass",
      headerFrom: domainOf(node(record.identifiers).header_from) || domain,
    });
  }
  const alignment = (v: unknown): "r" | "s" => (text(v).toLowerCase() === "s" ? "s" : "r");
  return {
    report: {
      orgName,
      reportId,
      begin,
      end,
      policy: { domain, adkim: alignment(published.adkim), aspf: alignment(published.aspf), p: text(published.p).toLowerCase().slice(0, 20) },
      rows,
    },
    skipped,
  };
}

/** Every aggregate report in a message's parts, within the limits; what was not read is in `refused`. */
export function readAggregateReports(parts: MessagePart[], limits: DmarcLimits = DEFAULT_DMARC_LIMITS): ReadReports {
  const out: ReadReports = { reports: [], refused: [] };
  let budget = limits.maxXmlBytes;
  let records = limits.maxRecords;
  let files = limits.maxFiles;
  for (const part of parts) {
    const bytes = bytesOf(part.content);
    const kind = kindOf(part, bytes);
    if (!kind) continue;
    const label = part.filename || part.mimeType || kind;
    try {
      if (files <= 0) throw new Refused(`more than ${limits.maxFiles} report files in one message`);
      for (const xmlBytes of unpack(kind, bytes, budget, files)) {
        budget -= xmlBytes.length;
        files--;
        try {
          const { report, skipped } = parseAggregateXml(new TextDecoder().decode(xmlBytes), records);
          records -= report.rows.length;
          out.reports.push(report);
          if (skipped) out.refused.push(`${label}: ${skipped} record(s) without a valid source_ip or count left out`);
        } catch (err) {
          if (!(err instanceof Refused)) throw err;
          out.refused.push(`${label}: ${err.message}`);
        }
      }
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      out.refused.push(`${label}: ${err.message}`);
    }
  }
  return out;
}
