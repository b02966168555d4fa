import { AppError, badRequest } from "@mailroom/kit/errors.js";
import { checkListLimit } from "./contacts.js";
import type { Contact } from "@mailroom/records/model.js";
import type { AudienceLookups, AudienceQueries, ResolvedAudience } from "@mailroom/records/audience-ports.js";
import type { Segments } from "./segments.js";
import { requireWorkspaceId } from "@mailroom/records/validation.js";
import type { WorkspaceLookup } from "@mailroom/records/account-ports.js";

/** A broadcast audience as asked (DESIGN §9.4). Filters are parsed JSON. */
export interface AudienceSpec {
  all?: boolean;
  groups?: string[];
  segmentId?: string;
  filter?: unknown;
  exclude?: { groups?: string[]; segmentId?: string; filter?: unknown };
  topicId?: string;
}

export interface ResolveOptions {
  /**
   * Sending: a group deleted since the broadcast was written has no members (its contacts are
   * neither in nor excluded) instead of failing the send with audience_not_found.
   */
  missingGroupsEmpty?: boolean;
}

export const STREAM_DEFAULT_BATCH = 1_000;
export const STREAM_MAX_BATCH = 5_000;
const MAX_GROUPS = 100;

const invalidAudience = (message: string) => badRequest("invalid_audience", message);
const audienceNotFound = (message: string) => badRequest("audience_not_found", message);

/**
 * Broadcast audiences: exactly one of `{ all }`, `{ groups }` (their union), `{ segmentId }`,
 * `{ filter }`, optionally `exclude` and `topicId`. Always only SUBSCRIBED contacts; minus those
 * opted out of the topic (an OPT_IN topic needs `topics.<id>` true, an OPT_OUT topic only not
 * false); minus suppressed addresses (counted here; a stream leaves them to the sender, which
 * checks every page and again at release). An unknown group, segment or topic is 400
 * `audience_not_found`.
 */
export class Audiences {
  constructor(
    private readonly queries: AudienceQueries,
    private readonly lookups: AudienceLookups,
    private readonly segments: Segments,
    private readonly workspaces: WorkspaceLookup,
  ) {}

  /** Names resolved, filters validated; throws invalid_audience, invalid_filter, audience_not_found. */
  async resolve(workspaceId: string, spec: AudienceSpec, opts: ResolveOptions = {}): Promise<ResolvedAudience> {
    requireWorkspaceId(workspaceId);
    await this.workspaces.get(workspaceId);
    if (!spec || typeof spec !== "object") throw invalidAudience("audience is required");
    const forms = [spec.all === true, (spec.groups?.length ?? 0) > 0, Boolean(spec.segmentId), spec.filter !== undefined].filter(Boolean).length;
    if (forms !== 1) throw invalidAudience("audience must have exactly one of all (true), groups, segmentId, filter");
    let include: ResolvedAudience["include"];
    if (spec.all) include = { all: true };
    else if (spec.groups?.length) include = { groupIds: await this.groupIds(workspaceId, spec.groups, "groups", opts) };
    else if (spec.segmentId) include = { filter: await this.segmentFilter(workspaceId, spec.segmentId, "segmentId") };
    else include = { filter: await this.checked(workspaceId, spec.filter, "filter") };

    const exclude: ResolvedAudience["exclude"] = { groupIds: [], filters: [] };
    if (spec.exclude !== undefined) {
      if (!spec.exclude || typeof spec.exclude !== "object") throw invalidAudience("exclude must be an object");
      if (spec.exclude.groups?.length) exclude.groupIds = await this.groupIds(workspaceId, spec.exclude.groups, "exclude.groups", opts);
      if (spec.exclude.segmentId) exclude.filters.push(await this.segmentFilter(workspaceId, spec.exclude.segmentId, "exclude.segmentId"));
      if (spec.exclude.filter !== undefined) exclude.filters.push(await this.checked(workspaceId, spec.exclude.filter, "exclude.filter"));
    }

    const resolved: ResolvedAudience = { include, exclude };
    if (spec.topicId) {
      const topic = await this.lookups.topic(workspaceId, spec.topicId);
      if (!topic) throw audienceNotFound(`topicId: topic "${spec.topicId}" not found`);
      resolved.topic = topic;
    }
    return resolved;
  }

  /** How many contacts the audience holds now (suppressed addresses left out). */
  async count(workspaceId: string, spec: AudienceSpec): Promise<number> {
    const audience = await this.resolve(workspaceId, spec);
    const [all, suppressed] = await Promise.all([this.queries.count(workspaceId, audience), this.queries.countSuppressed(workspaceId, audience)]);
    return Math.max(0, all - suppressed);
  }

  /** The audience in contact-id order after `afterId`, one store page at a time. */
  async *stream(workspaceId: string, spec: AudienceSpec, opts: ResolveOptions & { afterId?: string; batchSize?: number } = {}): AsyncGenerator<Contact[]> {
    const batchSize = checkListLimit(opts.batchSize, STREAM_MAX_BATCH, STREAM_DEFAULT_BATCH);
    const audience = await this.resolve(workspaceId, spec, opts);
    let after = opts.afterId || undefined;
    for (;;) {
      const items = await this.queries.page(workspaceId, audience, { after, limit: batchSize });
      if (items.length) yield items;
      if (items.length < batchSize) return;
      after = items[items.length - 1]._id;
    }
  }

  private async groupIds(workspaceId: string, given: string[], path: string, opts: ResolveOptions): Promise<string[]> {
    if (given.length > MAX_GROUPS) throw invalidAudience(`${path}: at most ${MAX_GROUPS} groups`);
    const ids = new Set<string>();
    for (const [i, name] of given.entries()) {
      if (typeof name !== "string" || !name) throw invalidAudience(`${path}[${i}]: must be a group id or publicId`);
      const id = await this.lookups.groupIdOf(workspaceId, name);
      if (id) ids.add(id);
      else if (!opts.missingGroupsEmpty) throw audienceNotFound(`${path}[${i}]: group "${name}" not found`);
    }
    return [...ids];
  }

  private async segmentFilter(workspaceId: string, id: string, path: string): Promise<unknown> {
    const segment = await this.segments.find(workspaceId, id);
    if (!segment) throw audienceNotFound(`${path}: segment "${id}" not found`);
    return segment.filter;
  }

  /** Validates a filter of the audience; its errors name the path inside the audience. */
  private async checked(workspaceId: string, filter: unknown, path: string): Promise<unknown> {
    if (filter === null || typeof filter !== "object" || Array.isArray(filter)) throw badRequest("invalid_filter", `${path}: must be an object`);
    try {
      await this.queries.checkFilter(workspaceId, filter);
    } catch (err) {
      if (err instanceof AppError && err.code === "invalid_filter" && path !== "filter" && err.message.startsWith("filter")) {
        throw badRequest("invalid_filter", `${path}${err.message.slice("filter".length)}`);
      }
      throw err;
    }
    return filter;
  }
}
