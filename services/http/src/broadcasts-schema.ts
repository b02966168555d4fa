import { z } from "zod";
import { AB_METRICS, AB_STATES, BROADCAST_STATUSES, DELIVERY_METHODS, publicBroadcastJson } from "@mailroom/api-json/broadcast.js";
import {
  BroadcastStatus,
  DeliveryMethod,
  type Broadcast,
} from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { checkDuration } from "@mailroom/kit/durations.js";
import { apiErrorSchema, refusal } from "./errors.js";

/**
 * Public JSON of broadcasts (/v1/broadcasts). The gateway checks shapes only; every rule
 * (gating, sender, variables, sizes, states, pacing) lives in the broadcast service.
 */

export const STATUSES = BROADCAST_STATUSES;
export const METHODS = DELIVERY_METHODS;

const STATUS_BY_NAME: Record<(typeof STATUSES)[number], BroadcastStatus> = {
  DRAFT: BroadcastStatus.DRAFT,
  SCHEDULED: BroadcastStatus.SCHEDULED,
  IN_PROGRESS: BroadcastStatus.IN_PROGRESS,
  COMPLETED: BroadcastStatus.COMPLETED,
};
const METHOD_BY_NAME: Record<(typeof METHODS)[number], DeliveryMethod> = {
  ASAP: DeliveryMethod.ASAP,
  PROGRESSIVE: DeliveryMethod.PROGRESSIVE,
  SMART: DeliveryMethod.SMART,
  WARMUP: DeliveryMethod.WARMUP,
  OPTIMAL: DeliveryMethod.OPTIMAL,
};
export const statusOf = (name: (typeof STATUSES)[number]) => STATUS_BY_NAME[name];
export const methodOf = (name: (typeof METHODS)[number]) => METHOD_BY_NAME[name];

export const broadcastIdParams = z.object({
  id: z.string().meta({ description: "A broadcast id (`cmp_…`). Another workspace's or an unknown id is a 404 `broadcast_not_found` (after the gating, like every broadcast call)." }),
});

// --- requests -----------------------------------------------------------------------------

const address = z.string().max(512);

const groupIds = z.array(z.string().min(1).max(200)).min(1).max(100);
const someId = z.string().min(1).max(200);
const filterObject = z.record(z.string(), z.unknown()).meta({ description: "A filter (DESIGN §9.4 grammar): fields, operators, relative dates, `$and/$or/$not`, `$engagement`. An invalid one is 400 `invalid_filter` naming its path." });

export const audienceRequestSchema = z
  .strictObject({
    all: z.literal(true).optional().meta({ description: "Every subscribed contact." }),
    groups: groupIds.optional().meta({ description: "Group ids or publicIds: the union of their members." }),
    segmentId: someId.optional().meta({ description: "A segment (`seg_…`): the contacts its filter matches." }),
    filter: filterObject.optional(),
    exclude: z
      .strictObject({ groups: groupIds.optional(), segmentId: someId.optional(), filter: filterObject.optional() })
      .optional()
      .meta({ description: "Contacts taken out again: members of these groups, of this segment, matching this filter." }),
    topicId: someId.optional().meta({ description: "A topic (`top_…`): only contacts who receive it (OPT_IN: chose it; OPT_OUT: did not leave it). Its messages' one-click unsubscribe leaves the topic only." }),
  })
  .refine((a) => [a.all === true, a.groups !== undefined, a.segmentId !== undefined, a.filter !== undefined].filter(Boolean).length === 1, {
    message: "audience must have exactly one of all (true), groups, segmentId, filter",
  })
  .meta({
    id: "BroadcastAudience",
    description: "Exactly one of `{ all: true }`, `{ groups }`, `{ segmentId }`, `{ filter }`, with optional `exclude` and `topicId`. Always only SUBSCRIBED contacts, minus suppressions and the topic's opt-outs; resolved when sending starts. An unknown group, segment or topic is 400 `audience_not_found`.",
  });

export type AudienceRequest = z.output<typeof audienceRequestSchema>;

/** The public audience as the broadcast service takes it (filters as JSON text). */
export function audienceRpc(a: AudienceRequest) {
  return {
    all: a.all === true,
    groups: a.groups ?? [],
    segmentId: a.segmentId ?? "",
    filterJson: a.filter === undefined ? "" : JSON.stringify(a.filter),
    exclude: a.exclude
      ? { groups: a.exclude.groups ?? [], segmentId: a.exclude.segmentId ?? "", filterJson: a.exclude.filter === undefined ? "" : JSON.stringify(a.exclude.filter) }
      : undefined,
    topicId: a.topicId ?? "",
  };
}

