/**
 * Seeding of the audience benchmark (bench/audience.ts), in a child process: the contacts, their
 * engagement records and totals through the audience unit's own adapters, then each case's store
 * plan and the store's own full scan in process. Kept apart from the measurements of the audience unit.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { monotonicFactory } from "ulidx";
import { openLmdbStore, planQuery, type IndexDef, type LmdbStore, type Plan } from "@mailroom/store/lmdb.js";
import type { Collection, Doc, Filter, FindOptions, Store } from "@mailroom/store/port.js";
import { ContactStore } from "../services/audience/src/adapters/contact-store.js";
import { ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION, ENGAGEMENT_RECENT_COLLECTION, RECENT_MAX, EngagementStore, engagementId, engagementTotalId, engagementRecentId, type EngagementRecord, type EngagementTotal, type EngagementRecent } from "../services/audience/src/adapters/engagement-store.js";
import { GroupStore, GroupMembershipStore } from "../services/audience/src/adapters/group-store.js";
import { PropertyStore } from "../services/audience/src/adapters/property-store.js";
import { ContactFilters } from "../services/audience/src/adapters/contact-filter.js";
import { DAY_MIN_EVENTS, HISTORY_DAYS } from "../services/audience/src/domain/best-hour.js";
import { AudienceStore } from "../services/audience/src/adapters/audience-store.js";
import type { ResolvedAudience } from "@mailroom/records/audience-ports.js";
import { scopedId, type Contact } from "@mailroom/records/model.js";
import type { PostgresStore } from "@mailroom/store/postgres.js";

export const WS = "ws_bench_audience";
const GROUP_ID = "grp_bench0000000000000000000001";
export const GROUP_PUBLIC_ID = "bench-customers";
const PLANS = ["free", "starter", "basic", "gold", "team", "pro", "business", "enterprise", "trial", "legacy"];
export const SEGMENT_FILTER = { "properties.plan": "gold" };
export const FULL_SCAN_FILTER = { email: { $contains: "@" } };
export const ENGAGEMENT_FILTER = { $engagement: { event: "opened", since: { $ago: "P30D" } } };
const DAY = 86_400_000;
const CONTACT_BATCH = 10_000;
const EVENT_BATCH = 20_000;
/** Events per contact and broadcast: delivered, 1 in 4 opened, 1 in 20 clicked. */
const EVENTS_PER_SEND = 1.3;
export const STREAM_BATCH = 1_000;

export type CaseName = "full-scan" | "segment" | "group" | "engagement" | "engagement-broadcasts";
export const CASES: CaseName[] = ["full-scan", "segment", "group", "engagement", "engagement-broadcasts"];

export const TARGETS: Record<CaseName, { countMs?: number; streamPerSecond?: number }> = {
  "full-scan": {},
  segment: { countMs: 1_000, streamPerSecond: 100_000 },
  group: { countMs: 1_000, streamPerSecond: 100_000 },
  engagement: { countMs: 2_000 },
  "engagement-broadcasts": { countMs: 2_000 },
};
export const ANON_TARGET_MB = 300;

const broadcastId = (b: number) => `brd_bench_${String(b).padStart(3, "0")}`;

/** The last three broadcasts' "opened any of them" filter. */
export const lastBroadcastsFilter = (broadcasts: number) => ({
  $or: [broadcasts - 3, broadcasts - 2, broadcasts - 1].filter((b) => b >= 0).map((b) => ({ $engagement: { event: "opened", broadcastId: broadcastId(b) } })),
});

/** A well-mixed 32-bit hash of (contact, broadcast): who opened and clicked what. */
function mix(i: number, b: number): number {
  let h = Math.imul(i ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x27d4eb2d);
  h ^= h >>> 15;
  return h >>> 0;
}
const opened = (i: number, b: number) => mix(i, b) % 4 === 0;
const clicked = (i: number, b: number) => opened(i, b) && (mix(i, b) >>> 8) % 5 === 0;

// ---------------------------------------------------------------------------------------------
// Seeding (child process, before the audience unit starts on the same data dir)

