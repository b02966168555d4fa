import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Contact } from "@mailroom/records/model.js";
import { ContactStore } from "./contact-store.js";

const contact = (over: Partial<Contact> = {}): Contact => ({
  _id: "ct_1", workspaceId: "ws_a", email: "ann@example.test", emailLower: "ann@example.test", firstName: "", lastName: "", timezone: "",
  status: "SUBSCRIBED", source: "PUBLIC_API", properties: {}, createdAt: new Date(0), updatedAt: new Date(0), ...over,
});
const at = (s: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, s));

describe("ContactStore: the status's last change", () => {
  it("is set by a change that names the status and by an unsubscribe, and not by other changes", async () => {
    const store = await ContactStore.open(openMemoryStore());
    await store.insert(contact());
    expect((await store.findById("ws_a", "ct_1"))!.statusChangedAt).toBeUndefined();
    await store.update("ws_a", "ct_1", { fields: { firstName: "Ann" }, setProperties: {}, unsetProperties: [], updatedAt: at(1) });
    expect((await store.findById("ws_a", "ct_1"))!.statusChangedAt).toBeUndefined();
    await store.unsubscribe("ws_a", "ann@example.test", at(2));
    expect((await store.findById("ws_a", "ct_1"))!.statusChangedAt).toEqual(at(2));
    await store.update("ws_a", "ct_1", { fields: { status: "SUBSCRIBED" }, setProperties: {}, unsetProperties: [], updatedAt: at(3) });
    expect((await store.findById("ws_a", "ct_1"))!.statusChangedAt).toEqual(at(3));
  });

  it("an unsubscribe as of a moment before the last status change changes nothing; one as of after it does", async () => {
    const store = await ContactStore.open(openMemoryStore());
    await store.insert(contact());
    // A contact never changed status: an unsubscribe as of any moment applies.
    await store.insert(contact({ _id: "ct_2", email: "bob@example.test", emailLower: "bob@example.test" }));
    expect(await store.unsubscribe("ws_a", "bob@example.test", at(9), "unsubscribed", at(1))).toMatchObject({ status: "UNSUBSCRIBED" });

    await store.update("ws_a", "ct_1", { fields: { status: "UNSUBSCRIBED" }, setProperties: {}, unsetProperties: [], updatedAt: at(2) });
    await store.update("ws_a", "ct_1", { fields: { status: "SUBSCRIBED" }, setProperties: {}, unsetProperties: [], updatedAt: at(5) });
    expect(await store.unsubscribe("ws_a", "ann@example.test", at(9), "unsubscribed", at(4))).toBeNull();
    expect((await store.findById("ws_a", "ct_1"))!.status).toBe("SUBSCRIBED");
    expect(await store.unsubscribe("ws_a", "ann@example.test", at(9), "unsubscribed", at(6))).toMatchObject({ status: "UNSUBSCRIBED", statusChangedAt: at(9) });
  });
});

describe("ContactStore.open: the status backfill of documents from before statuses", () => {
  it("gives each legacy document its status from `subscribed`, once: later opens scan nothing", async () => {
    const raw = openMemoryStore();
    const contacts = raw.collection<{ _id: string } & Record<string, unknown>>("contacts");
    const legacy = (id: string, subscribed: boolean) => {
      const { status: _status, source: _source, ...rest } = contact({ _id: id, email: `${id}@example.test`, emailLower: `${id}@example.test` });
      return { ...rest, subscribed };
    };
    await contacts.insertMany([legacy("old_in", true), legacy("old_out", false)]);
    const store = await ContactStore.open(raw);
    expect([(await store.findById("ws_a", "old_in"))?.status, (await store.findById("ws_a", "old_out"))?.status]).toEqual(["SUBSCRIBED", "UNSUBSCRIBED"]);
    expect(await contacts.findOne({ _id: "old_out" })).not.toHaveProperty("subscribed");

    // The marker says it ran: a second open leaves a document without a status as it is.
    await contacts.insertOne(legacy("late", true));
    await ContactStore.open(raw);
    expect(await contacts.findOne({ _id: "late" })).not.toHaveProperty("status");
  });
});
