import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * Broadcast audiences (DESIGN §9.4) through the public API, against the real processes
 * (accounts, audience, renderer, delivery, broadcast, gateway), nats-server and the SMTP sink: each form
 * reaches exactly its contacts (never an unsubscribed, pending, suppressed or opted-out one),
 * audienceCount on create, update and get, the refusals, and a topic broadcast's one-click
 * unsubscribe leaving that topic only.
 */

const WS = "ws_aud";
const KEY = `mr_test_${WS}_1`;
const flagsOn = { broadcastEarlyAccess: true, emailApiAddon: true, verified: true };
const workspace = (id: string) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }],
  verifiedDomains: ["acme.test"], members: ["owner@acme.test"],
  flags: flagsOn, monthlyLimit: 100_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }],
});
const bootstrap = { workspaces: [workspace(WS), workspace("ws_aud_other")] };

// name, status, plan
const PEOPLE: Array<[string, string, string]> = [
  ["ann", "SUBSCRIBED", "pro"],
  ["bob", "SUBSCRIBED", "pro"],
  ["cid", "SUBSCRIBED", "free"],
  ["dee", "SUBSCRIBED", "free"],
  ["eve", "SUBSCRIBED", "pro"], // suppressed (hard bounce)
  ["fay", "UNSUBSCRIBED", "pro"],
  ["gus", "OPT_IN_PENDING", "pro"],
  ["hal", "SUBSCRIBED", "team"],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("broadcast audiences through the public API (real processes)", () => {
  let sys: TestSystem;
  let contacts: ReturnType<typeof connectClient<typeof ContactService>>;
  const ids: Record<string, string> = {};
  let vip = "";
  let beta = "";
  let news = "";
  let digest = "";
  let proSegment = "";
  let seq = 0;

  const api = (method: string, path: string, body?: unknown, key = KEY) => sys.api(method, path, { key, body });
  const draft = (audience: unknown, marker: string) => ({
    name: marker,
    subject: `News for {{firstName}} ${marker}`,
    fromEmail: "news@acme.test",
    fromName: "Acme",
    html: `<html><body><p>Hi {{firstName}} (${marker}).</p></body></html>`,
    audience,
  });

  async function created(audience: unknown, marker = `#aud${++seq}`) {
    const res = await api("POST", "/v1/broadcasts", draft(audience, marker));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { id: res.body.broadcast.id as string, marker, broadcast: res.body.broadcast };
  }

  /** Creates, sends at once (ASAP), waits for COMPLETED; answers who got it (first names, sorted) and the create's audienceCount. */
  async function send(audience: unknown) {
    const { id, marker, broadcast } = await created(audience);
    const scheduled = await api("POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "ASAP" });
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    const deadline = Date.now() + 30_000;
    let last: any;
    for (;;) {
      last = (await api("GET", `/v1/broadcasts/${id}`)).body.broadcast;
      if (last?.status === "COMPLETED") break;
      if (Date.now() > deadline) throw new Error(`${marker} did not complete: ${JSON.stringify(last)}\n${await sys.log("broadcast")}`);
      await sleep(150);
    }
    const mails = sys.sink!.messages.filter((m) => m.raw.includes(marker));
    const names = mails.flatMap((m) => m.to).map((to) => to.split("@")[0]).sort();
    return { id, names, audienceCount: broadcast.audienceCount as number, mails, completed: last };
  }

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"] });
    contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    for (const [name, status, plan] of PEOPLE) {
      const res = await api("POST", "/v1/contacts", { properties: { email: `${name}@example.test`, firstName: name, status, plan } });
      expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
      ids[name] = res.body.contact.id;
    }
    await contacts.addSuppression({ workspaceId: WS, email: "eve@example.test", reason: SuppressionReason.HARD_BOUNCE, detail: "550 no such user" });

    const group = async (publicId: string, members: string[]) => {
      const res = await api("POST", "/v1/groups", { publicId });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      for (const m of members) expect((await api("POST", `/v1/groups/${res.body.group.id}/contacts`, { contactId: ids[m] })).status).toBeLessThan(300);
      return res.body.group.id as string;
    };
    vip = await group("vip", ["ann", "cid", "eve", "fay", "gus"]);
    beta = await group("beta", ["bob", "cid", "hal"]);

    const topic = async (name: string, defaultSubscription: string) => {
      const res = await api("POST", "/v1/topics", { name, defaultSubscription });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.topic.id as string;
    };
    news = await topic("Product news", "OPT_IN");
    digest = await topic("Weekly digest", "OPT_OUT");
    const choose = async (name: string, topics: Array<{ id: string; subscribed: boolean }>) =>
      expect((await api("PUT", `/v1/contacts/${ids[name]}/topics`, { topics })).status).toBe(200);
    for (const n of ["ann", "eve", "gus", "fay"]) await choose(n, [{ id: news, subscribed: true }]);
    await choose("bob", [{ id: digest, subscribed: false }]);

    const seg = await api("POST", "/v1/segments", { name: "Pro", filter: { "properties.plan": "pro" } });
    expect(seg.status, JSON.stringify(seg.body)).toBe(201);
    proSegment = seg.body.segment.id;
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("{ all: true }: every subscribed contact, never the unsubscribed, the pending or the suppressed", async () => {
    const r = await send({ all: true });
    expect(r.names).toEqual(["ann", "bob", "cid", "dee", "hal"]);
    expect(r.audienceCount).toBe(5);
    expect(r.completed.progress).toMatchObject({ recipients: 5, sent: 5 });
  });

  it("{ groups } by publicId and id (their union), minus a filter", async () => {
    const r = await send({ groups: ["vip", beta], exclude: { filter: { "properties.plan": "free" } } });
    expect(r.names).toEqual(["ann", "bob", "hal"]);
    expect(r.audienceCount).toBe(3);
  });

  it("{ segmentId }, and { filter } minus a group", async () => {
    const seg = await send({ segmentId: proSegment });
    expect(seg.names).toEqual(["ann", "bob"]);
    expect(seg.audienceCount).toBe(2);
    const filtered = await send({ filter: { "properties.plan": { $in: ["free", "team"] } }, exclude: { groups: ["beta"] } });
    expect(filtered.names).toEqual(["dee"]);
    expect(filtered.audienceCount).toBe(1);
  });

  it("topics: OPT_IN reaches who chose it, OPT_OUT everyone but who left it", async () => {
    const optIn = await send({ all: true, topicId: news });
    expect(optIn.names).toEqual(["ann"]); // eve suppressed, gus pending, fay unsubscribed
    expect(optIn.audienceCount).toBe(1);
    const optOut = await send({ groups: [vip, "beta"], topicId: digest });
    expect(optOut.names).toEqual(["ann", "cid", "hal"]);
  });

  it("a topic broadcast's one-click POST leaves that topic only: the next topic broadcast skips the contact, a broadcast without a topic still reaches it", async () => {
    const first = await send({ all: true, topicId: digest });
    expect(first.names).toEqual(["ann", "cid", "dee", "hal"]);
    const toAnn = await PostalMime.parse(first.mails.find((m) => m.to.includes("ann@example.test"))!.raw);
    expect(toAnn.headers.find((h) => h.key === "list-unsubscribe-post")?.value).toBe("List-Unsubscribe=One-Click");
    const link = /<(https?:\/\/[^>]+)>/.exec(toAnn.headers.find((h) => h.key === "list-unsubscribe")!.value)![1];
    const oneClick = await fetch(link, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(oneClick.status).toBe(200);

    const topics = (await api("GET", `/v1/contacts/${ids.ann}/topics`)).body.topics;
    expect(topics).toEqual(expect.arrayContaining([
      { id: digest, name: "Weekly digest", subscribed: false },
      { id: news, name: "Product news", subscribed: true },
    ]));
    expect((await api("GET", `/v1/contacts/${ids.ann}`)).body.contact.properties.status).toBe("SUBSCRIBED");
    expect((await contacts.checkSuppression({ workspaceId: WS, emails: ["ann@example.test"] })).suppressed).toEqual([]);

    const next = await send({ all: true, topicId: digest });
    expect(next.names).toEqual(["cid", "dee", "hal"]);
    expect(next.audienceCount).toBe(3);
    const news2 = await send({ all: true, topicId: news });
    expect(news2.names).toEqual(["ann"]);
    const everyone = await send({ all: true });
    expect(everyone.names).toEqual(["ann", "bob", "cid", "dee", "hal"]);

    // A broadcast without a topic: the one-click still unsubscribes from everything (as before topics).
    const toDee = await PostalMime.parse(everyone.mails.find((m) => m.to.includes("dee@example.test"))!.raw);
    const deeLink = /<(https?:\/\/[^>]+)>/.exec(toDee.headers.find((h) => h.key === "list-unsubscribe")!.value)![1];
    expect((await fetch(deeLink, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" })).status).toBe(200);
    expect((await contacts.checkSuppression({ workspaceId: WS, emails: ["dee@example.test"] })).suppressed.map((s) => s.reason)).toEqual([SuppressionReason.UNSUBSCRIBED]);
    expect((await api("GET", `/v1/contacts/${ids.dee}`)).body.contact.properties.status).toBe("UNSUBSCRIBED");
  });

  it("answers audienceCount on create, update (PATCH) and get; refuses unknown groups, segments, topics and invalid filters", async () => {
    const { id, broadcast } = await created({ segmentId: proSegment });
    expect(broadcast).toMatchObject({ audience: { segmentId: proSegment }, audienceCount: 2 });
    const patched = await api("PATCH", `/v1/broadcasts/${id}`, { audience: { groups: ["beta"], topicId: digest } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.broadcast).toMatchObject({ audience: { groups: ["beta"], topicId: digest }, audienceCount: 2 }); // bob left the digest
    // A contact joining the group shows in the next read.
    expect((await api("POST", `/v1/groups/${beta}/contacts`, { contactId: ids.ann })).status).toBeLessThan(300);
    expect((await api("GET", `/v1/broadcasts/${id}`)).body.broadcast.audienceCount).toBe(2); // ann left the digest by one-click
    expect((await api("POST", `/v1/groups/${beta}/contacts`, { contactId: ids.dee })).status).toBeLessThan(300);
    expect((await api("GET", `/v1/broadcasts/${id}`)).body.broadcast.audienceCount).toBe(2); // dee is unsubscribed now
    const renamed = await api("PATCH", `/v1/broadcasts/${id}`, { name: "Renamed" });
    expect(renamed.body.broadcast).toMatchObject({ name: "Renamed", audience: { groups: ["beta"], topicId: digest }, audienceCount: 2 });

    const otherGroup = await api("POST", "/v1/groups", { publicId: "theirs" }, "mr_test_ws_aud_other_1");
    const refusals: Array<[unknown, string, string]> = [
      [{ groups: ["vip", "nope"] }, "audience_not_found", "nope"],
      [{ groups: [otherGroup.body.group.id] }, "audience_not_found", otherGroup.body.group.id],
      [{ segmentId: "seg_01jqz8k4m2x7v9c3n5b6t1w0ye" }, "audience_not_found", "seg_01jqz8k4m2x7v9c3n5b6t1w0ye"],
      [{ all: true, topicId: "top_01jqz8k4m2x7v9c3n5b6t1w0ye" }, "audience_not_found", "top_01jqz8k4m2x7v9c3n5b6t1w0ye"],
      [{ all: true, exclude: { segmentId: "seg_nope" } }, "audience_not_found", "exclude.segmentId"],
      [{ filter: { "properties.nope": "x" } }, "invalid_filter", "filter"],
      [{ all: true, exclude: { filter: { $and: [{ "properties.plan": { $near: 1 } }] } } }, "invalid_filter", "exclude.filter.$and[0]"],
      [{ all: true, segmentId: proSegment }, "invalid_payload", "exactly one"],
    ];
    for (const [audience, code, named] of refusals) {
      const res = await api("POST", "/v1/broadcasts", draft(audience, "#refused"));
      expect([audience, res.status, res.body.code]).toEqual([audience, 400, code]);
      expect(res.body.message).toContain(named);
    }
    expect((await api("PATCH", `/v1/broadcasts/${id}`, { audience: { groups: ["nope"] } })).body.code).toBe("audience_not_found");
    // Another workspace cannot use this workspace's segment either.
    const foreign = await api("POST", "/v1/broadcasts", draft({ segmentId: proSegment }, "#foreign"), "mr_test_ws_aud_other_1");
    expect([foreign.status, foreign.body.code]).toEqual([400, "audience_not_found"]);
  });
});