export interface SeedResult {
  contacts: number;
  events: number;
  totals: number;
  broadcasts: number;
  contactSeconds: number;
  eventSeconds: number;
  storeMb: number;
  /** Documents + index entries per collection. */
  databases: string;
  expected: Record<CaseName, number>;
  /** Per case: what the audience unit's AudienceStore asks the store, and the plan it gets. */
  plans: Record<CaseName, string>;
  /** In process, no RPC: AudienceStore.count per case (ms) and what it answered. */
  inProcessCountMs: Record<CaseName, number>;
  inProcessCount: Record<CaseName, number>;
  /** The store's own full scan in process: AudienceStore.page over the full-scan audience. */
  storeScan: { contacts: number; ms: number };
  /** Engagement records by kind (what the seed wrote). */
  byKind: Record<string, number>;
  /** The record and total ids as EngagementStore.record builds them. */
  layout: string;
  /** Subscribed contacts with enough opens and clicks in the last 90 days for a best-hour plan. */
  expectedPlanned?: number;
}

function contactDoc(i: number, id: string, createdAt: Date): Contact & { groups?: string[]; groupsAddedAt?: Record<string, Date> } {
  const email = `user${i}.${(i * 7919) % 100_003}@example${i % 97}.com`;
  const doc: Contact & { groups?: string[]; groupsAddedAt?: Record<string, Date> } = {
    _id: id,
    workspaceId: WS,
    email,
    emailLower: email,
    firstName: `First${i % 5000}`,
    lastName: `Last${i % 7000}`,
    timezone: "",
    status: i % 20 === 19 ? "UNSUBSCRIBED" : "SUBSCRIBED",
    source: "CSV_IMPORT",
    properties: { plan: PLANS[i % PLANS.length], seats: i % 50, company: `Company ${i % 20_000}` },
    createdAt,
    updatedAt: createdAt,
  };
  if (i % 10 === 7) {
    doc.groups = [GROUP_ID];
    doc.groupsAddedAt = { [GROUP_ID]: createdAt };
  }
  return doc;
}

const sortedKeys = (doc: object) => Object.keys(doc).sort().join(",");

