import { domainToASCII } from "node:url";
import { appError } from "@mailroom/kit/errors.js";
import type { InboundRuleRecord, RuleAction } from "./model.js";

/** Rules a domain may hold: the routing cache keeps them all in memory. */
export const MAX_RULES_PER_DOMAIN = 100;

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** A local part's dot-atom characters (RFC 5322 atext) without "*", which rules use as the wildcard. */
const LOCAL = /^[a-z0-9!#$%&'+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'+/=?^_`{|}~-]+)*$/;

const invalidDomain = (message: string) => appError({ code: "invalid_inbound_domain", httpStatus: 400, message });
const invalidRule = (message: string) => appError({ code: "invalid_inbound_rule", httpStatus: 400, message });

/**
 * The domain as stored: lower-case ASCII (an IDN as punycode), no trailing dot, at least two
 * labels; `reserved` (Mailroom's own MX host, the bounce domain) cannot be claimed.
 */
export function normalizeDomain(input: string, reserved: string[] = []): string {
  const trimmed = input.trim().replace(/\.$/, "");
  if (!trimmed) throw invalidDomain("domain is required");
  const ascii = domainToASCII(trimmed.toLowerCase());
  if (!ascii || ascii.length > 253) throw invalidDomain(`"${input}" is not a domain name`);
  const labels = ascii.split(".");
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || /^\d+$/.test(labels[labels.length - 1])) {
    throw invalidDomain(`"${input}" is not a domain name (e.g. "inbound.example.com")`);
  }
  if (reserved.includes(ascii)) throw invalidDomain(`${ascii} is Mailroom's own host: pick a domain of yours`);
  return ascii;
}

const ACTIONS: ReadonlySet<string> = new Set<RuleAction>(["webhook", "forward", "store"]);

/** A rule's match, action and forward address, checked and normalised. */
export function validateRule(input: { match: string; action: string; forwardTo: string }): { match: string; action: RuleAction; forwardTo: string } {
  const match = input.match.trim().toLowerCase();
  if (!match) throw invalidRule('match is required: "*", a local part ("support") or "local+*"');
  if (match !== "*") {
    const local = match.endsWith("+*") ? match.slice(0, -2) : match;
    if (!local || local.length > 64 || !LOCAL.test(local) || (match.endsWith("+*") && local.includes("+"))) {
      throw invalidRule(`match "${input.match}" must be "*", a local part ("support") or "local+*" ("reply+*")`);
    }
  }
  const action = input.action.trim().toLowerCase();
  if (!ACTIONS.has(action)) throw invalidRule(`action must be one of: webhook, forward, store (got "${input.action}")`);
  const forwardTo = input.forwardTo.trim();
  if (action === "forward") {
    if (!isAddress(forwardTo)) throw invalidRule(`forwardTo must be an email address for a forward rule (got "${input.forwardTo}")`);
  } else if (forwardTo) {
    throw invalidRule(`forwardTo is only for a forward rule, not ${action}`);
  }
  return { match, action: action as RuleAction, forwardTo: action === "forward" ? forwardTo.toLowerCase() : "" };
}

export const invalidForwardLoop = (domain: string) =>
  invalidRule(`forwardTo is at ${domain}, an inbound domain of this server: the message would come back here`);

function isAddress(value: string): boolean {
  const parts = addressParts(value);
  if (!parts || value.length > 254 || parts.local.length > 64 || !LOCAL.test(parts.local.toLowerCase())) return false;
  const labels = parts.domain.split(".");
  return labels.length >= 2 && labels.every((l) => LABEL.test(l));
}

/** An address's lower-case domain and its local part as written; undefined when it is not an address. */
export function addressParts(address: string): { local: string; domain: string } | undefined {
  const at = address.lastIndexOf("@");
  if (at <= 0 || at === address.length - 1) return undefined;
  return { local: address.slice(0, at), domain: address.slice(at + 1).toLowerCase().replace(/\.$/, "") };
}

/**
 * The rule a local part reaches among one domain's rules, most specific first: the exact
 * local part, then `base+*` for a plus-address (its tag becomes the mailbox hash), then `*`
 * (which also hands a plus-address's tag over). Case-insensitive; the tag keeps its case.
 */
export function matchRule(rules: readonly InboundRuleRecord[], local: string): { rule: InboundRuleRecord; mailboxHash: string } | undefined {
  const lower = local.toLowerCase();
  const plus = local.indexOf("+");
  const tag = plus > 0 ? local.slice(plus + 1) : "";
  const exact = rules.find((r) => r.match === lower);
  if (exact) return { rule: exact, mailboxHash: "" };
  if (plus > 0) {
    const tagged = rules.find((r) => r.match === `${lower.slice(0, plus)}+*`);
    if (tagged) return { rule: tagged, mailboxHash: tag };
  }
  const any = rules.find((r) => r.match === "*");
  return any && { rule: any, mailboxHash: tag };
}
