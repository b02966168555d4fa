import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { buildTestDomain } from "../testing.js";
import { CollectionEmailTags } from "../adapters/store.js";
import { dispatchMailEvent } from "./dispatch.js";
import type { MailEventData } from "./model.js";

const TAGS = [{ name: "category", value: "invoice" }];

function event(overrides: Partial<MailEventData>): MailEventData {
  return {
    eventId: "evt_sent", kind: "sent", source: "transactional", workspaceId: "ws_1",
    occurredAt: new Date("2030-01-15T12:00:30Z"), emailId: "trs_1", recipient: "ada@example.test", ...overrides,
  };
}

describe("email tags on events that come without them", () => {
  it("gives an open, a click and an unsubscribe the tags delivery's event carried for the same email; other emails and workspaces get none", async () => {
    const t = await buildTestDomain({});
    const emailTags = new CollectionEmailTags(await openMemoryStore());
    await emailTags.init();
    const deps = { webhooks: t.webhookStore, deliveries: t.deliveries, clock: t.clock, ids: t.ids, emailTags };
    await t.webhooks.create("ws_1", { url: "https://a.test/", events: ["EMAIL_DELIVERED", "EMAIL_OPENED", "EMAIL_CLICKED"] });
    await t.webhooks.create("ws_2", { url: "https://b.test/", events: ["EMAIL_OPENED"] });

    await dispatchMailEvent(deps, event({ tags: TAGS }));
    await dispatchMailEvent(deps, event({ eventId: "evt_open", kind: "opened", occurredAt: new Date("2030-01-15T12:05:00Z") }));
    await dispatchMailEvent(deps, event({ eventId: "evt_click", kind: "clicked", url: "https://x.test/", occurredAt: new Date("2030-01-15T12:06:00Z") }));
    await dispatchMailEvent(deps, event({ eventId: "evt_other", kind: "opened", emailId: "trs_2", occurredAt: new Date("2030-01-15T12:07:00Z") }));
    await dispatchMailEvent(deps, event({ eventId: "evt_ws2", kind: "opened", workspaceId: "ws_2", occurredAt: new Date("2030-01-15T12:08:00Z") }));
    await t.runOutbox();

    const tagsOf = (id: string) => t.sender.sent.map((s) => JSON.parse(s.body) as { id: string; data: { tags?: unknown } }).find((b) => b.id === id)?.data.tags;
    expect(tagsOf("evt_sent")).toEqual(TAGS);
    expect(tagsOf("evt_open")).toEqual(TAGS);
    expect(tagsOf("evt_click")).toEqual(TAGS);
    expect(tagsOf("evt_other")).toBeUndefined();
    expect(tagsOf("evt_ws2")).toBeUndefined();
    expect(t.sender.sent.map((s) => (JSON.parse(s.body) as { id: string }).id).sort()).toEqual(["evt_click", "evt_open", "evt_other", "evt_sent", "evt_ws2"]);
  });
});
