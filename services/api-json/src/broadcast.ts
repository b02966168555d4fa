/**
 * A broadcast's public JSON (GET /v1/broadcasts/:id, and `data.broadcast` of the
 * BROADCAST_STARTED / BROADCAST_COMPLETED webhooks): one function, used by the gateway and the
 * broadcast service, so the two never drift. The gateway's zod schema (broadcastSchema)
 * documents and checks it.
 */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { BroadcastStatus, DeliveryMethod, type AbTest, type Broadcast } from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import type { Audience } from "@mailroom/proto/common/v1/common_pb.js";

export const BROADCAST_STATUSES = ["DRAFT", "SCHEDULED", "IN_PROGRESS", "COMPLETED"] as const;
export const DELIVERY_METHODS = ["ASAP", "PROGRESSIVE", "SMART", "WARMUP", "OPTIMAL"] as const;

export type PublicBroadcastProgress = {
  recipients: number;
  released: number;
  sent: number;
  delivered: number;
  deferred: number;
  bounced: number;
  failed: number;
  suppressed: number;
  opened: number;
  clicked: number;
  unsubscribed: number;
};

/** A broadcast's audience as it was given (DESIGN §9.4): one of all, groups, segmentId, filter; exclude and topicId optional. */
export type PublicAudience = {
  all?: true;
  groups?: string[];
  segmentId?: string;
  filter?: unknown;
  exclude?: { groups?: string[]; segmentId?: string; filter?: unknown };
  topicId?: string;
};

const parsedFilter = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** Proto audience -> public JSON: the fields given, filters as JSON again; none at all reads as `{ all: true }`. */
export function publicAudienceJson(a: Audience | undefined): PublicAudience {
  if (!a) return { all: true };
  const out: PublicAudience = {};
  if (a.all) out.all = true;
  if (a.groups.length) out.groups = [...a.groups];
  if (a.segmentId) out.segmentId = a.segmentId;
  if (a.filterJson) out.filter = parsedFilter(a.filterJson);
  const x = a.exclude;
  if (x && (x.groups.length || x.segmentId || x.filterJson)) {
    out.exclude = {
      ...(x.groups.length ? { groups: [...x.groups] } : {}),
      ...(x.segmentId ? { segmentId: x.segmentId } : {}),
      ...(x.filterJson ? { filter: parsedFilter(x.filterJson) } : {}),
    };
  }
  if (a.topicId) out.topicId = a.topicId;
  if (!out.groups && !out.segmentId && out.filter === undefined) out.all = true;
  return out;
}

export const AB_METRICS = ["opens", "clicks"] as const;
export const AB_STATES = ["draft", "testing", "waiting", "decided", "cancelled"] as const;

/** One A/B variant: the fields it changes, and its counts and rates over the test share. */
export type PublicAbVariant = {
  subject?: string;
  fromName?: string;
  previewText?: string;
  html?: string;
  recipients: number;
  delivered: number;
  uniqueOpens: number;
  uniqueClicks: number;
  /** uniqueOpens / delivered (0 before anything was delivered). */
  openRate: number;
  clickRate: number;
};

export type PublicAbTest = {
  variants: PublicAbVariant[];
  testShare: number;
  metric: (typeof AB_METRICS)[number];
  /** Seconds. */
  waitFor: number;
  state: (typeof AB_STATES)[number];
  waitUntil: string | null;
  winner: number | null;
  winnerChosenBy: "metric" | "user" | null;
  winnerChosenAt: string | null;
};

export type PublicBroadcast = {
  id: string;
  name: string;
  status: (typeof BROADCAST_STATUSES)[number];
  subject: string;
  previewText: string;
  fromEmail: string;
  fromName: string;
  replyTo: string[];
  html: string;
  text: string;
  audience: PublicAudience;
  /** Contacts in the audience at the moment asked (create, update, get); absent elsewhere. */
  audienceCount?: number;
  settings: { trackOpens: boolean; trackClicks: boolean };
  allowUnknownVariables: boolean;
  deliveryMethod: (typeof DELIVERY_METHODS)[number] | null;
  scheduledAt: string | null;
  sentAt: string | null;
  completedAt: string | null;
  createdAt: string;
  updatedAt: string;
  pauseReason: string | null;
  progress: PublicBroadcastProgress;
  /** The A/B test (DESIGN §9.8); absent on a broadcast without one. */
  abTest?: PublicAbTest;
};

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : null);
const n = (v: bigint | undefined) => Number(v ?? 0n);

