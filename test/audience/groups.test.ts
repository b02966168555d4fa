/**
 * Groups (DESIGN §9.4) through the public API, as the official client's `groups` module sends
 * and reads them (its headers on every method, ids unencoded in paths), against real accounts, audience,
 * webhooks and gateway processes over a real nats-server: every route and shape, publicId as
 * id, memberships, deleting a group, another workspace's key, and CONTACT_TAG_ADDED /
 * CONTACT_TAG_REMOVED delivered to a loopback receiver.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver, type Received } from "../webhooks/receiver.js";

const WS = "ws_groups";
const KEY = "mr_test_groups_editor_1";
const VIEWER = "mr_test_groups_viewer_1";
const OTHER = "ws_groups_other";
const OTHER_KEY = "mr_test_groups_other_1";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
const GRP = expect.stringMatching(/^grp_[0-9a-z]{26}$/);

describe("groups through the public API (real audience, webhooks and gateway)", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  /** One request as the official client's HttpClient makes it (§1 of the wire contract). */
  async function sdk(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, opts: { key?: string; body?: unknown; params?: Record<string, string | number | undefined> } = {}) {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.params ?? {})) if (v !== undefined) query.append(k, String(v));
    const res = await fetch(`${sys.gatewayUrl}/v1${path}${query.size ? `?${query}` : ""}`, {
      method,
      headers: { Authorization: `Bearer ${opts.key ?? KEY}`, "Content-Type": "application/json", Accept: "application/json", "User-Agent": "SMASHSEND Node SDK v1.19.0" },
      body: method !== "GET" && opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });
    const text = await res.text();
    let body: any = text;
    try { body = JSON.parse(text); } catch { /* not JSON */ }
    return { status: res.status, body };
  }

  async function waitFor(what: string, pick: (r: Received) => boolean, timeoutMs = 20_000): Promise<Received> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = receiver.received.find(pick);
      if (hit) return hit;
      if (Date.now() > until) throw new Error(`no ${what} within ${timeoutMs} ms; got ${receiver.received.map((r) => r.event.type).join(", ")}\n${await sys.log("audience", 40)}`);
      await sleep(25);
    }
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "webhooks", "gateway"],
      bootstrap: {
        workspaces: [
          { id: WS, name: WS, timezone: "UTC", apiKeys: [{ key: KEY, scopes: ["api_user"] }, { key: VIEWER, scopes: ["api_read"] }] },
          { id: OTHER, name: OTHER, timezone: "UTC", apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }] },
        ],
      },
    });
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  const contact = async (email: string, key = KEY) => {
    const res = await sdk("POST", "/contacts", { key, body: { properties: { email } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.contact.id as string;
  };

  it("creates, reads (by id or publicId), updates, lists and refuses bad groups", async () => {
    const created = await sdk("POST", "/groups", { body: { publicId: "company_123", displayName: "Acme Corp", traits: { industry: "technology", employees: 500, tags: ["a", "b"], hq: { city: "Oslo" } } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({
      group: {
        id: GRP, publicId: "company_123", displayName: "Acme Corp", traits: { industry: "technology", employees: 500, tags: ["a", "b"], hq: { city: "Oslo" } },
        createdAt: ISO, workspaceId: WS,
      },
    });
    const id = created.body.group.id as string;
    const bare = await sdk("POST", "/groups", { body: { publicId: "bare" } });
    expect(bare.body).toEqual({ group: { id: GRP, publicId: "bare", createdAt: ISO, workspaceId: WS } });

    const duplicate = await sdk("POST", "/groups", { body: { publicId: "company_123" } });
    expect([duplicate.status, duplicate.body.code]).toEqual([409, "group_public_id_taken"]);
    for (const body of [{ publicId: "a b" }, { publicId: "" }, { publicId: "x".repeat(201) }, { publicId: "ok", displayName: "x".repeat(201) }, { publicId: "ok", traits: { "$set": 1 } }, { publicId: "ok", traits: { big: "x".repeat(17_000) } }]) {
      const res = await sdk("POST", "/groups", { body });
      expect([res.status, res.body.code], JSON.stringify(body).slice(0, 60)).toEqual([400, "invalid_group"]);
    }
    // Nested past what the audience unit takes (5 levels) but decodable: its own answer; nested past
    // protobuf's recursion limit (a 500 once): refused at the gateway.
    const nest = (levels: number): Record<string, unknown> => (levels ? { a: [nest(levels - 1)] } : { leaf: 1 });
    const deep = await sdk("POST", "/groups", { body: { publicId: "deep", traits: nest(4) } });
    expect([deep.status, deep.body.code]).toEqual([400, "invalid_group"]);
    for (const body of [{}, { publicId: 5 }, { publicId: "ok", traits: [1] }, { publicId: "ok", extra: true }, { publicId: "ok", traits: nest(60) }]) {
      const res = await sdk("POST", "/groups", { body });
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([400, "invalid_request"]);
    }

    expect((await sdk("GET", `/groups/${id}`)).body).toEqual(created.body);
    expect((await sdk("GET", "/groups/company_123")).body).toEqual(created.body);
    expect((await sdk("GET", "/groups/company_123", { key: VIEWER })).status).toBe(200);
    const missing = await sdk("GET", "/groups/nope");
    expect([missing.status, missing.body.code]).toEqual([404, "group_not_found"]);

    const updated = await sdk("PATCH", "/groups/company_123", { body: { displayName: "Acme Corporation", traits: { employees: 600 } } });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    expect(updated.body).toEqual({ group: { id, publicId: "company_123", displayName: "Acme Corporation", traits: { employees: 600 }, createdAt: created.body.group.createdAt, updatedAt: ISO, workspaceId: WS } });
    const nameOnly = await sdk("PATCH", `/groups/${id}`, { body: { displayName: "Acme" } });
    expect(nameOnly.body.group).toMatchObject({ displayName: "Acme", traits: { employees: 600 } });
    const cleared = await sdk("PATCH", `/groups/${id}`, { body: { traits: null } });
    expect(cleared.body.group.traits).toBeUndefined();
    expect((await sdk("PATCH", "/groups/nope", { body: { displayName: "x" } })).status).toBe(404);
    expect((await sdk("PATCH", `/groups/${id}`, { body: { publicId: "renamed" } })).body.code).toBe("invalid_request");
    expect((await sdk("PATCH", `/groups/${id}`, { key: VIEWER, body: { displayName: "x" } })).status).toBe(401);

    for (let i = 0; i < 3; i++) expect((await sdk("POST", "/groups", { body: { publicId: `page-${i}` } })).status).toBe(201);
    const first = await sdk("GET", "/groups", { params: { limit: 2 } });
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["cursor", "hasMore", "items"]);
    expect(first.body).toMatchObject({ hasMore: true, cursor: expect.any(String) });
    const rest = await sdk("GET", "/groups", { params: { cursor: first.body.cursor } });
    expect(rest.body).toMatchObject({ hasMore: false, cursor: null });
    expect([...first.body.items, ...rest.body.items].map((g: { publicId: string }) => g.publicId)).toEqual(["company_123", "bare", "page-0", "page-1", "page-2"]);
    expect(first.body.items[0]).toEqual(cleared.body.group);
    expect((await sdk("GET", "/groups", { params: { limit: 0 } })).body.code).toBe("invalid_request");
    expect((await sdk("GET", "/groups", { params: { cursor: "forged" } })).body.code).toBe("invalid_cursor");
  }, 60_000);

  it("adds (twice keeps addedAt), lists, removes contacts, with CONTACT_TAG_ADDED / CONTACT_TAG_REMOVED delivered", async () => {
    const hook = await sdk("POST", "/webhooks", { body: { url: receiver.url, events: ["CONTACT_TAG_ADDED", "CONTACT_TAG_REMOVED"] } });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const group = (await sdk("POST", "/groups", { body: { publicId: "vip", displayName: "VIP" } })).body.group;
    const [a, b, c] = [await contact("a@groups.test"), await contact("b@groups.test"), await contact("c@groups.test")];

    const added = await sdk("POST", "/groups/vip/contacts", { body: { contactId: b } });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toEqual({ groupId: group.id, contactId: b, addedAt: ISO });
    await sleep(5);
    const again = await sdk("POST", `/groups/${group.id}/contacts`, { body: { contactId: b } });
    expect([again.status, again.body]).toEqual([200, added.body]);
    for (const id of [c, a]) expect((await sdk("POST", `/groups/${group.id}/contacts`, { body: { contactId: id } })).status).toBe(201);

    const page1 = await sdk("GET", "/groups/vip/contacts", { params: { limit: 2 } });
    expect(page1.body).toEqual({ items: [{ contactId: a, addedAt: ISO }, { contactId: b, addedAt: added.body.addedAt }], cursor: expect.any(String), hasMore: true });
    const page2 = await sdk("GET", `/groups/${group.id}/contacts`, { params: { limit: 2, cursor: page1.body.cursor } });
    expect(page2.body).toEqual({ items: [{ contactId: c, addedAt: ISO }], cursor: null, hasMore: false });
    expect((await sdk("GET", "/groups/vip/contacts", { key: VIEWER })).body.items).toHaveLength(3);

    const tagAdded = await waitFor("CONTACT_TAG_ADDED for b", (r) => r.event.type === "CONTACT_TAG_ADDED" && r.event.data.contactId === b);
    expect(tagAdded.event).toEqual({
      id: expect.stringMatching(/^dev_/), type: "CONTACT_TAG_ADDED", createdAt: added.body.addedAt, workspaceId: WS,
      data: {
        contactId: b, groupId: group.id, publicId: "vip", addedAt: added.body.addedAt,
        contact: expect.objectContaining({ id: b, properties: expect.objectContaining({ email: "b@groups.test", status: "SUBSCRIBED" }) }),
        group: { id: group.id, publicId: "vip", displayName: "VIP", createdAt: group.createdAt, workspaceId: WS },
      },
    });
    expect(tagAdded.headers["x-smashsend-signature"]).toMatch(/^[0-9a-f]{64}$/);

    const removed = await sdk("DELETE", `/groups/vip/contacts/${b}`);
    expect([removed.status, removed.body]).toEqual([200, { groupId: group.id, contactId: b, isRemoved: true }]);
    expect((await sdk("DELETE", `/groups/${group.id}/contacts/${b}`)).body).toEqual({ groupId: group.id, contactId: b, isRemoved: false });
    expect((await sdk("GET", "/groups/vip/contacts")).body.items.map((m: { contactId: string }) => m.contactId)).toEqual([a, c]);
    const tagRemoved = await waitFor("CONTACT_TAG_REMOVED for b", (r) => r.event.type === "CONTACT_TAG_REMOVED" && r.event.data.contactId === b);
    expect(tagRemoved.event.data).toMatchObject({ groupId: group.id, publicId: "vip", addedAt: added.body.addedAt, removedAt: ISO, contact: { id: b }, group: { id: group.id } });

    // Rejoining: a new membership, a new addedAt, a second CONTACT_TAG_ADDED.
    const rejoined = await sdk("POST", "/groups/vip/contacts", { body: { contactId: b } });
    expect(rejoined.status).toBe(201);
    expect(rejoined.body.addedAt > added.body.addedAt).toBe(true);
    await waitFor("a second CONTACT_TAG_ADDED for b", (r) => r.event.type === "CONTACT_TAG_ADDED" && r.event.data.contactId === b && r.event.data.addedAt === rejoined.body.addedAt);
    // Each join and leave once (the repeated add and remove sent nothing).
    await sleep(300);
    const ofB = receiver.received.filter((r) => r.event.data.contactId === b).map((r) => r.event.type);
    expect(ofB).toEqual(["CONTACT_TAG_ADDED", "CONTACT_TAG_REMOVED", "CONTACT_TAG_ADDED"]);

    // Unknown contacts and groups.
    const noContact = await sdk("POST", "/groups/vip/contacts", { body: { contactId: "ctc_01jzzzzzzzzzzzzzzzzzzzzzzz" } });
    expect([noContact.status, noContact.body.code]).toEqual([404, "contact_not_found"]);
    expect((await sdk("DELETE", "/groups/vip/contacts/ctc_01jzzzzzzzzzzzzzzzzzzzzzzz")).body.code).toBe("contact_not_found");
    const noGroup = await sdk("POST", "/groups/nope/contacts", { body: { contactId: a } });
    expect([noGroup.status, noGroup.body.code]).toEqual([404, "group_not_found"]);
    expect((await sdk("GET", "/groups/nope/contacts")).body.code).toBe("group_not_found");
    expect((await sdk("POST", "/groups/vip/contacts", { body: {} })).body.code).toBe("invalid_request");
    expect((await sdk("GET", "/groups/vip/contacts", { params: { cursor: "grp_forged" } })).body.code).toBe("invalid_cursor");
  }, 60_000);

  it("deleting a group takes it off every contact and sends no CONTACT_TAG_REMOVED", async () => {
    const doomed = (await sdk("POST", "/groups", { body: { publicId: "doomed", traits: { plan: "gold" } } })).body.group;
    const keep = (await sdk("POST", "/groups", { body: { publicId: "keep" } })).body.group;
    const [x, y] = [await contact("x@groups.test"), await contact("y@groups.test")];
    for (const id of [x, y]) {
      expect((await sdk("POST", "/groups/doomed/contacts", { body: { contactId: id } })).status).toBe(201);
      expect((await sdk("POST", "/groups/keep/contacts", { body: { contactId: id } })).status).toBe(201);
    }
    await waitFor("the joins of y", (r) => r.event.type === "CONTACT_TAG_ADDED" && r.event.data.contactId === y && r.event.data.groupId === keep.id);

    const deleted = await sdk("DELETE", "/groups/doomed");
    expect([deleted.status, deleted.body]).toEqual([200, { group: doomed, isDeleted: true }]);
    expect((await sdk("GET", `/groups/${doomed.id}`)).status).toBe(404);
    expect((await sdk("GET", `/groups/${doomed.id}/contacts`)).body.code).toBe("group_not_found");
    expect((await sdk("DELETE", "/groups/doomed")).body.code).toBe("group_not_found");
    // The publicId is free again, and the new group starts empty; the other group keeps its members.
    const reborn = (await sdk("POST", "/groups", { body: { publicId: "doomed" } })).body.group;
    expect(reborn.id).not.toBe(doomed.id);
    expect((await sdk("GET", "/groups/doomed/contacts")).body.items).toEqual([]);
    expect((await sdk("GET", "/groups/keep/contacts")).body.items.map((m: { contactId: string }) => m.contactId)).toEqual([x, y]);
    // A later event goes out after anything the deletion would have sent: none did.
    expect((await sdk("DELETE", `/groups/keep/contacts/${x}`)).body.isRemoved).toBe(true);
    await waitFor("the sentinel leave", (r) => r.event.type === "CONTACT_TAG_REMOVED" && r.event.data.contactId === x && r.event.data.groupId === keep.id);
    await sleep(300);
    expect(receiver.received.filter((r) => r.event.type === "CONTACT_TAG_REMOVED" && r.event.data.groupId === doomed.id)).toEqual([]);
  }, 60_000);

  it("another workspace's key reaches none of it", async () => {
    const mine = (await sdk("POST", "/groups", { body: { publicId: "private" } })).body.group;
    const myContact = await contact("mine@groups.test");
    expect((await sdk("POST", "/groups/private/contacts", { body: { contactId: myContact } })).status).toBe(201);
    const theirs = (await sdk("POST", "/groups", { key: OTHER_KEY, body: { publicId: "private" } }));
    expect(theirs.status, "the same publicId in another workspace").toBe(201);
    const theirContact = await contact("theirs@groups.test", OTHER_KEY);

    expect((await sdk("GET", `/groups/${mine.id}`, { key: OTHER_KEY })).body.code).toBe("group_not_found");
    expect((await sdk("GET", "/groups/private", { key: OTHER_KEY })).body.group.id).toBe(theirs.body.group.id);
    expect((await sdk("PATCH", `/groups/${mine.id}`, { key: OTHER_KEY, body: { displayName: "x" } })).status).toBe(404);
    expect((await sdk("GET", `/groups/${mine.id}/contacts`, { key: OTHER_KEY })).status).toBe(404);
    expect((await sdk("GET", "/groups/private/contacts", { key: OTHER_KEY })).body.items).toEqual([]);
    expect((await sdk("POST", `/groups/${mine.id}/contacts`, { key: OTHER_KEY, body: { contactId: theirContact } })).body.code).toBe("group_not_found");
    expect((await sdk("POST", "/groups/private/contacts", { key: OTHER_KEY, body: { contactId: myContact } })).body.code).toBe("contact_not_found");
    expect((await sdk("DELETE", `/groups/private/contacts/${myContact}`, { key: OTHER_KEY })).body.code).toBe("contact_not_found");
    expect((await sdk("DELETE", `/groups/${mine.id}`, { key: OTHER_KEY })).body.code).toBe("group_not_found");
    const listed = (await sdk("GET", "/groups", { key: OTHER_KEY })).body.items.map((g: { id: string }) => g.id);
    expect(listed).toEqual([theirs.body.group.id]);
    // Still there for its own workspace.
    expect((await sdk("GET", "/groups/private/contacts")).body.items.map((m: { contactId: string }) => m.contactId)).toEqual([myContact]);
  }, 60_000);
});
