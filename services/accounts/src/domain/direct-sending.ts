/**
 * What a domain needs in DNS when delivery sends straight to recipients' MX hosts (DESIGN
 * §9.7, MAILROOM_DELIVERY_MODE=direct): receivers check that the sending address has
 * forward-confirmed reverse DNS (its PTR name resolves back to it), ideally the name it
 * announces in EHLO, and that SPF of the envelope sender's domain authorises the address.
 * A relay does this for its own addresses; direct sending makes it the operator's job.
 */
import { bounceDomainFor } from "@mailroom/content/verp.js";
import type { DnsPolicy } from "./dns-policy.js";

export type SpfResult = "pass" | "fail" | "softfail" | "neutral" | "none" | "temperror" | "permerror";

/** What the direct-sending check asks of DNS (adapters/dns.ts: node's resolver and mailauth's SPF). */
export interface SendingDns {
  /** PTR names of an address; rejects with the resolver's error code. */
  reverse(address: string): Promise<string[]>;
  /** A and AAAA addresses of a name (empty when it has none). */
  addresses(name: string): Promise<string[]>;
  /** RFC 7208 evaluation of `ip` sending MAIL FROM `sender` after EHLO `helo`. */
  spf(input: { ip: string; sender: string; helo: string }): Promise<{ result: SpfResult; record?: string; comment?: string }>;
}

export interface SpfCheck {
  domain: string;
  role: "from" | "return-path";
  result: SpfResult;
  /** The record evaluated, or why there is no result. */
  detail: string;
}

export interface DirectSendingCheck {
  ptrNames: string[];
  /** The PTR name that resolves back to the address; "" when none does. */
  confirmedName: string;
  ehloMatches: boolean;
  /** Why reverse DNS is not confirmed ("" when it is). */
  reverseError: string;
  spf: SpfCheck[];
}

const NOT_FOUND = new Set(["ENOTFOUND", "ENODATA", "NXDOMAIN", "ENONAME"]);
const trimDot = (name: string) => name.replace(/\.$/, "").toLowerCase();

/** IPv6 compared in one spelling (`::ffff:1.2.3.4` and `1.2.3.4` alike; zero runs expanded). */
export function sameAddress(a: string, b: string): boolean {
  return canonical(a) === canonical(b);
}

function canonical(ip: string): string {
  const v = ip.trim().toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v);
  if (mapped) return mapped[1];
  if (!v.includes(":")) return v;
  const [head, tail = ""] = v.split("::");
  const left = head ? head.split(":") : [];
  const right = v.includes("::") && tail ? tail.split(":") : [];
  const fill = v.includes("::") ? Array(8 - left.length - right.length).fill("0") : [];
  return [...left, ...fill, ...right].map((g) => g.replace(/^0+(?=.)/, "")).join(":");
}

async function reverseCheck(dns: SendingDns, address: string, ehloName: string): Promise<Pick<DirectSendingCheck, "ptrNames" | "confirmedName" | "ehloMatches" | "reverseError">> {
  let ptrNames: string[];
  try {
    ptrNames = (await dns.reverse(address)).map(trimDot);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "";
    const reverseError = NOT_FOUND.has(code) ? `no PTR record for ${address}` : `reverse DNS lookup of ${address} failed: ${code || (err as Error).message}`;
    return { ptrNames: [], confirmedName: "", ehloMatches: false, reverseError };
  }
  if (!ptrNames.length) return { ptrNames, confirmedName: "", ehloMatches: false, reverseError: `no PTR record for ${address}` };
  // Prefer the EHLO name when several PTR names are published.
  const ehlo = trimDot(ehloName);
  const ordered = [...ptrNames].sort((a, b) => Number(b === ehlo) - Number(a === ehlo));
  for (const name of ordered) {
    const forward = await dns.addresses(name).catch(() => [] as string[]);
    if (forward.some((a) => sameAddress(a, address))) {
      return { ptrNames, confirmedName: name, ehloMatches: Boolean(ehlo) && name === ehlo, reverseError: "" };
    }
  }
  return { ptrNames, confirmedName: "", ehloMatches: false, reverseError: `${ptrNames.join(", ")} does not resolve back to ${address}` };
}

async function spfCheck(dns: SendingDns, domain: string, role: SpfCheck["role"], address: string, ehloName: string): Promise<SpfCheck> {
  try {
    const r = await dns.spf({ ip: address, sender: `postmaster@${domain}`, helo: ehloName || domain });
    return { domain, role, result: r.result, detail: r.record ?? r.comment ?? "" };
  } catch (err) {
    return { domain, role, result: "temperror", detail: (err as Error).message };
  }
}

/**
 * Real lookups, now: PTR of `address`, each name forward (A/AAAA) back to it, and SPF of the
 * From domain and of the return path's domain (the VERP bounce domain, what receivers check
 * SPF on and DMARC aligns with), for `address` after EHLO `ehloName`.
 */
export async function checkDirectSending(
  dns: SendingDns,
  policy: Pick<DnsPolicy, "bounceDomain">,
  input: { domain: string; address: string; ehloName: string },
): Promise<DirectSendingCheck> {
  const returnPath = bounceDomainFor(policy.bounceDomain, input.domain);
  const [reverse, ...spf] = await Promise.all([
    reverseCheck(dns, input.address, input.ehloName),
    spfCheck(dns, input.domain, "from", input.address, input.ehloName),
    ...(returnPath && returnPath !== input.domain ? [spfCheck(dns, returnPath, "return-path", input.address, input.ehloName)] : []),
  ]);
  return { ...reverse, spf };
}