const rate = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0);

/** Proto A/B test -> public JSON: each variant's fields with its counts and rates (rounded to 4 places). */
export function publicAbTestJson(ab: AbTest): PublicAbTest {
  return {
    variants: ab.variants.map((v, i) => {
      const s = ab.stats[i];
      const delivered = n(s?.delivered);
      return {
        ...(v.subject !== undefined ? { subject: v.subject } : {}),
        ...(v.fromName !== undefined ? { fromName: v.fromName } : {}),
        ...(v.previewText !== undefined ? { previewText: v.previewText } : {}),
        ...(v.html !== undefined ? { html: v.html } : {}),
        recipients: n(s?.recipients),
        delivered,
        uniqueOpens: n(s?.uniqueOpens),
        uniqueClicks: n(s?.uniqueClicks),
        openRate: rate(n(s?.uniqueOpens), delivered),
        clickRate: rate(n(s?.uniqueClicks), delivered),
      };
    }),
    testShare: ab.testShare,
    metric: (AB_METRICS as readonly string[]).includes(ab.metric) ? (ab.metric as PublicAbTest["metric"]) : "opens",
    waitFor: Number(ab.waitForSeconds),
    state: (AB_STATES as readonly string[]).includes(ab.state) ? (ab.state as PublicAbTest["state"]) : "draft",
    waitUntil: iso(ab.waitUntil),
    winner: ab.winner ?? null,
    winnerChosenBy: ab.winnerChosenBy === "metric" || ab.winnerChosenBy === "user" ? ab.winnerChosenBy : null,
    winnerChosenAt: iso(ab.winnerChosenAt),
  };
}

/** Proto broadcast -> public JSON, every field. */
export function publicBroadcastJson(b: Broadcast): PublicBroadcast {
  const p = b.progress;
  return {
    id: b.id,
    name: b.name,
    status: BroadcastStatus[b.status] as PublicBroadcast["status"],
    subject: b.subject,
    previewText: b.previewText,
    fromEmail: b.fromEmail,
    fromName: b.fromName,
    replyTo: b.replyTo,
    html: b.html,
    text: b.text,
    audience: publicAudienceJson(b.audience),
    ...(b.audienceCount !== undefined ? { audienceCount: Number(b.audienceCount) } : {}),
    settings: { trackOpens: b.settings?.trackOpens ?? true, trackClicks: b.settings?.trackClicks ?? true },
    allowUnknownVariables: b.allowUnknownVariables,
    deliveryMethod: b.deliveryMethod ? (DeliveryMethod[b.deliveryMethod] as NonNullable<PublicBroadcast["deliveryMethod"]>) : null,
    scheduledAt: iso(b.scheduledAt),
    sentAt: iso(b.sentAt),
    completedAt: iso(b.completedAt),
    createdAt: iso(b.createdAt) ?? new Date(0).toISOString(),
    updatedAt: iso(b.updatedAt) ?? iso(b.createdAt) ?? new Date(0).toISOString(),
    pauseReason: b.pauseReason || null,
    progress: {
      recipients: n(p?.recipients),
      released: n(p?.released),
      sent: n(p?.sent),
      delivered: n(p?.delivered),
      deferred: n(p?.deferred),
      bounced: n(p?.bounced),
      failed: n(p?.failed),
      suppressed: n(p?.suppressed),
      opened: n(p?.opened),
      clicked: n(p?.clicked),
      unsubscribed: n(p?.unsubscribed),
    },
    ...(b.abTest ? { abTest: publicAbTestJson(b.abTest) } : {}),
  };
}