const abVariantFields = {
  subject: z.string().optional().meta({ description: "The variant's subject (may contain merge variables)." }),
  fromName: z.string().optional().meta({ description: "The variant's sender name." }),
  previewText: z.string().optional().meta({ description: "The variant's inbox preview text." }),
  html: z.string().optional().meta({ description: "The variant's HTML (at most 512,000 bytes)." }),
};

export const abTestRequestSchema = z
  .strictObject({
    variants: z
      .array(z.strictObject(abVariantFields))
      .meta({ description: "2 to 4 variants; each changes at least one of subject, fromName, previewText, html from the broadcast's (absent fields: the broadcast's own)." }),
    testShare: z.number().meta({ description: "Share of the audience that gets the variants, 0.05 to 0.5, exactly round(audience × testShare) contacts drawn at random, split evenly among the variants (sizes differing by at most one)." }),
    metric: z.enum(AB_METRICS).meta({ description: "The unique rate (per delivered message) that picks the winner." }),
    waitFor: z
      .union([z.number(), z.string()])
      .meta({
        description:
          'How long to wait after the test share was released to delivery before the winner is picked, from 5 minutes to 7 days: whole seconds (300 to 604800) or an ISO 8601 duration as automation waits take it (`"PT2H"`, `"P1D"`; weeks, days, hours, minutes, seconds). Answers show it in seconds.',
      }),
  })
  .meta({
    id: "BroadcastAbTestRequest",
    description: "An A/B test (DESIGN §9.8). A refused value is 400 `invalid_payload` naming the field (`abTest.testShare …`).",
  });

export type AbTestRequest = z.output<typeof abTestRequestSchema>;

/** The public A/B test as the broadcast service takes it. */
export function abTestRpc(ab: AbTestRequest) {
  return { variants: ab.variants, testShare: ab.testShare, metric: ab.metric, waitForSeconds: BigInt(waitForSeconds(ab.waitFor)) };
}

/**
 * `waitFor` in seconds: a number as given, an ISO 8601 duration through the parser automation
 * waits use. A number that is not a whole one goes on as -1, for the broadcast service to refuse
 * with its range; a malformed duration is refused here, where its text is known.
 */
function waitForSeconds(waitFor: number | string): number {
  if (typeof waitFor === "number") return Number.isSafeInteger(waitFor) ? waitFor : -1;
  const checked = checkDuration(waitFor);
  if ("error" in checked) throw refusal({ code: "invalid_payload", message: `abTest.waitFor ${checked.error}` });
  return checked.ms / 1_000;
}

export const createBroadcastRequestSchema = z
  .object({
    name: z.string().meta({ description: "Required." }),
    subject: z.string().meta({ description: "May contain merge variables." }),
    previewText: z.string().optional().meta({ description: "Inbox preview text; may contain merge variables." }),
    fromEmail: address.meta({ description: "A verified address or one on a verified domain (else 400 `campaigns/invalid_from_email` with the allowed lists)." }),
    fromName: z.string().meta({ description: "Required." }),
    replyTo: z.array(address).max(10).optional().meta({ description: "Reply-To addresses." }),
    html: z.string().meta({ description: "Stored exactly as sent. At most 512,000 bytes of UTF-8 (else 413 `broadcast_html_too_large`); over 102 KB the answer warns `html_over_102kb_may_be_clipped`." }),
    text: z.string().optional().meta({ description: "The plain-text part; generated from the HTML when absent." }),
    audience: audienceRequestSchema,
    settings: z
      .object({ trackOpens: z.boolean().optional(), trackClicks: z.boolean().optional() })
      .optional()
      .meta({ description: "Both default to true." }),
    allowUnknownVariables: z.boolean().optional().meta({ description: "Render unknown merge variables as empty text instead of refusing (400 `broadcast_unknown_variables`)." }),
    abTest: abTestRequestSchema.optional(),
  })
  .meta({ id: "CreateBroadcastRequest" });

export const updateBroadcastRequestSchema = createBroadcastRequestSchema
  .partial()
  .extend({ abTest: abTestRequestSchema.nullable().optional().meta({ description: "Replaces the A/B test; `null` removes it; absent keeps it." }) })
  .meta({ id: "UpdateBroadcastRequest", description: "The fields to change; the others keep their values (`audience` and `abTest` too)." });

