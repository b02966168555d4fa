import type { Contact } from "./model.js";

/**
 * What segments and audiences (DESIGN §9.4) need from the outside world. The store adapters
 * implement them (adapters/segment-store.ts, adapters/audience-store.ts); unit tests run them
 * over the in-memory store.
 */

/** A saved filter (collection `segments`). */
export interface Segment {
  _id: string;
  workspaceId: string;
  name: string;
  /** The JSON filter as given. */
  filter: unknown;
  createdAt: Date;
  updatedAt: Date;
}

export interface SegmentRepository {
  insert(segment: Segment): Promise<void>;
  find(workspaceId: string, id: string): Promise<Segment | null>;
  /** Id (creation) order after `after` (exclusive). */
  page(workspaceId: string, opts: { after?: string; limit: number }): Promise<Segment[]>;
  update(workspaceId: string, id: string, changes: Partial<Pick<Segment, "name" | "filter" | "updatedAt">>): Promise<Segment | null>;
  delete(workspaceId: string, id: string): Promise<boolean>;
}

export type TopicDefault = "OPT_IN" | "OPT_OUT";

/** Groups and topics as audiences read them (their owners write them). */
export interface AudienceLookups {
  /** The group's id (`grp_…`) for an id or a publicId of the workspace; undefined when none. */
  groupIdOf(workspaceId: string, idOrPublicId: string): Promise<string | undefined>;
  topic(workspaceId: string, id: string): Promise<{ id: string; defaultSubscription: TopicDefault } | null>;
}

/**
 * An audience with every name resolved: who is in, who is taken out again, and the topic whose
 * opt-outs are left out. Filters are JSON as given (the query adapter compiles them).
 */
export interface ResolvedAudience {
  include: { all: true } | { groupIds: string[] } | { filter: unknown };
  exclude: { groupIds: string[]; filters: unknown[] };
  topic?: { id: string; defaultSubscription: TopicDefault };
}

/**
 * Queries over the contacts: one store filter per question, paged by `_id > last`, so no answer
 * ever holds more than a page of contacts.
 */
export interface AudienceQueries {
  /** Throws `invalid_filter` (400, naming the path) when the filter is not valid for the workspace. */
  checkFilter(workspaceId: string, filter: unknown): Promise<void>;
  /** Contacts of any status a filter matches. */
  countFilter(workspaceId: string, filter: unknown): Promise<number>;
  pageFilter(workspaceId: string, filter: unknown, opts: { after?: string; limit: number }): Promise<Contact[]>;
  /** SUBSCRIBED contacts in the audience, topic opt-outs left out (suppressions not applied). */
  count(workspaceId: string, audience: ResolvedAudience): Promise<number>;
  page(workspaceId: string, audience: ResolvedAudience, opts: { after?: string; limit: number }): Promise<Contact[]>;
  /** How many of `count`'s contacts have a suppressed address. */
  countSuppressed(workspaceId: string, audience: ResolvedAudience): Promise<number>;
}
