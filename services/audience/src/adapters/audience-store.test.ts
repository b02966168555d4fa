import { afterAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { openMemoryStore, openStore } from "@mailroom/store/open.js";
import type { Store } from "@mailroom/store/port.js";
import { storeDirectory } from "../testing.js";
import { ContactFilters } from "./contact-filter.js";
import { AudienceStore } from "./audience-store.js";
import { SegmentStore } from "./segment-store.js";
import { Segments } from "../domain/segments.js";
import { Audiences, type AudienceSpec } from "../domain/audiences.js";

/**
 * Audience resolution over real store adapters (the in-memory one and the embedded LMDB store):
 * every audience form, exclusions, topic defaults both ways, and never an unsubscribed, pending,
 * suppressed or opted-out contact; another workspace's contacts never appear.
 */

const codeOf = async (p: Promise<unknown>) => errorInfoOf(await p.then(() => undefined, (e) => e))?.code;
const messageOf = async (p: Promise<unknown>) => ((await p.then(() => undefined, (e) => e)) as Error | undefined)?.message;

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function setup(store: Store) {
  const dir = await storeDirectory(store);
  for (const id of ["ws_a", "ws_b"]) await dir.workspaces.create({ id, name: id });
  await dir.properties.create("ws_a", { slug: "plan", type: "string" });
  const filters = await ContactFilters.open(store);
  const queries = await AudienceStore.open(store, filters.compileContactFilter);
  const segments = new Segments(await SegmentStore.open(store), queries, dir.workspaces);
  const audiences = new Audiences(queries, queries, segments, dir.workspaces);

  // name -> contact id
  const ids: Record<string, string> = {};
  const people: Array<[string, string, string]> = [
    // name, status, plan
    ["ann", "SUBSCRIBED", "pro"],
    ["bob", "SUBSCRIBED", "pro"],
    ["cid", "SUBSCRIBED", "free"],
    ["dee", "SUBSCRIBED", "free"],
    ["eve", "SUBSCRIBED", "pro"], // suppressed (hard bounce) below
    ["fay", "UNSUBSCRIBED", "pro"],
    ["gus", "OPT_IN_PENDING", "pro"],
    ["hal", "SUBSCRIBED", "team"],
  ];
  for (const [name, status, plan] of people) {
    ids[name] = (await dir.contacts.create("ws_a", { email: `${name}@example.test`, firstName: name, status, properties: { plan } }))._id;
  }
  // Another workspace: the same addresses, all subscribed, in every group id used below.
  for (const [name] of people) await dir.contacts.create("ws_b", { email: `${name}@example.test`, status: "SUBSCRIBED" });
  await dir.suppressions.add("ws_a", "eve@example.test", "hard_bounce", "550");

  const groups = store.collection("groups");
  await groups.insertMany([
    { _id: "grp_vip", workspaceId: "ws_a", publicId: "vip", createdAt: new Date() },
    { _id: "grp_beta", workspaceId: "ws_a", publicId: "beta", createdAt: new Date() },
    { _id: "grp_other", workspaceId: "ws_b", publicId: "other", createdAt: new Date() },
  ]);
  const contacts = store.collection("contacts");
  const join = async (groupId: string, names: string[]) => {
    for (const n of names) {
      const c = await contacts.findOne({ _id: ids[n] });
      await contacts.updateOne({ _id: ids[n] }, { $set: { groups: [...((c?.groups as string[] | undefined) ?? []), groupId] } });
    }
  };
  await join("grp_vip", ["ann", "cid", "eve", "fay", "gus"]);
  await join("grp_beta", ["bob", "cid", "hal"]);
  await contacts.updateMany({ workspaceId: "ws_b" }, { $set: { groups: ["grp_vip", "grp_beta", "grp_other"] } });

  const topics = store.collection("topics");
  await topics.insertMany([
    { _id: "top_in", workspaceId: "ws_a", name: "Product news", defaultSubscription: "OPT_IN", createdAt: new Date() },
    { _id: "top_out", workspaceId: "ws_a", name: "Digest", defaultSubscription: "OPT_OUT", createdAt: new Date() },
    { _id: "top_b", workspaceId: "ws_b", name: "B's", defaultSubscription: "OPT_OUT", createdAt: new Date() },
  ]);
  // Explicit choices: ann and eve chose top_in; bob left top_out; cid chose top_out explicitly.
  await contacts.updateOne({ _id: ids.ann }, { $set: { "topics.top_in": true } });
  await contacts.updateOne({ _id: ids.eve }, { $set: { "topics.top_in": true } });
  await contacts.updateOne({ _id: ids.bob }, { $set: { "topics.top_out": false } });
  await contacts.updateOne({ _id: ids.cid }, { $set: { "topics.top_out": true, "topics.top_in": false } });
  await contacts.updateOne({ _id: ids.fay }, { $set: { "topics.top_in": true } });

  const names = Object.fromEntries(Object.entries(ids).map(([n, id]) => [id, n]));
  /** Streamed names (in id order) and the count, which leaves the suppressed out. */
  const resolve = async (spec: AudienceSpec, batchSize = 2) => {
    const streamed: string[] = [];
    for await (const batch of audiences.stream("ws_a", spec, { batchSize })) {
      expect(batch.length).toBeLessThanOrEqual(batchSize);
      streamed.push(...batch.map((c) => names[c._id] ?? `foreign:${c._id}`));
    }
    return { streamed, count: await audiences.count("ws_a", spec) };
  };
  return { dir, store, ids, audiences, segments, resolve };
}

const stores: Array<[string, () => Promise<Store>]> = [
  ["memory store", async () => openMemoryStore()],
  ["embedded LMDB store", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "mailroom-audiences-"));
    dirs.push(dataDir);
    return openStore({ dataDir, service: "directory" });
  }],
];

