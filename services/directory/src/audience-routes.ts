import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AudienceService, type AudienceMemberSchema, type SegmentSchema } from "../../../gen/mailroom/directory/v1/audiences_pb.js";
import type { Audience as PbAudience } from "../../../gen/mailroom/common/v1/common_pb.js";
import { badRequest } from "@mailroom/kit/errors.js";
import { contactToPb } from "./routes.js";
import type { Segment } from "./domain/audience-ports.js";
import type { Contact } from "./domain/model.js";
import type { Segments } from "./domain/segments.js";
import type { Audiences, AudienceSpec } from "./domain/audiences.js";

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

export function audienceService(segments: Segments, audiences: Audiences): ServiceImpl<typeof AudienceService> {
  return {
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

export function audienceRoutes(segments: Segments, audiences: Audiences) {
  return (router: ConnectRouter) => {
    router.service(AudienceService, audienceService(segments, audiences));
  };
}