/** `target`: the audience unit's LMDB folder, or (BENCH_STORE=postgres) the run's database URL. */
export async function seedChild(target: string, n: number, e: number): Promise<SeedResult> {
  const onPostgres = /^postgres(ql)?:/.test(target);
  const dir = target;
  let store: LmdbStore | PostgresStore;
  if (onPostgres) {
    const { openPostgresStore } = await import("@mailroom/store/postgres.js");
    // The schema the audience unit opens (openStore's `mailroom_<service>`).
    store = await openPostgresStore({ url: target, service: "audience" });
  } else {
    await mkdir(dir, { recursive: true });
    store = await openLmdbStore({ dir });
  }
  // The adapters create the collections' indexes exactly as the audience unit does.
  const [contactStore, engagement, groups] = await Promise.all([ContactStore.open(store), EngagementStore.open(store), GroupStore.open(store)]);
  const [properties] = await Promise.all([PropertyStore.open(store), GroupMembershipStore.open(store)]);
  // As an audience unit started on an empty store: nothing recorded before the recent times to add
  // (the marker is written, so the unit does not read the seeded records again at start).
  await engagement.backfillRecent(new Date(), HISTORY_DAYS);
  const now = Date.now();
  for (const [slug, type] of [["plan", "string"], ["seats", "number"], ["company", "string"]] as const) {
    await properties.insert({ _id: scopedId(WS, slug), publicId: `cpr_bench${slug}`, workspaceId: WS, slug, type, createdAt: new Date(now), updatedAt: new Date(now) });
  }
  await groups.insert({ _id: GROUP_ID, workspaceId: WS, publicId: GROUP_PUBLIC_ID, displayName: "Bench customers", createdAt: new Date(now) });

  // Contacts: ids as the audience unit makes them (ctc_ + lowercase ULID), in creation order.
  const ulid = monotonicFactory(() => Math.random());
  const base = now - 400 * DAY;
  const ids: string[] = new Array(n);
  for (let i = 0; i < n; i++) ids[i] = `ctc_${ulid(base + i).toLowerCase()}`;
  const contacts = store.collection<Doc>("contacts");
  let started = performance.now();
  await contactStore.insert(contactDoc(0, ids[0], new Date(base)));
  for (let from = 1; from < n; from += CONTACT_BATCH) {
    const docs: Doc[] = [];
    for (let i = from; i < Math.min(n, from + CONTACT_BATCH); i++) docs.push(contactDoc(i, ids[i], new Date(base + i)) as unknown as Doc);
    await contacts.insertMany(docs);
  }
  const contactSeconds = (performance.now() - started) / 1000;

  // Engagement: B weekly broadcasts to everyone, plus an older one to the first K contacts, so
  // that about E events are recorded. Broadcast b of `total` was sent (total - b) weeks ago.
  const full = Math.max(1, Math.floor(e / (EVENTS_PER_SEND * n)));
  const partial = Math.min(n, Math.max(0, Math.floor((e - full * EVENTS_PER_SEND * n) / EVENTS_PER_SEND)));
  const total = full + (partial > 0 ? 1 : 0);
  const first = partial > 0 ? 0 : -1; // the partial broadcast, if any, is the oldest (b = 0)
  const sentAt = (b: number) => now - (total - b) * 7 * DAY + 3_600_000;
  const since30 = now - 30 * DAY;
  const KINDS = ["clicked", "delivered", "opened"] as const;
  type Kind = (typeof KINDS)[number];
  /** When contact i had this event of broadcast b, or undefined. */
  const eventAt = (kind: Kind, i: number, b: number): number | undefined => {
    if (b === first && i >= partial) return undefined;
    if (kind === "delivered") return sentAt(b) + (mix(i, b) % 600_000);
    if (kind === "opened" ? !opened(i, b) : !clicked(i, b)) return undefined;
    return sentAt(b) + 600_000 + (mix(i, b + 1000) % 3_600_000) + (kind === "clicked" ? 60_000 : 0);
  };

  // The record ids as the adapter builds them (engagementId / engagementTotalId); their parts'
  // order, read from ids of placeholders, decides the order the records are generated in.
  const eventId = (kind: Kind, contact: string, bid: string) => engagementId({ workspaceId: WS, kind, broadcastId: bid, contactId: contact, messageId: bid });
  const totalId = (kind: Kind, contact: string) => engagementTotalId(WS, kind, contact);
  const eventTemplate = engagementId({ workspaceId: "{ws}", kind: "{kind}" as Kind, broadcastId: "{broadcast}", contactId: "{contact}", messageId: "{message}" });
  const totalTemplate = engagementTotalId("{ws}", "{kind}" as Kind, "{contact}");
  const eventColl = store.collection<Doc>(ENGAGEMENT_COLLECTION);
  const totalColl = store.collection<Doc>(ENGAGEMENT_TOTALS_COLLECTION);
  const recentColl = store.collection<Doc>(ENGAGEMENT_RECENT_COLLECTION);
  // Generated in the ids' order (appends to the documents tree): the loops nest as the parts
  // appear in the id.
  const nesting = (t: string, dims: string[]) =>
    dims.map((d) => ({ d, at: d === "broadcast" && !t.includes("{broadcast}") ? t.indexOf("{message}") : t.indexOf(`{${d}}`) })).sort((x, y) => x.at - y.at).map((x) => x.d);
  const eventDims = nesting(eventTemplate, ["kind", "broadcast", "contact"]);
  const totalDims = nesting(totalTemplate, ["kind", "contact"]);
  const size: Record<string, number> = { kind: KINDS.length, broadcast: total, contact: n };
  function* tuples(dims: string[]): Generator<Record<string, number>> {
    const at: Record<string, number> = {};
    function* level(k: number): Generator<Record<string, number>> {
      if (k === dims.length) return yield at;
      for (let v = 0; v < size[dims[k]]; v++) {
        at[dims[k]] = v;
        yield* level(k + 1);
      }
    }
    yield* level(0);
  }

  const expected: Record<CaseName, number> = { "full-scan": 0, segment: 0, group: 0, engagement: 0, "engagement-broadcasts": 0 };
  // The best-hour plan counts opens and clicks of the last 90 days (a margin for the minutes between seeding and planning).
  const since90 = now - HISTORY_DAYS * DAY + 3_600_000;
  let expectedPlanned = 0;
  for (let i = 0; i < n; i++) {
    if (i % 20 === 19) continue;
    expected["full-scan"]++;
    if (PLANS[i % PLANS.length] === "gold") expected.segment++;
    if (i % 10 === 7) expected.group++;
    let recent = false;
    let lastThree = false;
    for (let b = 0; b < total; b++) {
      const at = eventAt("opened", i, b);
      if (at === undefined) continue;
      if (at >= since30) recent = true;
      if (b >= total - 3) lastThree = true;
    }
    if (recent) expected.engagement++;
    if (lastThree) expected["engagement-broadcasts"]++;
    let engaged = 0;
    for (let b = 0; b < total; b++) {
      for (const kind of ["opened", "clicked"] as const) {
        const at = eventAt(kind, i, b);
        if (at !== undefined && at >= since90) engaged++;
      }
    }
    if (engaged >= DAY_MIN_EVENTS) expectedPlanned++;
  }

  // The first contact's events through the adapter's own write path (the layout's reference).
  for (const kind of KINDS) {
    for (let b = 0; b < total; b++) {
      const at = eventAt(kind, 0, b);
      if (at !== undefined) await engagement.record({ workspaceId: WS, contactId: ids[0], kind, messageId: broadcastId(b), broadcastId: broadcastId(b), at: new Date(at) });
    }
  }

  started = performance.now();
  const byKind: Record<string, number> = { clicked: 0, delivered: 0, opened: 0 };
  let events = 0;
  let totals = 0;
  let batch: Doc[] = [];
  const flush = async (coll: Collection<Doc>, force = false) => {
    if (batch.length >= EVENT_BATCH || (force && batch.length)) {
      await coll.insertMany(batch);
      batch = [];
    }
  };
  for (const t of tuples(eventDims)) {
    const kind = KINDS[t.kind];
    const at = eventAt(kind, t.contact, t.broadcast);
    if (at === undefined) continue;
    byKind[kind]++;
    events++;
    if (t.contact === 0) continue; // recorded above
    const bid = broadcastId(t.broadcast);
    const doc: EngagementRecord = {
      _id: eventId(kind, ids[t.contact], bid), workspaceId: WS, contactId: ids[t.contact], kind, messageId: bid, broadcastId: bid, at: new Date(at),
    };
    batch.push(doc as unknown as Doc);
    await flush(eventColl);
  }
  await flush(eventColl, true);
  for (const t of tuples(totalDims)) {
    const kind = KINDS[t.kind];
    const times: number[] = [];
    for (let b = 0; b < total; b++) {
      const at = eventAt(kind, t.contact, b);
      if (at !== undefined) times.push(at);
    }
    if (!times.length) continue;
    totals++;
    if (t.contact === 0) continue; // recorded above
    const doc: EngagementTotal = {
      _id: totalId(kind, ids[t.contact]), workspaceId: WS, contactId: ids[t.contact], kind, count: times.length,
      first: new Date(Math.min(...times)), last: new Date(Math.max(...times)),
    };
    batch.push(doc as unknown as Doc);
    await flush(totalColl);
  }
  await flush(totalColl, true);
  // Each contact's recent opens and clicks (what record() keeps for the best hour), in id order.
  let firstRecent = -1;
  for (let i = 0; i < n; i++) {
    const times: number[] = [];
    for (let b = 0; b < total; b++) {
      for (const kind of ["opened", "clicked"] as const) {
        const at = eventAt(kind, i, b);
        if (at !== undefined) times.push(Math.floor(at / 60_000));
      }
    }
    if (!times.length || i === 0) continue; // contact 0: recorded above
    if (firstRecent < 0) firstRecent = i;
    const doc: EngagementRecent = { _id: engagementRecentId(WS, ids[i]), workspaceId: WS, contactId: ids[i], times: times.slice(-RECENT_MAX) };
    batch.push(doc as unknown as Doc);
    await flush(recentColl);
  }
  await flush(recentColl, true);
  const eventSeconds = (performance.now() - started) / 1000;

  // The bulk documents are what the adapters write: contact 0 went through them.
  const check = async (what: string, coll: Collection<Doc>, id0: string, id1: string) => {
    const [viaAdapter] = await coll.find({ _id: id0 });
    const [bulk] = await coll.find({ _id: id1 });
    const strip = (d: Doc) => Object.fromEntries(Object.entries(d).filter(([k]) => k !== "groups" && k !== "groupsAddedAt"));
    if (!viaAdapter || !bulk || sortedKeys(strip(viaAdapter)) !== sortedKeys(strip(bulk))) {
      throw new Error(`seed: the bulk ${what} documents differ from the adapter's (${viaAdapter ? sortedKeys(viaAdapter) : `no ${id0}`} vs ${bulk ? sortedKeys(bulk) : `no ${id1}`})`);
    }
  };
  if (n > 1) {
    const b = total - 1;
    await check("contact", contacts, ids[0], ids[1]);
    await check("engagement record", eventColl, eventId("delivered", ids[0], broadcastId(b)), eventId("delivered", ids[1], broadcastId(b)));
    await check("engagement total", totalColl, totalId("delivered", ids[0]), totalId("delivered", ids[1]));
    if (firstRecent > 0) await check("recent opens and clicks", recentColl, engagementRecentId(WS, ids[0]), engagementRecentId(WS, ids[firstRecent]));
  }

  if (store.kind === "postgres") {
    const pgStore = store as PostgresStore;
    // As autovacuum would after a bulk load (off on this server): the planner's statistics.
    const analyzeStarted = performance.now();
    for (const name of ["contacts", ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION, ENGAGEMENT_RECENT_COLLECTION]) await pgStore.pool.query(`ANALYZE ${(pgStore.collection(name) as unknown as { table: string }).table}`);
    const analyzeSeconds = (performance.now() - analyzeStarted) / 1000;
    const { plans, inProcessCountMs, inProcessCount, storeScan } = await explainPostgres(pgStore, total);
    const sizes = await pgStore.pool.query(
      `SELECT c.relname AS name, pg_relation_size(c.oid) AS docs, pg_indexes_size(c.oid) AS idx, pg_total_relation_size(c.oid) AS total
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [pgStore.schemaName],
    );
    const mb = (v: unknown) => Math.round(Number(v) / 1024 / 1024);
    const byName = new Map(sizes.rows.map((r) => [r.name as string, r]));
    const databases = ["contacts", ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION, ENGAGEMENT_RECENT_COLLECTION]
      .map((name) => `${name} ${mb(byName.get(name)?.docs)} + ${mb(byName.get(name)?.idx)} MB`)
      .join(", ") + ` (table + indexes; ANALYZE ${analyzeSeconds.toFixed(1)} s)`;
    const storeMb = mb(sizes.rows.reduce((t, r) => t + Number(r.total), 0));
    await store.close();
    return { contacts: n, events, totals, broadcasts: total, contactSeconds, eventSeconds, storeMb, databases, expected, plans, inProcessCountMs, inProcessCount, storeScan, byKind, layout: `${eventTemplate} / ${totalTemplate}`, expectedPlanned };
  }
  const lmdbStore = store as LmdbStore;
  const { plans, inProcessCountMs, inProcessCount, storeScan } = await explain(lmdbStore, total);
  const storeMb = Math.round((await stat(path.join(dir, "store.mdb"))).size / 1024 / 1024);
  const pagesMb = (db: { getStats(): unknown }) => {
    const st = db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
    return Math.round(((st.treeBranchPageCount + st.treeLeafPageCount + st.overflowPages) * st.pageSize) / 1024 / 1024);
  };
  const databases = ["contacts", ENGAGEMENT_COLLECTION, ENGAGEMENT_TOTALS_COLLECTION, ENGAGEMENT_RECENT_COLLECTION]
    .map((name) => `${name} ${pagesMb(lmdbStore.open(name).docs)} + ${pagesMb(lmdbStore.open(name).index)} MB`)
    .join(", ");
  await store.close();
  return { contacts: n, events, totals, broadcasts: total, contactSeconds, eventSeconds, storeMb, databases, expected, plans, inProcessCountMs, inProcessCount, storeScan, byKind, layout: `${eventTemplate} / ${totalTemplate}`, expectedPlanned };
}

// ---------------------------------------------------------------------------------------------
// Plans: the queries the audience unit's AudienceStore makes, and what the store plans for them

interface Captured {
  op: string;
  filter: Filter;
  options?: FindOptions;
}

/** The store, with the `contacts` collection's find / countDocuments calls recorded. */
function capturingStore(store: Store, calls: Captured[]): Store {
  const wrap = (c: Collection<Doc>): Collection<Doc> =>
    new Proxy(c, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown;
        if (typeof value !== "function") return value;
        if (prop === "find" || prop === "countDocuments") {
          return (filter: Filter, options?: FindOptions) => {
            calls.push({ op: prop, filter, options });
            return (value as (f: Filter, o?: FindOptions) => unknown).call(target, filter, options);
          };
        }
        return (value as (...a: unknown[]) => unknown).bind(target);
      },
    });
  return new Proxy(store, {
    get(target, prop) {
      if (prop === "collection") return (name: string) => (name === "contacts" ? wrap(target.collection(name)) : target.collection(name));
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function describePlan(p: Plan): string {
  if (p.kind === "ids") return `_id gets (${p.ids!.length} ids)`;
  if (p.kind === "primary") return "the _id tree (every document)";
  const def = p.index!;
  const how = p.idOrder ? `, ${p.idOrder} in _id order` : p.ordered ? "" : ", unordered: every match collected and sorted";
  return `index {${def.fields.join(", ")}}${def.multikey ? " (multikey)" : ""}, ${p.ranges!.length} range(s)${how}`;
}

const AUDIENCES = (broadcasts: number): Record<CaseName, ResolvedAudience> => {
  const none = { groupIds: [], filters: [] };
  return {
    "full-scan": { include: { filter: FULL_SCAN_FILTER }, exclude: none },
    segment: { include: { filter: SEGMENT_FILTER }, exclude: none },
    group: { include: { groupIds: [GROUP_ID] }, exclude: none },
    engagement: { include: { filter: ENGAGEMENT_FILTER }, exclude: none },
    "engagement-broadcasts": { include: { filter: lastBroadcastsFilter(broadcasts) }, exclude: none },
  };
};

async function explain(store: LmdbStore, broadcasts: number) {
  const calls: Captured[] = [];
  const filters = await ContactFilters.open(store);
  const audiences = await AudienceStore.open(capturingStore(store, calls), filters.compileContactFilter);
  const indexes = ((store.meta.get("contacts") as { indexes: IndexDef[] } | undefined)?.indexes ?? []);
  const plans = {} as Record<CaseName, string>;
  const inProcessCountMs = {} as Record<CaseName, number>;
  const inProcessCount = {} as Record<CaseName, number>;
  let storeScan = { contacts: 0, ms: 0 };
  for (const [name, audience] of Object.entries(AUDIENCES(broadcasts)) as [CaseName, ResolvedAudience][]) {
    calls.length = 0;
    const started = performance.now();
    inProcessCount[name] = await audiences.count(WS, audience);
    inProcessCountMs[name] = Math.round(performance.now() - started);
    const first = await audiences.page(WS, audience, { limit: STREAM_BATCH });
    if (first.length) await audiences.page(WS, audience, { after: first[first.length - 1]._id, limit: STREAM_BATCH });
    const [count, page, next] = calls;
    const plan = (c: Captured | undefined) => (c ? describePlan(planQuery(c.filter, c.options?.sort, indexes)) : "not asked");
    plans[name] = `count → ${plan(count)}; first page → ${plan(page)}; next pages → ${plan(next)}`;
    if (name === "full-scan") {
      // The store's own full scan, in process: the same pages the audience unit reads, no RPC.
      storeScan = await timeStoreScan(audiences, audience);
    }
  }
  return { plans, inProcessCountMs, inProcessCount, storeScan };
}

/**
 * PostgreSQL's side of explain(): the AudienceStore's count and pages per case, in process, with
 * every statement the pool runs timed; the slowest statement of the count and of the first page
 * is run again under EXPLAIN (ANALYZE, BUFFERS) and its plan printed in one line.
 */
async function explainPostgres(store: PostgresStore, broadcasts: number) {
  const statements: { sql: string; values: unknown[]; ms: number }[] = [];
  const pool = store.pool as unknown as { query: (sql: string, values?: unknown[]) => Promise<unknown> };
  const query = pool.query.bind(pool);
  pool.query = async (sql: string, values?: unknown[]) => {
    const started = performance.now();
    try {
      return await query(sql, values);
    } finally {
      statements.push({ sql, values: values ?? [], ms: performance.now() - started });
    }
  };
  const filters = await ContactFilters.open(store);
  const audiences = await AudienceStore.open(store, filters.compileContactFilter);
  const plans = {} as Record<CaseName, string>;
  const inProcessCountMs = {} as Record<CaseName, number>;
  const inProcessCount = {} as Record<CaseName, number>;
  let storeScan = { contacts: 0, ms: 0 };
  const slowest = () => statements.reduce<(typeof statements)[number] | undefined>((a, b) => (!a || b.ms > a.ms ? b : a), undefined);
  const explainOne = async (st: (typeof statements)[number] | undefined) => {
    if (!st) return "no statement";
    const { rows } = (await query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) ${st.sql}`, st.values)) as { rows: Record<string, string>[] };
    const lines = rows.map((r) => Object.values(r)[0]);
    // One line: the plan's nodes without their cost estimates, then its execution time.
    const nodes = lines
      .filter((l) => /^\s*->|^\S/.test(l) && !/^(Planning|Execution|JIT)/.test(l.trim()))
      .map((l) => l.replace(/\s+\(cost=[^)]*\)/, "").replace(/\(actual time=[^ ]+ rows=(\d+) loops=(\d+)\)/, "[rows $1×$2]").replace(/->\s*/, "").trim());
    const execution = lines.find((l) => l.startsWith("Execution Time"))?.replace("Execution Time: ", "") ?? "?";
    return `${st.ms.toFixed(0)} ms: ${st.sql.replace(/\s+/g, " ").slice(0, 400)} — plan: ${nodes.join(" ← ")} (execution ${execution})`;
  };
  for (const [name, audience] of Object.entries(AUDIENCES(broadcasts)) as [CaseName, ResolvedAudience][]) {
    statements.length = 0;
    const started = performance.now();
    inProcessCount[name] = await audiences.count(WS, audience);
    inProcessCountMs[name] = Math.round(performance.now() - started);
    const countStatement = slowest();
    statements.length = 0;
    await audiences.page(WS, audience, { limit: STREAM_BATCH });
    const pageStatement = slowest();
    plans[name] = `count's slowest statement ${await explainOne(countStatement)}; first page's slowest statement ${await explainOne(pageStatement)}`;
    if (name === "full-scan") {
      storeScan = await timeStoreScan(audiences, audience);
    }
  }
  pool.query = query;
  return { plans, inProcessCountMs, inProcessCount, storeScan };
}

