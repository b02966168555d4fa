import { z } from "zod";
import { SuppressionReason, type Suppression } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { apiErrorSchema } from "@mailroom/http/errors.js";
import { iso } from "@mailroom/http/contacts-schema.js";

/** The suppression list's public shapes (DESIGN §10.3), shared by the gateway's suppressions-*.ts routes and the console. */

export const SUPPRESSION_REASONS = ["hard_bounce", "complaint", "manual", "unsubscribed", "imported"] as const;
export type PublicSuppressionReason = (typeof SUPPRESSION_REASONS)[number];

export const REASON_TO_PB: Record<PublicSuppressionReason, SuppressionReason> = {
  hard_bounce: SuppressionReason.HARD_BOUNCE,
  complaint: SuppressionReason.COMPLAINT,
  manual: SuppressionReason.MANUAL,
  unsubscribed: SuppressionReason.UNSUBSCRIBED,
  imported: SuppressionReason.IMPORTED,
};
const REASON_NAMES: Partial<Record<number, PublicSuppressionReason>> = Object.fromEntries(
  Object.entries(REASON_TO_PB).map(([name, value]) => [value, name as PublicSuppressionReason]),
);

export const SUPPRESSIONS_DEFAULT_LIMIT = 50;
export const SUPPRESSIONS_MAX_LIMIT = 500;

const reasonSchema = z.enum(SUPPRESSION_REASONS).meta({
  description: "`hard_bounce` (a permanent bounce), `complaint` (a spam report), `manual` (added by you), `unsubscribed` (the recipient's own choice), `imported` (brought from elsewhere).",
});

export const suppressionSchema = z
  .strictObject({
    email: z.string().optional().meta({ description: "The suppressed address (lower-cased); absent for a domain.", examples: ["ann@example.com"] }),
    domain: z.string().optional().meta({ description: "A whole suppressed domain: every address at it; absent for an address.", examples: ["example.org"] }),
    reason: reasonSchema,
    createdAt: z.iso.datetime(),
    source: z.string().optional().meta({ description: "What caused it: the email (`trs_…`) or broadcast (`cmp_…`) id, or an import's file name." }),
  })
  .meta({ id: "Suppression" });

/** POST /v1/suppressions; the console's "Suppress" form is parsed with it too. */
export const createSuppressionSchema = z.strictObject({
  email: z.string().max(512).optional().meta({ description: "An address to suppress. Exactly one of `email` and `domain`.", examples: ["ann@example.com"] }),
  domain: z.string().max(253).optional().meta({ description: "A whole domain to suppress: every address at it (`example.org`, not a subdomain's addresses).", examples: ["example.org"] }),
  reason: z.enum(SUPPRESSION_REASONS).optional().meta({ default: "manual" }),
  source: z.string().max(500).optional().meta({ description: "What caused it (an id, a file name); shown in the list." }),
}).meta({ id: "CreateSuppression" });

export const suppressionEnvelope = z.strictObject({ suppression: suppressionSchema }).meta({ id: "SuppressionResponse" });

/** A suppression as the API shows it. */
export function suppressionJson(s: Suppression): z.infer<typeof suppressionSchema> {
  return {
    ...(s.domain ? { domain: s.domain } : { email: s.email }),
    reason: REASON_NAMES[s.reason] ?? "manual",
    createdAt: iso(s.createdAt) ?? new Date(0).toISOString(),
    ...(s.source ? { source: s.source } : {}),
  };
}

export const reasonQuery = reasonSchema.optional().meta({ description: "Only this reason." });
export const sinceQuery = z.iso.datetime({ offset: true }).optional().meta({ description: "Only those created at or after this time (ISO 8601)." });

export const suppressionRefusals = {
  invalid: { description: "`invalid_email`, `invalid_domain`, `email_and_domain` (both given), `invalid_reason`, `invalid_source` or `invalid_request`.", body: apiErrorSchema },
} as const;
