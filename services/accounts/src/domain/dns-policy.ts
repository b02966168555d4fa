import { bounceDomainFor } from "@mailroom/content/verp.js";
import type { TxtResolver } from "@mailroom/records/ports.js";

export const DKIM_SELECTOR = "mailroom";

/** The records verification looks up (and stores as found or not). */
export type RecordPurpose = "dkim" | "spf" | "dmarc";
/** Records of the bounce domain: informational, not looked up, never required to verify. */
export type BounceRecordPurpose = "bounce-mx" | "bounce-spf";

export interface DnsRecordSpec {
  type: "TXT" | "MX";
  name: string;
  /** For MX: `<preference> <host>`, as a zone file writes it. */
  value: string;
  purpose: RecordPurpose | BounceRecordPurpose;
}

export interface DnsPolicy {
  /** Domain for the SPF `include:` hint (the relay's SPF record). */
  spfInclude: string;
  /** The inbound unit's public host name (MAILROOM_INBOUND_MX_HOST), the bounce domain's MX. */
  inboundMxHost: string;
  /** MAILROOM_BOUNCE_DOMAIN: one shared bounce domain; unset: `bounces.<domain>` per domain. */
  bounceDomain?: string;
}

export const dkimRecordName = (domain: string, selector: string) => `${selector}._domainkey.${domain}`;

/**
 * The records a domain owner publishes: DKIM (required), SPF and DMARC (recommended), and
 * for its bounce subdomain `bounces.<domain>` (the VERP return path, `bounceDomainFor`) an
 * MX to the inbound unit, so bounces and complaints come back, and an SPF record, since
 * receivers check SPF on the envelope sender's domain. With a shared MAILROOM_BOUNCE_DOMAIN
 * the operator publishes those once, so the domain gets none.
 */
export function dnsRecordsFor(domain: string, selector: string, publicKey: string, policy: DnsPolicy): DnsRecordSpec[] {
  const records: DnsRecordSpec[] = [
    { type: "TXT", purpose: "dkim", name: dkimRecordName(domain, selector), value: `v=DKIM1; k=rsa; p=${publicKey}` },
    { type: "TXT", purpose: "spf", name: domain, value: `v=spf1 include:${policy.spfInclude} ~all` },
    // Aggregate reports to the inbound unit, which reads them (GET /v1/domains/:id/dmarc).
    { type: "TXT", purpose: "dmarc", name: `_dmarc.${domain}`, value: `v=DMARC1; p=none; rua=mailto:dmarc@${policy.inboundMxHost}` },
  ];
  if (policy.bounceDomain) return records;
  const bounceDomain = bounceDomainFor(undefined, domain);
  records.push(
    { type: "MX", purpose: "bounce-mx", name: bounceDomain, value: `10 ${policy.inboundMxHost}` },
    { type: "TXT", purpose: "bounce-spf", name: bounceDomain, value: `v=spf1 include:${policy.spfInclude} ~all` },
  );
  return records;
}

/** Whether verification looks this record up (the bounce domain's records it does not). */
export const isCheckedRecord = (purpose: DnsRecordSpec["purpose"]): purpose is RecordPurpose =>
  purpose === "dkim" || purpose === "spf" || purpose === "dmarc";

/** DKIM tag list ("v=DKIM1; k=rsa; p=…") → tags; whitespace inside values is folding, not data. */
export function parseTags(record: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of record.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ""));
  }
  return tags;
}

export interface DomainCheck {
  found: Record<RecordPurpose, boolean>;
  /** Empty when the DKIM record matched. */
  error: string;
}

const NOT_FOUND_CODES = new Set(["ENOTFOUND", "ENODATA", "NXDOMAIN", "ENONAME"]);

async function lookup(resolver: TxtResolver, name: string): Promise<{ records: string[]; error?: string }> {
  try {
    const txt = await resolver.resolveTxt(name);
    // A long TXT record arrives as several character-strings; they form one value.
    return { records: txt.map((chunks) => chunks.join("")) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "";
    if (NOT_FOUND_CODES.has(code)) return { records: [], error: `no TXT record at ${name}` };
    return { records: [], error: `DNS lookup of ${name} failed: ${code || (err as Error).message}` };
  }
}

/** Looks the three records up; the domain verifies when the published DKIM key is ours. */
export async function checkDomainRecords(
  resolver: TxtResolver,
  domain: string,
  selector: string,
  publicKey: string,
  policy: DnsPolicy,
): Promise<DomainCheck> {
  const [dkim, spf, dmarc] = await Promise.all([
    lookup(resolver, dkimRecordName(domain, selector)),
    lookup(resolver, domain),
    lookup(resolver, `_dmarc.${domain}`),
  ]);
  const dkimFound = dkim.records.some((r) => {
    const tags = parseTags(r);
    const version = tags.get("v");
    return (version === undefined || version === "DKIM1") && tags.get("p") === publicKey;
  });
  const spfFound = spf.records.some((r) => /^v=spf1\s/i.test(r) && r.toLowerCase().includes(`include:${policy.spfInclude.toLowerCase()}`));
  const dmarcFound = dmarc.records.some((r) => /^v=DMARC1\s*;/i.test(r));
  let error = "";
  if (!dkimFound) {
    error = dkim.error ?? `the DKIM record at ${dkimRecordName(domain, selector)} does not contain this domain's public key`;
  }
  return { found: { dkim: dkimFound, spf: spfFound, dmarc: dmarcFound }, error };
}
