import { generateKeyPair } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { promisify } from "node:util";

/** What VerifyDomain needs from DNS; node's Resolver satisfies it, tests may inject one. */
export interface TxtResolver {
  resolveTxt(name: string): Promise<string[][]>;
}

export const DKIM_SELECTOR = "mailroom";

export interface DkimKeyPair {
  selector: string;
  /** base64 DER SubjectPublicKeyInfo: the `p=` tag. */
  publicKey: string;
  privateKeyPem: string;
}

const generateRsa = promisify(generateKeyPair);

export async function generateDkimKeyPair(selector = DKIM_SELECTOR): Promise<DkimKeyPair> {
  const { publicKey, privateKey } = await generateRsa("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "der" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return { selector, publicKey: (publicKey as Buffer).toString("base64"), privateKeyPem: privateKey as string };
}

export type RecordPurpose = "dkim" | "spf" | "dmarc";

export interface DnsRecordSpec {
  type: "TXT";
  name: string;
  value: string;
  purpose: RecordPurpose;
}

export interface DnsPolicy {
  /** Domain for the SPF `include:` hint (the relay's SPF record). */
  spfInclude: string;
}

export const dkimRecordName = (domain: string, selector: string) => `${selector}._domainkey.${domain}`;

/** The records a domain owner publishes: DKIM (required), SPF and DMARC (recommended). */
export function dnsRecordsFor(domain: string, selector: string, publicKey: string, policy: DnsPolicy): DnsRecordSpec[] {
  return [
    { type: "TXT", purpose: "dkim", name: dkimRecordName(domain, selector), value: `v=DKIM1; k=rsa; p=${publicKey}` },
    { type: "TXT", purpose: "spf", name: domain, value: `v=spf1 include:${policy.spfInclude} ~all` },
    { type: "TXT", purpose: "dmarc", name: `_dmarc.${domain}`, value: `v=DMARC1; p=none; rua=mailto:dmarc-reports@${domain}` },
  ];
}

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

/**
 * node:dns Resolver, pointed at MAILROOM_DNS_SERVERS ("127.0.0.1:5353,…") when set,
 * else at the system's resolvers.
 */
export function createResolver(servers = process.env.MAILROOM_DNS_SERVERS, opts: { timeoutMs?: number; tries?: number } = {}): TxtResolver {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: opts.tries ?? 2 });
  const list = (servers ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  if (list.length) resolver.setServers(list);
  return resolver;
}
