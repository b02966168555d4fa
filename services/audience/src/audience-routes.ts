import { Code, ConnectError, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AudienceService, BestHourBasis, type AudienceMemberSchema, type SegmentSchema } from "@mailroom/proto/audience/v1/audiences_pb.js";
import type { Audience as PbAudience } from "@mailroom/proto/common/v1/common_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { contactToPb } from "./contact-routes.js";
import type { Segment } from "@mailroom/records/audience-ports.js";
import type { Contact } from "@mailroom/records/model.js";
import type { Segments } from "./domain/segments.js";
import type { Audiences, AudienceSpec } from "./domain/audiences.js";
import type { EngagementRecord } from "./adapters/engagement-store.js";
import { PLAN_MAX_CONTACTS, planBestHours, type EngagementTimes } from "./domain/best-hour.js";

/** A contact's engagement records, newest first (the engagement store; absent in some tests). */
export interface ContactEngagementReader {
  listForContact(workspaceId: string, contactId: string, page: { limit: number; after?: { at: Date; id: string } }): Promise<EngagementRecord[]>;
  /** Opens and clicks of contacts since a time (PlanBestHours); absent: no plans (every contact as SMART). */
  engagedTimes?: EngagementTimes["engagedTimes"];
}

const ENGAGEMENT_PAGE = { default: 50, max: 200 };
const BASIS_TO_PB = { none: BestHourBasis.NONE, day: BestHourBasis.DAY, week: BestHourBasis.WEEK } as const;
/** The engagement cursor: the last record's time and id, base64url JSON. */
const engagementCursor = (r: EngagementRecord) => Buffer.from(JSON.stringify([r.at.getTime(), r._id])).toString("base64url");
function readEngagementCursor(cursor: string): { at: Date; id: string } | undefined {
  if (!cursor) return undefined;
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (typeof at === "number" && Number.isFinite(at) && typeof id === "string" && id) return { at: new Date(at), id };
  } catch { /* below */ }
  throw badRequest("invalid_request", "cursor is not a cursor this list returned");
}

/** Proto ⇄ domain mapping of AudienceService (segments and broadcast audiences); the rules live in the domain. */

/** Filters travel as JSON text; text that is not JSON is an invalid filter at `path`. */
export function parseFilterJson(text: string, path: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw badRequest("invalid_filter", `${path}: not valid JSON`);
  }
}

/** A contact as a send merges it (StreamAudience with members_only). */
function memberToPb(c: Contact): MessageInitShape<typeof AudienceMemberSchema> {
  return {
    id: c._id,
    email: c.email,
    firstName: c.firstName,
    lastName: c.lastName,
    timezone: c.timezone,
    propertiesJson: c.properties ? JSON.stringify(c.properties) : "{}",
  };
}

export function audienceFromPb(a: PbAudience | undefined): AudienceSpec {
  if (!a) throw badRequest("invalid_audience", "audience is required");
  const spec: AudienceSpec = {};
  if (a.all) spec.all = true;
  if (a.groups.length) spec.groups = a.groups;
  if (a.segmentId) spec.segmentId = a.segmentId;
  if (a.filterJson) spec.filter = parseFilterJson(a.filterJson, "filter");
  if (a.topicId) spec.topicId = a.topicId;
  const x = a.exclude;
  if (x && (x.groups.length || x.segmentId || x.filterJson)) {
    spec.exclude = {
      ...(x.groups.length ? { groups: x.groups } : {}),
      ...(x.segmentId ? { segmentId: x.segmentId } : {}),
      ...(x.filterJson ? { filter: parseFilterJson(x.filterJson, "exclude.filter") } : {}),
    };
  }
  return spec;
}

function segmentToPb(s: Segment): MessageInitShape<typeof SegmentSchema> {
  return {
    id: s._id,
    workspaceId: s.workspaceId,
    name: s.name,
    filterJson: JSON.stringify(s.filter),
    createdAt: timestampFromDate(new Date(s.createdAt)),
    updatedAt: timestampFromDate(new Date(s.updatedAt)),
  };
}

