import { describe, expect, it } from "vitest";
import { memoryDirectory } from "../testing.js";
import { GroupMembershipStore, GroupStore } from "../adapters/group-store.js";
import { ContactStore } from "../adapters/contact-store.js";
import { EmittingGroupMembershipStore, eventsOfIntent } from "./changes.js";
import type { ChangeIntent, DirectoryEvent } from "@mailroom/records/change-events.js";
import { Groups, TRAITS_MAX_BYTES } from "./groups.js";

/** Groups over the in-memory store: validation, publicId as id, memberships on the contacts, CONTACT_TAG_* at each join and leave. */
describe("groups", () => {
  async function setup() {
    const events: DirectoryEvent[] = [];
    const intents: ChangeIntent[] = [];
    let tick = Date.parse("2026-01-01T00:00:00Z");
    const now = () => new Date((tick += 1000));
    const dir = await memoryDirectory({ now });
    const publish = (e: DirectoryEvent[]) => void events.push(...e);
    const members = await GroupMembershipStore.open(dir.store);
    const groups = new Groups(await GroupStore.open(dir.store), new EmittingGroupMembershipStore(members, publish, async (i) => void intents.push(i), now), dir.workspaces, now);
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.workspaces.create({ id: "ws_b", name: "B" });
    const contact = (email: string, ws = "ws_a") => dir.contacts.create(ws, { email });
    return { dir, groups, events, intents, contact, members };
  }

  it("creates with a unique publicId, answers it by id or publicId, updates and lists in id order", async () => {
    const { groups } = await setup();
    const g = await groups.create("ws_a", { publicId: "company_123", displayName: " Acme ", traits: { industry: "tech", employees: 500 } });
    expect(g._id).toMatch(/^grp_[0-9a-z]{26}$/);
    expect(g).toMatchObject({ publicId: "company_123", displayName: "Acme", traits: { industry: "tech", employees: 500 }, workspaceId: "ws_a" });
    expect(g.updatedAt).toBeUndefined();
    await expect(groups.create("ws_a", { publicId: "company_123" })).rejects.toMatchObject({ code: "group_public_id_taken", httpStatus: 409 });
    // Another workspace may use the same publicId, and never sees this one.
    const other = await groups.create("ws_b", { publicId: "company_123" });
    await expect(groups.get("ws_b", g._id)).rejects.toMatchObject({ code: "group_not_found", httpStatus: 404 });
    expect((await groups.get("ws_b", "company_123"))._id).toBe(other._id);
    expect((await groups.get("ws_a", "company_123"))._id).toBe(g._id);
    expect((await groups.get("ws_a", g._id)).publicId).toBe("company_123");

    const renamed = await groups.update("ws_a", "company_123", { displayName: "Acme Corp", traits: { employees: 600 } });
    expect(renamed).toMatchObject({ displayName: "Acme Corp", traits: { employees: 600 } });
    expect(renamed.updatedAt).toBeInstanceOf(Date);
    const cleared = await groups.update("ws_a", g._id, { displayName: "", traits: null });
    expect(cleared.displayName).toBeUndefined();
    expect(cleared.traits).toBeUndefined();

    for (let i = 0; i < 4; i++) await groups.create("ws_a", { publicId: `g${i}` });
    const first = await groups.list("ws_a", { limit: 3 });
    expect(first.hasMore).toBe(true);
    const second = await groups.list("ws_a", { limit: 3, cursor: first.nextCursor });
    expect(second.hasMore).toBe(false);
    expect([...first.items, ...second.items].map((x) => x.publicId)).toEqual(["company_123", "g0", "g1", "g2", "g3"]);
    await expect(groups.list("ws_a", { cursor: "nope" })).rejects.toMatchObject({ code: "invalid_cursor" });
    await expect(groups.list("ws_a", { limit: 101 })).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("refuses bad publicIds, displayNames and traits with 400 invalid_group", async () => {
    const { groups } = await setup();
    for (const publicId of [undefined, "", 5, "a b", "a/b", "-x", ".", "..", "x".repeat(201), "é"]) {
      await expect(groups.create("ws_a", { publicId }), String(publicId)).rejects.toMatchObject({ code: "invalid_group", httpStatus: 400 });
    }
    expect((await groups.create("ws_a", { publicId: "x".repeat(200) })).publicId).toHaveLength(200);
    expect((await groups.create("ws_a", { publicId: "org:acme.io@eu+1=2_-" })).publicId).toBe("org:acme.io@eu+1=2_-");
    await expect(groups.create("ws_a", { publicId: "n", displayName: "x".repeat(201) })).rejects.toMatchObject({ code: "invalid_group" });
    await expect(groups.create("ws_a", { publicId: "n", displayName: 3 })).rejects.toMatchObject({ code: "invalid_group" });
    for (const traits of [[], "x", 1, { $set: 1 }, { "a.b": 1 }, { deep: { $x: 1 } }, { big: "x".repeat(TRAITS_MAX_BYTES) }, { a: { b: { c: { d: { e: { f: 1 } } } } } }]) {
      await expect(groups.create("ws_a", { publicId: "n", traits }), JSON.stringify(traits).slice(0, 40)).rejects.toMatchObject({ code: "invalid_group" });
    }
    await expect(groups.update("ws_a", "nope", { displayName: "x" })).rejects.toMatchObject({ code: "group_not_found" });
  });

  it("membership: add keeps the first addedAt, remove, list in contact-id order; CONTACT_TAG_ADDED / REMOVED once each", async () => {
    const { groups, events, contact } = await setup();
    const g = await groups.create("ws_a", { publicId: "vip", displayName: "VIP" });
    const [a, b, c] = [await contact("a@x.test"), await contact("b@x.test"), await contact("c@x.test")];
    const first = await groups.addContact("ws_a", "vip", b._id);
    expect(first).toMatchObject({ groupId: g._id, contactId: b._id, added: true });
    const again = await groups.addContact("ws_a", g._id, b._id);
    expect(again).toMatchObject({ added: false });
    expect(again.addedAt.getTime()).toBe(first.addedAt.getTime());
    await groups.addContact("ws_a", g._id, c._id);
    await groups.addContact("ws_a", g._id, a._id);
    const page1 = await groups.listContacts("ws_a", "vip", { limit: 2 });
    expect(page1.items.map((m) => m.contactId)).toEqual([a._id, b._id]);
    expect(page1.items[1].addedAt.getTime()).toBe(first.addedAt.getTime());
    const page2 = await groups.listContacts("ws_a", "vip", { limit: 2, cursor: page1.nextCursor });
    expect([page2.items.map((m) => m.contactId), page2.hasMore]).toEqual([[c._id], false]);

    const added = events.filter((e) => e.type === "CONTACT_TAG_ADDED");
    expect(added.map((e) => (e.data.contact as { id: string }).id)).toEqual([b._id, c._id, a._id]);
    expect(added[0]).toMatchObject({ workspaceId: "ws_a", data: { group: { id: g._id, publicId: "vip", displayName: "VIP", workspaceId: "ws_a" }, addedAt: first.addedAt.toISOString() } });

    expect(await groups.removeContact("ws_a", "vip", b._id)).toEqual({ groupId: g._id, contactId: b._id, removed: true });
    expect(await groups.removeContact("ws_a", "vip", b._id)).toEqual({ groupId: g._id, contactId: b._id, removed: false });
    const removed = events.filter((e) => e.type === "CONTACT_TAG_REMOVED");
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({ data: { contact: { id: b._id }, group: { id: g._id }, addedAt: first.addedAt.toISOString() } });
    expect((await groups.listContacts("ws_a", g._id)).items.map((m) => m.contactId)).toEqual([a._id, c._id]);
    // A contact's groups (its data export), in the order it joined them; none for one that left.
    const other = await groups.create("ws_a", { publicId: "other" });
    await groups.addContact("ws_a", "other", a._id);
    expect((await groups.ofContact("ws_a", a._id)).map((m) => [m.group.publicId, m.addedAt.getTime()])).toEqual([["vip", page1.items[0].addedAt.getTime()], ["other", expect.any(Number)]]);
    expect(await groups.ofContact("ws_a", b._id)).toEqual([]);
    await expect(groups.ofContact("ws_b", a._id)).rejects.toMatchObject({ code: "contact_not_found" });
    void other;
    // Rejoining is a new membership: a new addedAt and a new event id.
    const rejoined = await groups.addContact("ws_a", g._id, b._id);
    expect(rejoined.added).toBe(true);
    expect(rejoined.addedAt.getTime()).toBeGreaterThan(first.addedAt.getTime());
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it("unknown contacts and groups are 404s; another workspace's contact is unknown", async () => {
    const { groups, contact } = await setup();
    const g = await groups.create("ws_a", { publicId: "vip" });
    const foreign = await contact("z@x.test", "ws_b");
    await expect(groups.addContact("ws_a", g._id, "ctc_01jzzzzzzzzzzzzzzzzzzzzzzz")).rejects.toMatchObject({ code: "contact_not_found", httpStatus: 404 });
    await expect(groups.addContact("ws_a", g._id, foreign._id)).rejects.toMatchObject({ code: "contact_not_found" });
    await expect(groups.removeContact("ws_a", g._id, foreign._id)).rejects.toMatchObject({ code: "contact_not_found" });
    await expect(groups.addContact("ws_b", g._id, foreign._id)).rejects.toMatchObject({ code: "group_not_found" });
    await expect(groups.addContact("ws_a", g._id, "")).rejects.toMatchObject({ code: "invalid_request" });
    await expect(groups.listContacts("ws_b", "vip")).rejects.toMatchObject({ code: "group_not_found" });
    await expect(groups.listContacts("ws_a", "vip", { cursor: "grp_x" })).rejects.toMatchObject({ code: "invalid_cursor" });
  });

  it("deleting a group takes it off every contact (its own memberships only) and emits no CONTACT_TAG_REMOVED", async () => {
    const { dir, groups, events, contact } = await setup();
    const g = await groups.create("ws_a", { publicId: "vip" });
    const keep = await groups.create("ws_a", { publicId: "keep" });
    const [a, b] = [await contact("a@x.test"), await contact("b@x.test")];
    for (const id of [a._id, b._id]) {
      await groups.addContact("ws_a", g._id, id);
      await groups.addContact("ws_a", keep._id, id);
    }
    const before = events.length;
    const { group, contactsRemoved } = await groups.delete("ws_a", "vip");
    expect([group._id, contactsRemoved]).toEqual([g._id, 2]);
    expect(events.slice(before)).toEqual([]);
    await expect(groups.get("ws_a", g._id)).rejects.toMatchObject({ code: "group_not_found" });
    const docs = await dir.store.collection<{ _id: string; groups: string[]; groupsAddedAt: Record<string, Date> }>("contacts").find({ workspaceId: "ws_a" }, { sort: { _id: 1 } });
    for (const d of docs) {
      expect(d.groups).toEqual([keep._id]);
      expect(Object.keys(d.groupsAddedAt)).toEqual([keep._id]);
    }
    // The publicId is free again.
    expect((await groups.create("ws_a", { publicId: "vip" }))._id).not.toBe(g._id);
    expect((await groups.listContacts("ws_a", "vip")).items).toEqual([]);
  });

  it("an add that lands after the group's delete is taken off again (404), so no contact keeps a deleted group", async () => {
    const { dir, groups, contact, members } = await setup();
    const g = await groups.create("ws_a", { publicId: "vip" });
    const a = await contact("a@x.test");
    // The delete runs between the add's read of the group and its write.
    const racing = new Groups(
      { ...(await GroupStore.open(dir.store)), findById: async (ws: string, id: string) => (await GroupStore.open(dir.store)).findById(ws, id), findByPublicId: async () => g } as never,
      members, dir.workspaces,
    );
    await groups.delete("ws_a", g._id);
    await expect(racing.addContact("ws_a", "vip", a._id)).rejects.toMatchObject({ code: "group_not_found" });
    const doc = await dir.store.collection<{ _id: string; groups?: string[]; groupsAddedAt?: Record<string, Date> }>("contacts").findOne({ _id: a._id });
    expect([doc?.groups, doc?.groupsAddedAt]).toEqual([[], {}]);
  });

  it("an intent left by a write that landed recovers the same event; one that did not land recovers none", async () => {
    const { dir, groups, events, intents, contact } = await setup();
    const g = await groups.create("ws_a", { publicId: "vip" });
    const a = await contact("a@x.test");
    const contacts = await ContactStore.open(dir.store);
    const recoverState = { contacts, properties: { find: async () => null }, members: { list: async () => [] }, workspaces: { find: async () => null }, suppressions: { findMany: async () => [] } };
    await groups.addContact("ws_a", g._id, a._id);
    const joined = JSON.parse(JSON.stringify(intents.at(-1)));
    expect(await eventsOfIntent(joined, recoverState)).toEqual(events.filter((e) => e.type === "CONTACT_TAG_ADDED"));
    await groups.removeContact("ws_a", g._id, a._id);
    const left = JSON.parse(JSON.stringify(intents.at(-1)));
    expect((await eventsOfIntent(left, recoverState)).map((e) => e.id)).toEqual(events.filter((e) => e.type === "CONTACT_TAG_REMOVED").map((e) => e.id));
    // The join's intent after the leave: that membership is gone, nothing to announce.
    expect(await eventsOfIntent(joined, recoverState)).toEqual([]);
  });
});
