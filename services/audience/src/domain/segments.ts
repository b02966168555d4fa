import { newId } from "@mailroom/kit/ids.js";
import { badRequest, notFound } from "@mailroom/kit/errors.js";
import { checkListLimit } from "./contacts.js";
import type { Contact, Page } from "@mailroom/records/model.js";
import type { AudienceQueries, Segment, SegmentRepository } from "@mailroom/records/audience-ports.js";
import { requireWorkspaceId, systemClock, type Clock } from "@mailroom/records/validation.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";

export const SEGMENT_CURSOR = /^seg_[0-9a-z]{26}$/;
const CONTACT_CURSOR = /^ctc_[0-9a-z]{26}$/;
export const SEGMENT_NAME_MAX = 200;

export const segmentNotFound = (id: string) => notFound("segment_not_found", `Segment ${id} not found`);

function checkName(name: unknown): string {
  if (typeof name !== "string" || !name.trim()) throw badRequest("invalid_segment", "name is required");
  if (name.length > SEGMENT_NAME_MAX) throw badRequest("invalid_segment", `name must be at most ${SEGMENT_NAME_MAX} characters`);
  return name.trim();
}

function checkFilterShape(filter: unknown): void {
  if (filter === undefined || filter === null) throw badRequest("invalid_filter", "filter: is required");
  if (typeof filter !== "object" || Array.isArray(filter)) throw badRequest("invalid_filter", "filter: must be an object");
}

/**
 * Segments: saved filters (DESIGN §9.4). The filter is validated when written (400
 * `invalid_filter` naming its path) and stored as given; counts and listings run it as one
 * store query at the moment asked, so they are always exact and current.
 */
export class Segments {
  constructor(
    private readonly repo: SegmentRepository,
    private readonly queries: AudienceQueries,
    private readonly workspaces: WorkspaceLookup,
    private readonly now: Clock = systemClock,
  ) {}

  async create(workspaceId: string, input: { name: unknown; filter: unknown }): Promise<Segment> {
    await this.workspaces.get(requireWorkspaceId(workspaceId));
    const name = checkName(input.name);
    checkFilterShape(input.filter);
    await this.queries.checkFilter(workspaceId, input.filter);
    const at = this.now();
    const segment: Segment = { _id: newId("seg"), workspaceId, name, filter: input.filter, createdAt: at, updatedAt: at };
    await this.repo.insert(segment);
    return segment;
  }

  async get(workspaceId: string, id: string): Promise<Segment> {
    requireWorkspaceId(workspaceId);
    const segment = typeof id === "string" && id ? await this.repo.find(workspaceId, id) : null;
    if (!segment) throw segmentNotFound(id);
    return segment;
  }

  /** The segment, or null (audiences answer audience_not_found themselves). */
  find(workspaceId: string, id: string): Promise<Segment | null> {
    return this.repo.find(requireWorkspaceId(workspaceId), id);
  }

  async list(workspaceId: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Segment>> {
    requireWorkspaceId(workspaceId);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !SEGMENT_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.repo.page(workspaceId, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }

  /** Renames and/or replaces the filter (each only when given). */
  async update(workspaceId: string, id: string, patch: { name?: unknown; filter?: unknown }): Promise<Segment> {
    const current = await this.get(workspaceId, id);
    const changes: Partial<Pick<Segment, "name" | "filter" | "updatedAt">> = {};
    if (patch.name !== undefined) changes.name = checkName(patch.name);
    if (patch.filter !== undefined) {
      checkFilterShape(patch.filter);
      await this.queries.checkFilter(workspaceId, patch.filter);
      changes.filter = patch.filter;
    }
    if (!Object.keys(changes).length) return current;
    changes.updatedAt = this.now();
    const updated = await this.repo.update(workspaceId, id, changes);
    if (!updated) throw segmentNotFound(id);
    return updated;
  }

  async delete(workspaceId: string, id: string): Promise<Segment> {
    const segment = await this.get(workspaceId, id);
    if (!(await this.repo.delete(workspaceId, id))) throw segmentNotFound(id);
    return segment;
  }

  /** Exact, at the moment asked: every contact the filter matches (any status). */
  async count(workspaceId: string, id: string): Promise<number> {
    const segment = await this.get(workspaceId, id);
    return this.queries.countFilter(workspaceId, segment.filter);
  }

  async contacts(workspaceId: string, id: string, opts: { limit?: number; cursor?: string } = {}): Promise<Page<Contact>> {
    const segment = await this.get(workspaceId, id);
    const limit = checkListLimit(opts.limit, 100, 20);
    if (opts.cursor && !CONTACT_CURSOR.test(opts.cursor)) throw badRequest("invalid_cursor", "cursor is not one this API returned");
    const docs = await this.queries.pageFilter(workspaceId, segment.filter, { after: opts.cursor || undefined, limit: limit + 1 });
    const hasMore = docs.length > limit;
    const items = hasMore ? docs.slice(0, limit) : docs;
    return { items, hasMore, nextCursor: hasMore ? items[items.length - 1]._id : "" };
  }
}