export function audienceService(segments: Segments, audiences: Audiences, engagement?: ContactEngagementReader): ServiceImpl<typeof AudienceService> {
  return {
    async listContactEngagement(req) {
      if (!engagement) throw new ConnectError("engagement records are not kept here", Code.Unimplemented);
      const requested = req.page?.limit ?? 0;
      if (requested < 0) throw badRequest("invalid_request", "limit must be positive");
      const limit = Math.min(requested || ENGAGEMENT_PAGE.default, ENGAGEMENT_PAGE.max);
      const rows = await engagement.listForContact(req.workspaceId, req.contactId, { limit: limit + 1, after: readEngagementCursor(req.page?.cursor ?? "") });
      const items = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      return {
        engagements: items.map((r) => ({ kind: r.kind, messageId: r.messageId, broadcastId: r.broadcastId, at: timestampFromDate(r.at) })),
        page: { hasMore, nextCursor: hasMore ? engagementCursor(items[items.length - 1]) : "" },
      };
    },
    async planBestHours(req) {
      if (req.contactIds.length > PLAN_MAX_CONTACTS) throw badRequest("invalid_request", `at most ${PLAN_MAX_CONTACTS} contacts per call`);
      if (!req.windowStart) throw badRequest("invalid_request", "windowStart is required");
      const windowStart = timestampDate(req.windowStart).getTime();
      const source: EngagementTimes = engagement?.engagedTimes ? (engagement as EngagementTimes) : { engagedTimes: async () => undefined };
      const plans = await planBestHours(source, {
        workspaceId: req.workspaceId,
        windowStart,
        defaultTimeZone: req.defaultTimeZone,
        contacts: req.contactIds.map((id, i) => ({ id, timeZone: req.timeZones[i] })),
        now: Date.now(),
      });
      return { dueInMs: plans.map((p) => (p.dueAt === undefined ? -1 : p.dueAt - windowStart)), basis: plans.map((p) => BASIS_TO_PB[p.basis]), events: plans.map((p) => p.events) };
    },
    async createSegment(req) {
      return { segment: segmentToPb(await segments.create(req.workspaceId, { name: req.name, filter: req.filterJson ? parseFilterJson(req.filterJson, "filter") : undefined })) };
    },
    async getSegment(req) {
      return { segment: segmentToPb(await segments.get(req.workspaceId, req.segmentId)) };
    },
    async listSegments(req) {
      const page = await segments.list(req.workspaceId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { segments: page.items.map(segmentToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async updateSegment(req) {
      const segment = await segments.update(req.workspaceId, req.segmentId, {
        name: req.name,
        filter: req.filterJson === undefined ? undefined : parseFilterJson(req.filterJson, "filter"),
      });
      return { segment: segmentToPb(segment) };
    },
    async deleteSegment(req) {
      return { segment: segmentToPb(await segments.delete(req.workspaceId, req.segmentId)) };
    },
    async countSegment(req) {
      return { count: BigInt(await segments.count(req.workspaceId, req.segmentId)) };
    },
    async listSegmentContacts(req) {
      const page = await segments.contacts(req.workspaceId, req.segmentId, { limit: req.page?.limit, cursor: req.page?.cursor });
      return { contacts: page.items.map(contactToPb), page: { nextCursor: page.nextCursor, hasMore: page.hasMore } };
    },
    async countAudience(req) {
      return { count: BigInt(await audiences.count(req.workspaceId, audienceFromPb(req.audience))) };
    },
    async *streamAudience(req) {
      const batches = audiences.stream(req.workspaceId, audienceFromPb(req.audience), {
        afterId: req.afterId || undefined,
        batchSize: req.batchSize || undefined,
        missingGroupsEmpty: req.missingGroupsEmpty,
      });
      for await (const contacts of batches) yield req.membersOnly ? { members: contacts.map(memberToPb) } : { contacts: contacts.map(contactToPb) };
    },
  };
}

export function audienceRoutes(segments: Segments, audiences: Audiences, engagement?: ContactEngagementReader) {
  return (router: ConnectRouter) => {
    router.service(AudienceService, audienceService(segments, audiences, engagement));
  };
}
