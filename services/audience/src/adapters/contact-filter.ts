import type { Filter, Store } from "@mailroom/store/port.js";
import { badRequest } from "@mailroom/kit/errors.js";
import {
  engagementConditions, engagementKey, parseFilter, referencedGroups, toStoreFilter, MAX_LIST, type EngagementCondition, type PropertyType,
} from "@mailroom/filter/filter.js";
import type { ContactProperty } from "@mailroom/records/model.js";
import { EngagementStore } from "./engagement-store.js";
import type { Stored } from "@mailroom/records/documents.js";

/** Longest filter accepted, as JSON text. */
export const MAX_FILTER_JSON = 32_768;
/**
 * A filter is compiled once and reused for this long: an export, a listing or a segment's
 * contacts ask for page after page with the same filter, and resolving its engagement terms
 * each time would repeat the same reads. (Changes made meanwhile show in the next compilation.)
 */
const REUSE_MS = 5_000;
/**
 * Contact ids the `$engagement` terms of one filter may resolve to on MongoDB: they travel in
 * the query as `_id` `$in` lists, and a query over 16 MB is refused (about 40 bytes an id).
 * The embedded store has no such limit.
 */
export const MONGODB_ENGAGEMENT_IDS = 300_000;
const REUSE_MAX = 8;

/**
 * A JSON filter (DESIGN §9.4) as a store filter over one workspace's contacts (the caller adds
 * `workspaceId`); throws the bad-request `invalid_filter` (400) naming the JSON path. Takes the
 * JSON text (a query parameter) or the parsed value (a segment's stored filter).
 */
export type ContactFilterCompiler = (workspaceId: string, filter: unknown) => Promise<Filter>;

interface GroupDoc {
  _id: string;
  workspaceId: string;
  publicId: string;
}

const invalid = (message: string) => badRequest("invalid_filter", message);

/**
 * The one filter compiler: loads the workspace's custom properties (their types)
 * and the groups the filter names, parses with @mailroom/filter, resolves each `$engagement`
 * term to its contact ids from the engagement records, and compiles.
 */
export class ContactFilters {
  private constructor(
    private readonly store: Store,
    readonly engagement: EngagementStore,
    private readonly now: () => Date,
  ) {}

  private readonly recent = new Map<string, { at: number; filter: Promise<Filter> }>();

  static async open(store: Store, opts: { engagement?: EngagementStore; now?: () => Date } = {}): Promise<ContactFilters> {
    return new ContactFilters(store, opts.engagement ?? (await EngagementStore.open(store)), opts.now ?? (() => new Date()));
  }

  /** The compiler as a function (what the contact listing, export, segments and audiences call). */
  readonly compileContactFilter: ContactFilterCompiler = async (workspaceId, filter) => {
    const text = typeof filter === "string" ? filter : JSON.stringify(filter);
    if (text === undefined || text.length > MAX_FILTER_JSON) return this.compile(workspaceId, filter);
    const key = `${workspaceId}\n${typeof filter === "string" ? "t" : "v"}${text}`;
    const now = Date.now();
    // Expired compilations go at once: each may hold large lists of contact ids.
    for (const [k, entry] of this.recent) if (now - entry.at >= REUSE_MS) this.recent.delete(k);
    const hit = this.recent.get(key);
    if (hit) return hit.filter;
    const compiled = this.compile(workspaceId, filter);
    const entry = { at: now, filter: compiled };
    this.recent.set(key, entry);
    if (this.recent.size > REUSE_MAX) this.recent.delete(this.recent.keys().next().value!);
    // Reused for REUSE_MS from when it is ready (resolving a large workspace's terms takes a while).
    compiled.then(() => (entry.at = Date.now()), () => this.recent.delete(key));
    return compiled;
  };

  private async compile(workspaceId: string, filter: unknown): Promise<Filter> {
    let input = filter;
    if (typeof filter === "string") {
      if (filter.length > MAX_FILTER_JSON) throw invalid(`filter: at most ${MAX_FILTER_JSON} characters of JSON`);
      try {
        input = JSON.parse(filter);
      } catch (err) {
        throw invalid(`filter: not valid JSON (${(err as Error).message})`);
      }
    }
    const names = referencedGroups(input).slice(0, MAX_LIST * 4);
    const [properties, groups] = await Promise.all([
      this.store.collection<Stored<ContactProperty>>("contact_properties").find({ workspaceId }),
      names.length
        ? this.store.collection<Stored<GroupDoc>>("groups").find({ workspaceId, $or: [{ _id: { $in: names } }, { publicId: { $in: names } }] })
        : Promise.resolve([]),
    ]);
    const types = new Map<string, PropertyType>(properties.map((p) => [p.slug, p.type]));
    const groupIds = new Map<string, string>();
    for (const g of groups) groupIds.set(g.publicId, g._id);
    for (const g of groups) groupIds.set(g._id, g._id); // an id wins over a publicId spelled like one
    const parsed = parseFilter(input, { properties: types, groupIdOf: (name) => groupIds.get(name), now: this.now() });
    if (!parsed.ok) throw invalid(parsed.error.message);
    const conditions = engagementConditions(parsed.filter);
    // Each term's contacts as one sorted, frozen list: the compiled filter's `_id` `$in` holds
    // that very list (no copy), and the store sorts and indexes a frozen list only once.
    const lists = new Map<string, readonly string[]>(
      await Promise.all(conditions.map(async (c): Promise<[string, readonly string[]]> => [engagementKey(c), await this.engagement.contactsWith(workspaceId, c)])),
    );
    if (this.store.kind === "mongodb") {
      // The resolved ids travel inside the query, and MongoDB refuses a query over 16 MB.
      const ids = [...lists.values()].reduce((n, list) => n + list.length, 0);
      if (ids > MONGODB_ENGAGEMENT_IDS) {
        throw invalid(`filter: its $engagement terms resolve to ${ids} contact ids, more than one MongoDB query can name (${MONGODB_ENGAGEMENT_IDS}); narrow them (a shorter since, one broadcast, a higher min)`);
      }
    }
    return toStoreFilter(parsed.filter, { engagement: (c: EngagementCondition) => lists.get(engagementKey(c)) ?? [] });
  }
}
