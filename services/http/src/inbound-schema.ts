import { domainToASCII } from "node:url";
import { z } from "zod";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { InboundDomain, InboundRule } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { apiErrorSchema, refusal } from "./errors.js";

/**
 * Inbound domains and their rules (DESIGN §10.4), shared by the inbound-*.ts routes and the
 * console's Inbound page: the request schemas (checked here before the inbound unit is asked)
 * and the public JSON of ReceivingService's messages.
 */

const at = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : undefined);

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
/** A local part's dot-atom characters (RFC 5322 atext) without `*`, which rules use as the wildcard. */
const LOCAL_PART = /^[a-z0-9!#$%&'+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'+/=?^_`{|}~-]+)*$/;

export const INBOUND_DOMAIN_ID = /^ind_[A-Za-z0-9_-]{1,80}$/;
export const INBOUND_RULE_ID = /^inr_[A-Za-z0-9_-]{1,80}$/;

export const INBOUND_ACTIONS = ["webhook", "forward", "store"] as const;

/**
 * The domain as the inbound unit stores it (lower-case ASCII, an IDN as punycode, no trailing
 * dot, at least two labels, a TLD that is not a number); undefined when it is no domain name.
 */
export function normaliseDomain(value: string): string | undefined {
  const ascii = domainToASCII(value.trim().replace(/\.$/, "").toLowerCase());
  if (!ascii || ascii.length > 253) return undefined;
  const labels = ascii.split(".");
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) && !/^\d+$/.test(labels[labels.length - 1]!) ? ascii : undefined;
}

/** Why a rule's `match` is not one (undefined when it is): `*`, a local part, or `local+*`. */
export function matchProblem(match: string): string | undefined {
  if (match === "*") return undefined;
  const plus = match.endsWith("+*");
  const local = plus ? match.slice(0, -2) : match;
  if (local.length > 64) return "the local part is at most 64 characters";
  if (local && LOCAL_PART.test(local) && !(plus && local.includes("+"))) return undefined;
  return `must be "*" (any address), a local part ("support") or a local part followed by "+*" for plus-addresses ("reply+*"), got ${JSON.stringify(match.slice(0, 80))}`;
}

export const createInboundDomainSchema = z
  .strictObject({
    domain: z.string().max(300).meta({ description: "The domain to receive mail for (`acme.com`, or a subdomain such as `in.acme.com`); its MX record must name the inbound host.", examples: ["in.acme.com"] }),
  })
  .transform((body, ctx) => {
    const domain = normaliseDomain(body.domain);
    if (!domain) {
      ctx.addIssue({ code: "custom", path: ["domain"], message: `must be a domain name such as in.acme.com (no scheme, no address), got ${JSON.stringify(body.domain.slice(0, 80))}` });
      return z.NEVER;
    }
    return { domain };
  })
  .meta({ id: "CreateInboundDomainRequest" });

export const createInboundRuleSchema = z
  .strictObject({
    // `pattern` outlines a match for the document's readers and generators; matchProblem is the rule.
    match: z.string().max(80).meta({
      pattern: "^\\s*(\\*|[A-Za-z0-9!#$%&'+/=?^_`{|}~.-]{1,64}(\\+\\*)?)\\s*$",
      description: "Which recipients of the domain the rule takes: `*` (any), a local part (`support`), or `local+*` (`reply+*`: plus-addresses, whose tag becomes the received email's `mailboxHash`). Case-insensitive.",
      examples: ["support", "reply+*", "*"],
    }),
    action: z.enum(INBOUND_ACTIONS, { error: `action must be one of ${INBOUND_ACTIONS.join(", ")}` }).meta({
      description: "`webhook`: an `EMAIL_RECEIVED` event to the workspace's webhooks; `forward`: sent on to `forwardTo` (SRS-rewritten so SPF holds); `store`: kept for the API only. Every received email is also kept for the API.",
    }),
    forwardTo: z.string().max(320).optional().meta({
      format: "email", description: "Required for `forward` (an email address), refused with the other actions.", examples: ["team@example.com"] }),
  })
  .transform((body, ctx) => {
    const match = body.match.trim().toLowerCase();
    const problem = matchProblem(match);
    if (problem) ctx.addIssue({ code: "custom", path: ["match"], message: problem });
    const forwardTo = body.forwardTo?.trim() ?? "";
    if (body.action === "forward") {
      if (!forwardTo) ctx.addIssue({ code: "custom", path: ["forwardTo"], message: "is required when action is forward" });
      else if (!z.email().safeParse(forwardTo).success) ctx.addIssue({ code: "custom", path: ["forwardTo"], message: `must be an email address, got ${JSON.stringify(forwardTo.slice(0, 80))}` });
    } else if (body.forwardTo !== undefined) {
      ctx.addIssue({ code: "custom", path: ["forwardTo"], message: `is only for action forward (this rule's action is ${body.action})` });
    }
    return problem ? z.NEVER : { match, action: body.action, forwardTo };
  })
  .meta({ id: "CreateInboundRuleRequest" });