describe.each(stores)("audiences over the %s", (_name, open) => {
  it("resolves every form: all, groups (ids and publicIds, union), segment, filter; only SUBSCRIBED; the stream keeps the suppressed for the sender, the count does not", async () => {
    const t = await setup(await open());
    const everyone = ["ann", "bob", "cid", "dee", "eve", "hal"];
    expect(await t.resolve({ all: true })).toEqual({ streamed: everyone, count: 5 });
    expect(await t.resolve({ groups: ["vip"] })).toEqual({ streamed: ["ann", "cid", "eve"], count: 2 });
    expect(await t.resolve({ groups: ["grp_vip", "beta", "vip"] })).toEqual({ streamed: ["ann", "bob", "cid", "eve", "hal"], count: 4 });
    const seg = await t.segments.create("ws_a", { name: "Pro", filter: { "properties.plan": "pro" } });
    expect(await t.resolve({ segmentId: seg._id })).toEqual({ streamed: ["ann", "bob", "eve"], count: 2 });
    expect(await t.resolve({ filter: { "properties.plan": { $in: ["free", "team"] } } })).toEqual({ streamed: ["cid", "dee", "hal"], count: 3 });
    // The segment itself counts and lists every status (it is a saved filter, not an audience).
    expect(await t.segments.count("ws_a", seg._id)).toBe(5);
    const page1 = await t.segments.contacts("ws_a", seg._id, { limit: 3 });
    const page2 = await t.segments.contacts("ws_a", seg._id, { limit: 3, cursor: page1.nextCursor });
    expect([page1.hasMore, page2.hasMore]).toEqual([true, false]);
    expect([...page1.items, ...page2.items].map((c) => c.firstName)).toEqual(["ann", "bob", "eve", "fay", "gus"]);
  });

  it("excludes groups, a segment and a filter; resumes after an id", async () => {
    const t = await setup(await open());
    const free = await t.segments.create("ws_a", { name: "Free", filter: { "properties.plan": "free" } });
    expect((await t.resolve({ all: true, exclude: { groups: ["beta"] } })).streamed).toEqual(["ann", "dee", "eve"]);
    expect((await t.resolve({ groups: ["vip", "beta"], exclude: { segmentId: free._id } })).streamed).toEqual(["ann", "bob", "eve", "hal"]);
    expect(await t.resolve({ all: true, exclude: { filter: { $or: [{ "properties.plan": "pro" }, { groups: "beta" }] } } })).toEqual({ streamed: ["dee"], count: 1 });
    expect(await t.resolve({ all: true, exclude: { groups: ["vip"], segmentId: free._id, filter: { "properties.plan": "team" } } })).toEqual({ streamed: ["bob"], count: 1 });
    const rest: string[] = [];
    for await (const batch of t.audiences.stream("ws_a", { all: true }, { afterId: t.ids.cid, batchSize: 1 })) rest.push(...batch.map((c) => c.firstName));
    expect(rest).toEqual(["dee", "eve", "hal"]);
  });

  it("a stream compiles its filter once for all its pages; an $or of engagement terms is one id list, counted and streamed", async () => {
    const t = await setup(await open());
    const filters = await ContactFilters.open(t.store);
    let compiled = 0;
    const queries = await AudienceStore.open(t.store, (ws, f) => (compiled++, filters.compileContactFilter(ws, f)));
    const audiences = new Audiences(queries, queries, t.segments, t.dir.workspaces);
    const at = new Date();
    const opened = [["ann", "cmp_1"], ["bob", "cmp_2"], ["fay", "cmp_2"], ["cid", "cmp_3"], ["dee", "cmp_9"]] as const;
    for (const [name, broadcastId] of opened) {
      await filters.engagement.record({ workspaceId: "ws_a", contactId: t.ids[name], kind: "opened", messageId: `${broadcastId}:${name}`, broadcastId, at });
    }
    const spec: AudienceSpec = { filter: { $or: ["cmp_1", "cmp_2", "cmp_3"].map((broadcastId) => ({ $engagement: { event: "opened", broadcastId } })) } };
    compiled = 0;
    const streamed: string[] = [];
    for await (const batch of audiences.stream("ws_a", spec, { batchSize: 1 })) streamed.push(...batch.map((c) => c.firstName!));
    // ann, bob, cid (fay unsubscribed; dee opened another broadcast): the check and one compilation for four pages.
    expect(streamed).toEqual(["ann", "bob", "cid"]);
    expect(compiled).toBe(2);
    expect(await audiences.count("ws_a", spec)).toBe(3);
    expect(await audiences.count("ws_a", { ...spec, exclude: { filter: { $engagement: { event: "opened", broadcastId: "cmp_2" } } } })).toBe(2);
  });

  it("keeps a topic's receivers only: OPT_IN needs the choice, OPT_OUT everyone but who left; opted-in unsubscribed contacts stay out", async () => {
    const t = await setup(await open());
    expect(await t.resolve({ all: true, topicId: "top_in" })).toEqual({ streamed: ["ann", "eve"], count: 1 });
    expect(await t.resolve({ all: true, topicId: "top_out" })).toEqual({ streamed: ["ann", "cid", "dee", "eve", "hal"], count: 4 });
    expect((await t.resolve({ groups: ["beta"], topicId: "top_out" })).streamed).toEqual(["cid", "hal"]);
    expect((await t.resolve({ filter: { "properties.plan": "pro" }, topicId: "top_in", exclude: { groups: ["vip"] } })).streamed).toEqual([]);
  });

  it("refuses unknown groups, segments and topics (audience_not_found, also another workspace's), bad filters (invalid_filter with the path), bad shapes", async () => {
    const t = await setup(await open());
    for (const spec of [
      { groups: ["vip", "nope"] }, { groups: ["other"] }, { groups: ["grp_other"] }, { segmentId: "seg_01jqz8k4m2x7v9c3n5b6t1w0ye" },
      { all: true, topicId: "top_b" }, { all: true, topicId: "top_nope" }, { all: true, exclude: { groups: ["nope"] } }, { all: true, exclude: { segmentId: "seg_x" } },
    ] as AudienceSpec[]) {
      expect([spec, await codeOf(t.audiences.count("ws_a", spec))]).toEqual([spec, "audience_not_found"]);
    }
    expect(await messageOf(t.audiences.count("ws_a", { groups: ["vip", "nope"] }))).toContain('groups[1]: group "nope" not found');
    expect(await codeOf(t.audiences.count("ws_a", { filter: { "properties.nope": 1 } }))).toBe("invalid_filter");
    expect(await messageOf(t.audiences.count("ws_a", { all: true, exclude: { filter: { $and: [{ "properties.nope": 1 }] } } }))).toMatch(/^exclude\.filter/);
    for (const spec of [{}, { all: true, groups: ["vip"] }, { all: false }, { groups: [] }, { segmentId: "seg_x", filter: {} }] as AudienceSpec[]) {
      expect([spec, await codeOf(t.audiences.count("ws_a", spec))]).toEqual([spec, "invalid_audience"]);
    }
    // Sending: a deleted group has no members instead of failing the send.
    const streamed: string[] = [];
    for await (const batch of t.audiences.stream("ws_a", { groups: ["vip", "gone"] }, { missingGroupsEmpty: true })) streamed.push(...batch.map((c) => c.firstName));
    expect(streamed).toEqual(["ann", "cid", "eve"]);
  });

  it("segments: validated filters, renames, another workspace gets 404, deleted ones are gone from audiences", async () => {
    const t = await setup(await open());
    expect(await codeOf(t.segments.create("ws_a", { name: "Bad", filter: { "properties.nope": 1 } }))).toBe("invalid_filter");
    expect(await codeOf(t.segments.create("ws_a", { name: "", filter: {} }))).toBe("invalid_segment");
    expect(await codeOf(t.segments.create("ws_a", { name: "No filter", filter: undefined }))).toBe("invalid_filter");
    const seg = await t.segments.create("ws_a", { name: "Team", filter: { "properties.plan": "team" } });
    expect(await codeOf(t.segments.get("ws_b", seg._id))).toBe("segment_not_found");
    expect(await codeOf(t.segments.count("ws_b", seg._id))).toBe("segment_not_found");
    expect(await codeOf(t.segments.update("ws_a", seg._id, { filter: { $and: [{ plan: 1 }] } }))).toBe("invalid_filter");
    const renamed = await t.segments.update("ws_a", seg._id, { name: "Team plan", filter: { "properties.plan": { $in: ["team", "free"] } } });
    expect(renamed).toMatchObject({ name: "Team plan", filter: { "properties.plan": { $in: ["team", "free"] } } });
    expect(await t.segments.count("ws_a", seg._id)).toBe(3);
    expect((await t.segments.list("ws_a")).items.map((s) => s.name)).toEqual(["Team plan"]);
    expect((await t.segments.list("ws_b")).items).toEqual([]);
    await t.segments.delete("ws_a", seg._id);
    expect(await codeOf(t.audiences.count("ws_a", { segmentId: seg._id }))).toBe("audience_not_found");
  });
});