export const abWinnerRequestSchema = z
  .strictObject({ variant: z.number().int().min(0).max(3).meta({ description: "Index of the variant (0-based, so 0 to 3) that goes to the rest." }) })
  .meta({ id: "AbWinnerRequest" });

export const testBroadcastRequestSchema = z
  .object({ emails: z.array(z.string()).meta({ description: "1 to 10 addresses of workspace members (else 400 `invalid_test_recipients` / `test_recipients_not_members` with `notMembers`)." }) })
  .meta({ id: "TestBroadcastRequest" });

/** The test body: anything but a list of addresses is `invalid_test_recipients` (design §6). */
export function parseTestBody(raw: unknown): { emails: string[] } {
  const parsed = testBroadcastRequestSchema.safeParse(raw);
  if (!parsed.success) throw refusal({ code: "invalid_test_recipients", message: "emails must be a list of 1 to 10 member addresses" });
  return parsed.data;
}

export const scheduleBroadcastRequestSchema = z
  .object({
    sendAt: z.string().nullish().meta({ description: "ISO 8601 with a time zone. Omitted, null, now or in the past: send now. More than 90 days ahead: 400 `send_at_out_of_range`; unparseable: 400 `invalid_send_at`." }),
    deliveryMethod: z.enum(METHODS).nullish().meta({ description: "Pacing. Omitted: `WARMUP` for a new sending account, else `PROGRESSIVE`. A new sending account may only use `WARMUP` (400 `campaigns/delivery_method_not_available`). `OPTIMAL`: each contact at its own best hour (its opens and clicks of the last 90 days, in its timezone) within 24 hours of `sendAt`; contacts with too little history as `SMART`." }),
    requireCleanCheck: z.boolean().nullish().meta({ description: "true: the pre-send check (`POST /v1/broadcasts/{id}/check`) runs first, and findings of level `error` refuse the schedule with 409 `check_failed` listing them." }),
  })
  .meta({ id: "ScheduleBroadcastRequest", description: "`{}` (or no body) sends now with the safest method." });

export const listBroadcastsQuerySchema = z.object({
  status: z.enum(STATUSES).optional().meta({ description: "Only broadcasts in this status." }),
  limit: z.coerce.number().int().min(1).max(100).optional().meta({ default: 20 }),
  cursor: z.string().max(200).optional().meta({ description: "The `cursor` of the previous page." }),
});

// --- responses ----------------------------------------------------------------------------

const timestamp = z.iso.datetime().nullable();
const counter = z.number().int().min(0);

const rateSchema = z.number().min(0).max(1);

export const abTestSchema = z
  .strictObject({
    variants: z.array(
      z.strictObject({
        ...abVariantFields,
        recipients: counter.meta({ description: "Recipients of the test share given this variant." }),
        delivered: counter.meta({ description: "Sent and not bounced." }),
        uniqueOpens: counter,
        uniqueClicks: counter,
        openRate: rateSchema.meta({ description: "uniqueOpens / delivered (0 before anything was delivered), 4 decimals." }),
        clickRate: rateSchema.meta({ description: "uniqueClicks / delivered, 4 decimals." }),
      }),
    ),
    testShare: z.number(),
    metric: z.enum(AB_METRICS),
    waitFor: z.number().int().meta({ description: "Seconds." }),
    state: z.enum(AB_STATES).meta({ description: "`draft` (not sending yet), `testing` (the test share going out), `waiting` (for the winner), `decided` (the winner goes to the rest), `cancelled` (cancelled during the wait: the rest is not sent)." }),
    waitUntil: timestamp.meta({ description: "When the winner is picked by the metric; null before the wait." }),
    winner: z.number().int().min(0).nullable().meta({ description: "Index of the winning variant; null until chosen." }),
    winnerChosenBy: z.enum(["metric", "user"]).nullable(),
    winnerChosenAt: timestamp,
  })
  .meta({ id: "BroadcastAbTest", description: "An A/B test: the variants with their counts and rates over the test share, and the winner." });


