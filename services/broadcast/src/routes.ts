import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  BroadcastSchema,
  BroadcastService,
  BroadcastStatus as PbStatus,
  DeliveryMethod as PbMethod,
  type AbTest as PbAbTest,
  type Broadcast as PbBroadcast,
  type CreateBroadcastRequest,
  type UpdateBroadcastRequest,
} from "@mailroom/proto/broadcast/v1/broadcast_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { currentTraceparent } from "@mailroom/kit/tracing.js";
import type { Broadcasts } from "./domain/broadcasts.js";
import { abStatsKey, type AbTest, type Broadcast, type BroadcastAudience, type BroadcastStatus, type DeliveryMethod } from "./domain/model.js";
import type { AbTestInput } from "./domain/abtest.js";
import type { AudienceInput } from "./domain/broadcasts.js";
import type { Audience as PbAudience } from "@mailroom/proto/common/v1/common_pb.js";

const STATUS_TO_PB: Record<BroadcastStatus, PbStatus> = {
  DRAFT: PbStatus.DRAFT,
  SCHEDULED: PbStatus.SCHEDULED,
  IN_PROGRESS: PbStatus.IN_PROGRESS,
  COMPLETED: PbStatus.COMPLETED,
};
const METHOD_TO_PB: Record<DeliveryMethod, PbMethod> = {
  ASAP: PbMethod.ASAP,
  PROGRESSIVE: PbMethod.PROGRESSIVE,
  SMART: PbMethod.SMART,
  WARMUP: PbMethod.WARMUP,
  OPTIMAL: PbMethod.OPTIMAL,
};

/** Enum value -> its name ("SCHEDULED"), undefined for UNSPECIFIED, an error for unknown numbers. */
function enumName<T extends Record<string, string | number>>(e: T, value: number, field: string): string | undefined {
  if (value === 0) return undefined;
  const name = e[value as unknown as keyof T];
  if (typeof name !== "string") throw badRequest("invalid_payload", `${field} has an unknown value ${value}`);
  return name;
}

const ts = (d: Date | undefined) => (d ? timestampFromDate(new Date(d)) : undefined);

function audienceToPb(a: BroadcastAudience) {
  return {
    all: a.all === true,
    groups: a.groups ?? [],
    segmentId: a.segmentId ?? "",
    filterJson: a.filterJson ?? "",
    exclude: a.exclude ? { groups: a.exclude.groups ?? [], segmentId: a.exclude.segmentId ?? "", filterJson: a.exclude.filterJson ?? "" } : undefined,
    topicId: a.topicId ?? "",
  };
}

function audienceFromPb(a: PbAudience): AudienceInput {
  return {
    all: a.all || undefined,
    groups: a.groups.length ? a.groups : undefined,
    segmentId: a.segmentId || undefined,
    filterJson: a.filterJson || undefined,
    exclude: a.exclude ? { groups: a.exclude.groups.length ? a.exclude.groups : undefined, segmentId: a.exclude.segmentId || undefined, filterJson: a.exclude.filterJson || undefined } : undefined,
    topicId: a.topicId || undefined,
  };
}

function abTestToPb(ab: AbTest) {
  return {
    variants: ab.variants.map((v) => ({ ...v })),
    testShare: ab.testShare,
    metric: ab.metric,
    waitForSeconds: BigInt(ab.waitForSeconds),
    state: ab.state,
    winner: ab.winner,
    winnerChosenBy: ab.winnerChosenBy ?? "",
    stats: ab.variants.map((_, i) => {
      const c = ab.stats[abStatsKey(i)];
      return {
        recipients: BigInt(c?.recipients ?? 0),
        delivered: BigInt(Math.max(0, c?.delivered ?? 0)),
        uniqueOpens: BigInt(c?.uniqueOpens ?? 0),
        uniqueClicks: BigInt(c?.uniqueClicks ?? 0),
      };
    }),
    waitUntil: ts(ab.waitUntil),
    winnerChosenAt: ts(ab.winnerChosenAt),
  };
}

/** The A/B test a request carries (its settings only); absent: none. */
function abTestFromPb(ab: PbAbTest | undefined): AbTestInput | undefined {
  if (!ab) return undefined;
  return {
    variants: ab.variants.map((v) => ({ subject: v.subject, fromName: v.fromName, previewText: v.previewText, html: v.html })),
    testShare: ab.testShare,
    metric: ab.metric,
    waitForSeconds: Number(ab.waitForSeconds),
  };
}

