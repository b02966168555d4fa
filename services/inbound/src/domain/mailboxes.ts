import { isPerDomainBounceDomain, parseVerpAddress, splitAddress, VERP_LOCAL_PREFIX } from "@mailroom/content/verp.js";
import { parseRecipientToken, type TokenSecret } from "@mailroom/content/tokens.js";
import type { Mailbox } from "./model.js";
import { looksLikeSrs, srsReverse } from "./srs.js";

export interface MailboxPolicy {
  /** MAILROOM_SECRET, with MAILROOM_SECRET_PREVIOUS while rotating (`tokenSecretsOf(config)`). */
  secret: TokenSecret;
  /** The shared bounce domain(s) (MAILROOM_BOUNCE_DOMAIN); fixed mailboxes also live on every `bounces.<domain>`. */
  domains: string[];
}

const UNSUBSCRIBE = "unsubscribe";

/**
 * The delivery a VERP address names, under any of the secrets: return paths minted before a
 * rotation still bounce back for days after it.
 */
export function verpDeliveryOf(secret: TokenSecret, address: string): { deliveryId: string; domain: string } | undefined {
  for (const s of typeof secret === "string" ? [secret] : secret) {
    const verp = parseVerpAddress(s, address);
    if (verp) return verp;
  }
  return undefined;
}
const REPORT_MAILBOXES = new Set(["fbl", "postmaster"]);

/**
 * The mailbox an RCPT TO address reaches, or undefined when it is none of ours (550 at
 * RCPT: we receive only what comes back from our own sending and relay nothing).
 *
 * An address with a valid signature (a VERP return path, an unsubscribe token) is ours at
 * any domain: mail reaches us there only because that domain's MX points at us, and the
 * signature says we minted it (a return path sent before the bounce subdomain still comes
 * back). The fixed mailboxes (unsubscribe, fbl, postmaster) live on the bounce domains:
 * the configured shared one and every per-sender `bounces.<domain>` (`bounceDomainFor`).
 * This unit cannot list every verified sender domain without a lookup, so any `bounces.*`
 * is accepted for them; they suppress nothing without a token or a report naming a
 * delivery we sent.
 */
export function mailboxOf(address: string, policy: MailboxPolicy): Mailbox | undefined {
  const parts = splitAddress(address);
  if (!parts) return undefined;
  const local = parts.local;
  const lower = local.toLowerCase();
  if (lower.startsWith(`${VERP_LOCAL_PREFIX}+`)) {
    const verp = verpDeliveryOf(policy.secret, address);
    return verp && { kind: "return-path", deliveryId: verp.deliveryId };
  }
  if (looksLikeSrs(local)) {
    // A forward's SRS return path: ours at any domain once its hash verifies (like a VERP address).
    const original = srsReverse(policy.secret, address);
    return original ? { kind: "srs", original } : undefined;
  }
  if (lower.startsWith(`${UNSUBSCRIBE}+`)) {
    // Recipient tokens are base64url: their case matters, so the local part is used as given.
    const token = local.slice(UNSUBSCRIBE.length + 1);
    return parseRecipientToken(policy.secret, token) ? { kind: "unsubscribe", token } : undefined;
  }
  const onBounceDomain = policy.domains.includes(parts.domain) || isPerDomainBounceDomain(parts.domain);
  if (!onBounceDomain) return undefined;
  if (lower === UNSUBSCRIBE) return { kind: "unsubscribe-by-subject" };
  if (REPORT_MAILBOXES.has(lower)) return { kind: "reports" };
  return undefined;
}