export const broadcastSchema = z
  .strictObject({
    id: z.string().regex(/^cmp_/),
    name: z.string(),
    status: z.enum(STATUSES),
    subject: z.string(),
    previewText: z.string(),
    fromEmail: z.string(),
    fromName: z.string(),
    replyTo: z.array(z.string()),
    html: z.string().meta({ description: "As created (compiling for the send never changes it)." }),
    text: z.string(),
    audience: z
      .strictObject({
        all: z.literal(true).optional(),
        groups: z.array(z.string()).optional(),
        segmentId: z.string().optional(),
        filter: z.unknown().optional(),
        exclude: z.strictObject({ groups: z.array(z.string()).optional(), segmentId: z.string().optional(), filter: z.unknown().optional() }).optional(),
        topicId: z.string().optional(),
      })
      .meta({ description: "As given on create or update." }),
    audienceCount: z.number().int().min(0).optional().meta({ description: "Contacts in the audience at the moment asked (create, update, get: subscribed, not suppressed, not opted out of the topic); absent in lists." }),
    settings: z.strictObject({ trackOpens: z.boolean(), trackClicks: z.boolean() }),
    allowUnknownVariables: z.boolean(),
    deliveryMethod: z.enum(METHODS).nullable().meta({ description: "Set at scheduling." }),
    scheduledAt: timestamp.meta({ description: "When sending is due; null on a draft." }),
    sentAt: timestamp.meta({ description: "When sending started (the move to IN_PROGRESS); null before." }),
    completedAt: timestamp,
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    pauseReason: z.string().nullable().meta({ description: "Why releasing stopped early: `bounce_rate` (PROGRESSIVE stopped by bounces); null otherwise." }),
    progress: z
      .strictObject({
        recipients: counter.meta({ description: "Audience resolved at the start." }),
        released: counter.meta({ description: "Handed to delivery or settled without it." }),
        sent: counter.meta({ description: "Accepted by the receiving server." }),
        delivered: counter,
        deferred: counter,
        bounced: counter,
        failed: counter,
        suppressed: counter,
        opened: counter.meta({ description: "Unique opens." }),
        clicked: counter.meta({ description: "Unique clickers." }),
        unsubscribed: counter,
      })
      .meta({ id: "BroadcastProgress" }),
    abTest: abTestSchema.optional().meta({ description: "The A/B test; absent on a broadcast without one." }),
  })
  .meta({ id: "Broadcast" });

export const broadcastEnvelope = z.strictObject({ broadcast: broadcastSchema }).meta({ id: "BroadcastEnvelope" });
export const warnings = z.array(z.string()).optional().meta({ description: "E.g. `html_over_102kb_may_be_clipped`." });

export const createBroadcastResponseSchema = z
  .strictObject({
    broadcast: broadcastSchema,
    variables: z.strictObject({
      detected: z.array(z.string()).meta({ description: "Every merge variable in the HTML, subject and preview text." }),
      unknown: z.array(z.string()).meta({ description: "Those that are neither built-ins, system values nor contact properties." }),
    }),
    warnings,
  })
  .meta({ id: "CreateBroadcastResponse" });

export const scheduleBroadcastResponseSchema = z.strictObject({ broadcast: broadcastSchema, warnings }).meta({ id: "ScheduleBroadcastResponse" });

export const broadcastListSchema = z
  .strictObject({
    broadcasts: z.strictObject({
      items: z.array(broadcastSchema).meta({ description: "Newest first." }),
      cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next page; null on the last." }),
      hasMore: z.boolean(),
    }),
  })
  .meta({ id: "BroadcastList" });

/** Error bodies of broadcast routes: always with `code`, plus the fields their code names. */
export const broadcastErrorSchema = apiErrorSchema;

/** 403/402 answers of every broadcast route: the gating, in its order. */
export const GATING_RESPONSES = {
  402: { description: "`broadcast_api_addon_required`: the Email API add-on is not enabled.", body: broadcastErrorSchema },
  403: { description: "`broadcast_api_not_enabled` (no early access; checked first), then `broadcast_api_workspace_not_verified` (checked after the add-on).", body: broadcastErrorSchema },
};

export const UNAUTHORIZED_RESPONSE = {
  401: { description: "Missing, invalid or under-scoped API key (scope `api_user`): code `unauthorized`.", body: broadcastErrorSchema },
};

/**
 * Proto broadcast -> public JSON, every field: the api-json library's, which the broadcast
 * service's webhook events use too (typed here against the schema, so the two cannot differ).
 */
export const broadcastJson: (b: Broadcast) => z.output<typeof broadcastSchema> = publicBroadcastJson;