/** Domain broadcast -> proto, every field (`audienceCount` where it was counted). */
export function protoBroadcast(b: Broadcast, audienceCount?: number): PbBroadcast {
  const p = b.progress;
  return create(BroadcastSchema, {
    id: b.id,
    name: b.name,
    status: STATUS_TO_PB[b.status],
    subject: b.subject,
    previewText: b.previewText,
    fromEmail: b.fromEmail,
    fromName: b.fromName,
    html: b.html,
    text: b.text,
    replyTo: b.replyTo,
    audience: audienceToPb(b.audience ?? { all: true }),
    audienceCount: audienceCount === undefined ? undefined : BigInt(audienceCount),
    settings: { trackOpens: b.settings.trackOpens, trackClicks: b.settings.trackClicks },
    allowUnknownVariables: b.allowUnknownVariables,
    scheduledAt: ts(b.scheduledAt),
    sentAt: ts(b.sentAt),
    deliveryMethod: b.deliveryMethod ? METHOD_TO_PB[b.deliveryMethod] : PbMethod.UNSPECIFIED,
    progress: {
      recipients: BigInt(p.recipients),
      released: BigInt(p.released),
      sent: BigInt(p.sent),
      delivered: BigInt(p.delivered),
      deferred: BigInt(p.deferred),
      bounced: BigInt(p.bounced),
      failed: BigInt(p.failed),
      suppressed: BigInt(p.suppressed),
      opened: BigInt(p.opened),
      clicked: BigInt(p.clicked),
      unsubscribed: BigInt(p.unsubscribed),
      replied: BigInt(p.replied ?? 0),
    },
    createdAt: ts(b.createdAt),
    updatedAt: ts(b.updatedAt),
    completedAt: ts(b.completedAt),
    pauseReason: b.sending?.pauseReason ?? "",
    abTest: b.abTest ? abTestToPb(b.abTest) : undefined,
  });
}

/** The Connect BroadcastService: proto in, proto out, no business rules. */
/** The draft fields of a create or an update request (the two carry the same ones). */
function draftOf(req: CreateBroadcastRequest | UpdateBroadcastRequest) {
  return {
    name: req.name,
    subject: req.subject,
    previewText: req.previewText,
    fromEmail: req.fromEmail,
    fromName: req.fromName,
    html: req.html,
    text: req.text,
    replyTo: req.replyTo,
    audience: req.audience ? audienceFromPb(req.audience) : undefined,
    settings: req.settings ? { trackOpens: req.settings.trackOpens, trackClicks: req.settings.trackClicks } : undefined,
    allowUnknownVariables: req.allowUnknownVariables,
    abTest: abTestFromPb(req.abTest),
  };
}

export function broadcastRoutes(broadcasts: Broadcasts) {
  return (router: ConnectRouter) =>
    router.service(BroadcastService, {
      async createBroadcast(req) {
        const created = await broadcasts.create(req.workspaceId, draftOf(req));
        return { broadcast: protoBroadcast(created.broadcast, created.audienceCount), variables: created.variables, warnings: created.warnings };
      },

      async getBroadcast(req) {
        if (!req.countAudience) return { broadcast: protoBroadcast(await broadcasts.get(req.workspaceId, req.id)) };
        const { broadcast, audienceCount } = await broadcasts.getCounted(req.workspaceId, req.id);
        return { broadcast: protoBroadcast(broadcast, audienceCount) };
      },

      async getBroadcastTopic(req) {
        return { topicId: await broadcasts.topicOf(req.workspaceId, req.id) };
      },

      async listBroadcasts(req) {
        const page = await broadcasts.list(req.workspaceId, {
          status: enumName(PbStatus, req.status, "status"),
          limit: req.page?.limit,
          cursor: req.page?.cursor,
        });
        return { broadcasts: page.items.map(protoBroadcast), page: { nextCursor: page.cursor, hasMore: page.hasMore } };
      },

      async sendTest(req) {
        const { broadcast, sentTo } = await broadcasts.sendTest(req.workspaceId, req.id, req.emails);
        return { broadcast: protoBroadcast(broadcast), sentTo };
      },

      async scheduleBroadcast(req) {
        const { broadcast, warnings } = await broadcasts.schedule(req.workspaceId, req.id, {
          sendAt: req.sendAt ? timestampDate(req.sendAt) : undefined,
          deliveryMethod: enumName(PbMethod, req.deliveryMethod, "deliveryMethod"),
          // The sending's traces link to this request's (nothing while tracing is off).
          traceparent: currentTraceparent(),
        });
        return { broadcast: protoBroadcast(broadcast), warnings };
      },

      async updateBroadcast(req) {
        const updated = await broadcasts.update(req.workspaceId, req.id, draftOf(req));
        return { broadcast: protoBroadcast(updated.broadcast, updated.audienceCount), variables: updated.variables, warnings: updated.warnings };
      },

      async previewBroadcast(req) {
        return broadcasts.preview(req.workspaceId, req.id, req.contactEmail, req.variant);
      },

      async getBroadcastTimeline(req) {
        const points = await broadcasts.timeline(req.workspaceId, req.id);
        return {
          points: points.map((p) => ({
            at: timestampFromDate(p.at),
            sent: BigInt(p.sent),
            delivered: BigInt(p.delivered),
            opened: BigInt(p.opened),
            clicked: BigInt(p.clicked),
            bounced: BigInt(p.bounced),
            planned: BigInt(p.planned),
          })),
        };
      },

      async cancelBroadcast(req) {
        return { broadcast: protoBroadcast(await broadcasts.cancel(req.workspaceId, req.id)) };
      },

      async chooseAbWinner(req) {
        return { broadcast: protoBroadcast(await broadcasts.chooseWinner(req.workspaceId, req.id, req.variant, currentTraceparent())) };
      },
    });
}
