/** An MTA-STS policy as delivery applies it (RFC 8461). */
export interface StsPolicy {
  mode: "enforce" | "testing" | "none";
  /** The policy's `mx` patterns, lower-case (`mail.example.com`, `*.example.net`). */
  mx: string[];
}

/** Where policies come from (mta-sts.ts; a fixed map in unit tests). */
export interface StsPolicySource {
  /** The domain's policy in force; undefined: none published (or none could be had). */
  policyFor(domain: string): Promise<StsPolicy | undefined>;
}

/**
 * Whether an MX host name matches a policy pattern (RFC 8461 §4.1): equal, or `*.` standing
 * for exactly one leftmost label.
 */
export function mxMatches(host: string, pattern: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  const p = pattern.toLowerCase().replace(/\.$/, "");
  if (!p.startsWith("*.")) return h === p;
  const dot = h.indexOf(".");
  return dot > 0 && h.slice(dot + 1) === p.slice(2);
}

export const policyAllows = (policy: StsPolicy, host: string) => policy.mx.some((p) => mxMatches(host, p));
