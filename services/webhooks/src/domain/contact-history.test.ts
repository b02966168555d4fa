import { describe, expect, it } from "vitest";
import { buildTestDomain } from "../testing.js";
import { contactOf, dispatchDirectoryEvent, dispatchWebhookEvent } from "./dispatch.js";
import type { WebhookPayload } from "./model.js";

const contactEvent = (id: string, type: WebhookPayload["type"], workspaceId: string, contactId: string, minute: number): WebhookPayload => ({
  id, type, workspaceId, createdAt: new Date(Date.UTC(2030, 0, 1, 12, minute)).toISOString(),
  data: { contact: { id: contactId, properties: { email: `${contactId}@example.test` } } },
});

describe("a contact's webhook history", () => {
  it("finds the deliveries of CONTACT_* events about one contact, to every webhook of its workspace, newest first, each event once per webhook", async () => {
    const t = await buildTestDomain();
    t.clock.set(new Date(Date.UTC(2030, 0, 1, 11)));
    const a = await t.webhooks.create("ws_1", { url: "https://a.example.test/h", events: ["CONTACT_CREATED", "CONTACT_UPDATED"] });
    const b = await t.webhooks.create("ws_1", { url: "https://b.example.test/h", events: ["CONTACT_UPDATED"] });
    await t.webhooks.create("ws_2", { url: "https://c.example.test/h", events: ["CONTACT_CREATED", "CONTACT_UPDATED"] });
    const deps = { webhooks: t.webhookStore, deliveries: t.deliveries, clock: t.clock, ids: t.ids };

    t.clock.set(new Date(Date.UTC(2030, 0, 1, 12, 0)));
    expect(await dispatchDirectoryEvent(deps, contactEvent("dev_1", "CONTACT_CREATED", "ws_1", "ctc_ann", 0))).toBe(1);
    t.clock.set(new Date(Date.UTC(2030, 0, 1, 12, 1)));
    expect(await dispatchDirectoryEvent(deps, contactEvent("dev_2", "CONTACT_UPDATED", "ws_1", "ctc_ann", 1))).toBe(2);
    expect(await dispatchDirectoryEvent(deps, contactEvent("dev_2", "CONTACT_UPDATED", "ws_1", "ctc_ann", 1))).toBe(0); // redelivered
    expect(await dispatchDirectoryEvent(deps, contactEvent("dev_3", "CONTACT_UPDATED", "ws_1", "ctc_bob", 1))).toBe(2);
    // Another workspace's contact with the same id (ids are per workspace in tests): never in ws_1's history.
    expect(await dispatchDirectoryEvent(deps, contactEvent("dev_4", "CONTACT_CREATED", "ws_2", "ctc_ann", 1))).toBe(1);
    // An email event naming the contact is not part of its CONTACT_* history.
    await t.webhooks.update("ws_1", a.id, { events: ["CONTACT_CREATED", "CONTACT_UPDATED", "EMAIL_SENT"] });
    expect(await dispatchWebhookEvent(deps, { eventId: "evt_9", type: "EMAIL_SENT", workspaceId: "ws_1", occurredAt: new Date(Date.UTC(2030, 0, 1, 12, 2)), data: { contactId: "ctc_ann" } })).toBe(1);

    const history = await t.webhooks.listContactDeliveries("ws_1", "ctc_ann");
    expect(history.map((d) => [d.eventId, d.eventType, d.webhookId === a.id ? "a" : d.webhookId === b.id ? "b" : "?"]).sort()).toEqual([
      ["dev_1", "CONTACT_CREATED", "a"], ["dev_2", "CONTACT_UPDATED", "a"], ["dev_2", "CONTACT_UPDATED", "b"],
    ]);
    expect(history[history.length - 1].eventId).toBe("dev_1"); // newest first
    expect((await t.webhooks.listContactDeliveries("ws_2", "ctc_ann")).map((d) => d.eventId)).toEqual(["dev_4"]);
    expect(await t.webhooks.listContactDeliveries("ws_1", "ctc_nobody")).toEqual([]);
    await expect(t.webhooks.listContactDeliveries("ws_1", "")).rejects.toMatchObject({ code: "invalid_payload", httpStatus: 400 });
  });

  it("names the contact of CONTACT_* events only", () => {
    expect(contactOf(contactEvent("e", "CONTACT_DELETED", "ws", "ctc_1", 0))).toBe("ctc_1");
    expect(contactOf({ id: "e", type: "CONTACT_TAG_ADDED", workspaceId: "ws", createdAt: "", data: { contactId: "ctc_2", groupId: "grp_1" } })).toBe("ctc_2");
    expect(contactOf({ id: "e", type: "EMAIL_OPENED", workspaceId: "ws", createdAt: "", data: { contactId: "ctc_3" } })).toBeUndefined();
    expect(contactOf({ id: "e", type: "CONTACT_PROPERTY_UPDATED", workspaceId: "ws", createdAt: "", data: { property: { id: "cpr_1" } } })).toBeUndefined();
  });
});