export const inboundDomainSchema = z
  .strictObject({
    id: z.string().meta({ description: "`ind_…`", examples: ["ind_01jqz8k4m2x7v9c3n5b6t1w0ye"] }),
    domain: z.string().meta({ examples: ["in.acme.com"] }),
    status: z.enum(["pending", "verified"]).meta({ description: "`pending` until an MX record of the domain names the inbound host, then `verified`; mail is taken only for verified domains." }),
    mx: z
      .strictObject({
        name: z.string().meta({ description: "Where to publish the record: the domain itself." }),
        host: z.string().meta({ description: "The inbound host the record must name." }),
        priority: z.number().int().meta({ description: "The record's preference." }),
      })
      .meta({ description: "The MX record to publish at your DNS provider." }),
    createdAt: z.iso.datetime(),
    verifiedAt: z.iso.datetime().optional(),
    lastCheckedAt: z.iso.datetime().optional().meta({ description: "The last MX lookup." }),
    failure: z.string().optional().meta({ description: "Why the last lookup did not verify it (`no MX record`, `MX names other hosts: …`)." }),
  })
  .meta({ id: "InboundDomain" });

export const inboundRuleSchema = z
  .strictObject({
    id: z.string().meta({ description: "`inr_…`" }),
    domainId: z.string().meta({ description: "`ind_…`" }),
    match: z.string(),
    action: z.enum(INBOUND_ACTIONS),
    forwardTo: z.string().optional(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: "InboundRule" });

export const inboundDomainEnvelope = z.strictObject({ domain: inboundDomainSchema }).meta({ id: "InboundDomainResponse" });
export const inboundRuleEnvelope = z.strictObject({ rule: inboundRuleSchema }).meta({ id: "InboundRuleResponse" });

export function inboundDomainJson(d: InboundDomain) {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status as "pending" | "verified",
    mx: { name: d.domain, host: d.mxHost, priority: d.mxPriority },
    createdAt: at(d.createdAt) ?? new Date(0).toISOString(),
    ...(d.verifiedAt ? { verifiedAt: at(d.verifiedAt) } : {}),
    ...(d.lastCheckedAt ? { lastCheckedAt: at(d.lastCheckedAt) } : {}),
    ...(d.failure ? { failure: d.failure } : {}),
  };
}

export function inboundRuleJson(r: InboundRule) {
  return {
    id: r.id,
    domainId: r.domainId,
    match: r.match,
    action: r.action as (typeof INBOUND_ACTIONS)[number],
    ...(r.forwardTo ? { forwardTo: r.forwardTo } : {}),
    createdAt: at(r.createdAt) ?? new Date(0).toISOString(),
  };
}

export const domainIdParams = z.strictObject({ id: z.string().max(100).meta({ description: "The inbound domain's id (`ind_…`); anything else is a 404." }) });
export const ruleIdParams = z.strictObject({
  id: z.string().max(100).meta({ description: "The inbound domain's id (`ind_…`)." }),
  ruleId: z.string().max(100).meta({ description: "The rule's id (`inr_…`); anything else is a 404." }),
});

/** Refuses an id that cannot name an inbound domain before asking the inbound unit (the same 404 as another workspace's). */
export function checkDomainId(id: string): void {
  if (!INBOUND_DOMAIN_ID.test(id)) throw refusal({ code: "inbound_domain_not_found", message: `Inbound domain ${id.slice(0, 64)} not found` });
}

export function checkRuleId(id: string): void {
  if (!INBOUND_RULE_ID.test(id)) throw refusal({ code: "inbound_rule_not_found", message: `Inbound rule ${id.slice(0, 64)} not found` });
}

export const domainNotFound = { description: "`inbound_domain_not_found` (also another workspace's domain).", body: apiErrorSchema };