export function runSeedChild(dir: string, n: number, e: number): Promise<SeedResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", new URL("./audience.ts", import.meta.url).pathname, "--audience-seed", dir, String(n), String(e)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("exit", (code) => {
      const line = out.trim().split("\n").pop() ?? "";
      try {
        if (code === 0 && line.startsWith("{")) resolve(JSON.parse(line) as SeedResult);
        else reject(new Error(`seeding exited with ${code}: ${out.slice(-500)}`));
      } catch (err) {
        reject(err as Error);
      }
    });
  });
}

/**
 * BENCH_AUDIENCE_DIR: the seeded store is kept in <dir>/audience (with what the seeding
 * answered in <dir>/seed.json) and used again by later runs of the same size, so a change can
 * be measured again without seeding 1,000,000 contacts each time (a seed kept before the
 * directory unit was split, in <dir>/directory, is made again). The run's audience unit reads
 * and writes it (each run adds its segment); the seeding's in-process figures are the first run's.
 */
export async function keptSeed(keep: string, dataDir: string, n: number, e: number): Promise<SeedResult> {
  const seedFile = path.join(keep, "seed.json");
  let seed: SeedResult | undefined;
  try {
    const kept = JSON.parse(readFileSync(seedFile, "utf8")) as SeedResult & { askedEvents?: number };
    // A seed from before the recent opens and clicks were kept (no expectedPlanned) is made again.
    const stored = existsSync(path.join(keep, "audience"));
    if (stored && kept.contacts === n && kept.askedEvents === e && kept.expectedPlanned !== undefined) seed = kept;
  } catch {
    // none kept yet
  }
  if (seed) console.log(`  using the store seeded in ${keep} (BENCH_AUDIENCE_DIR); its in-process figures are from the seeding run`);
  else {
    await rm(path.join(keep, "audience"), { recursive: true, force: true });
    seed = await runSeedChild(path.join(keep, "audience"), n, e);
    await writeFile(seedFile, JSON.stringify({ ...seed, askedEvents: e }));
  }
  await symlink(path.join(keep, "audience"), path.join(dataDir, "audience"));
  return seed;
}

async function timeStoreScan(audiences: AudienceStore, audience: Parameters<AudienceStore["page"]>[1]): Promise<{ contacts: number; ms: number }> {
  const started = performance.now();
  let after: string | undefined;
  let contacts = 0;
  for (;;) {
    const items = await audiences.page(WS, audience, { after, limit: STREAM_BATCH });
    contacts += items.length;
    if (items.length < STREAM_BATCH) break;
    after = items[items.length - 1]._id;
  }
  return { contacts, ms: Math.round(performance.now() - started) };
}
