import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DeliverySchema, DeliveryState } from "@mailroom/proto/webhooks/v1/webhooks_pb.js";
import { contactWebhookHistory, EVENT_INFO, eventsTable } from "./webhook-events.js";

const delivery = (eventType: string, state: DeliveryState, statusCode: number, minute: number) =>
  create(DeliverySchema, { id: `whd_${minute}`, eventType, state, attempts: 1, createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1, 12, minute))), lastAttempt: { statusCode } });

const rowOf = (html: string, event: string) => html.match(new RegExp(`<tr data-event="${event}">[\\s\\S]*?</tr>`))?.[0] ?? "";

describe("console: the events a webhook receives", () => {
  it("lists each subscribed event with whether it fires today, what fires it and its recent deliveries", () => {
    const html = eventsTable(
      ["CONTACT_CREATED", "BROADCAST_COMPLETED", "CONTACT_TAG_ADDED"],
      // newest first, as the service answers
      [delivery("CONTACT_CREATED", DeliveryState.FAILED, 500, 9), delivery("EMAIL_SENT", DeliveryState.SUCCEEDED, 200, 8), delivery("CONTACT_CREATED", DeliveryState.SUCCEEDED, 200, 7)],
      "events-h",
    ).toString();
    expect(html).toContain('aria-labelledby="events-h"');
    expect([...html.matchAll(/<tr data-event="([A-Z_]+)">/g)].map((m) => m[1])).toEqual(["CONTACT_CREATED", "BROADCAST_COMPLETED", "CONTACT_TAG_ADDED"]);
    const created = rowOf(html, "CONTACT_CREATED");
    expect(created).toContain(">fires<");
    expect(created).toContain("2 · last");
    expect(created).toMatch(/Failed.*500.*2030-01-01T12:09:00.000Z/s);
    expect(rowOf(html, "BROADCAST_COMPLETED")).toContain("none yet");
    // Groups produce CONTACT_TAG_* now: they fire like the others.
    const tag = rowOf(html, "CONTACT_TAG_ADDED");
    expect(tag).toContain(">fires<");
    expect(tag).toContain("joins a group");
    expect(tag).not.toContain("not available yet");
    // Events it is not subscribed to are not listed, even with deliveries (an earlier subscription).
    expect(html).not.toContain('data-event="EMAIL_SENT"');
  });

  it("knows every event name a webhook can subscribe to, and every one is available (groups brought CONTACT_TAG_*)", () => {
    expect(Object.keys(EVENT_INFO)).toHaveLength(29);
    expect(Object.entries(EVENT_INFO).filter(([, i]) => i.unavailable).map(([e]) => e)).toEqual([]);
  });

  it("escapes what it shows, in text and in attributes", () => {
    const page = eventsTable(['<script>alert(1)</script>"'], [], "h").toString();
    expect(page).not.toContain("<script>");
    expect(page).toContain("<code>&lt;script&gt;alert(1)&lt;/script&gt;&quot;</code>");
    expect(page).toContain('<tr data-event="&lt;script&gt;alert(1)&lt;/script&gt;&quot;">');
  });
});

describe("console: a contact's webhook history", () => {
  const d = (id: string, eventId: string, eventType: string, webhookId: string, state: DeliveryState, statusCode: number, minute: number) =>
    create(DeliverySchema, { id, eventId, eventType, webhookId, state, createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1, 12, minute))), lastAttempt: { statusCode } });

  it("shows each event once, newest first, with every webhook it went to and how that delivery stands", () => {
    const html = contactWebhookHistory(
      [
        d("whd_3", "dev_2", "CONTACT_UNSUBSCRIBED", "wh_a", DeliveryState.FAILED, 500, 5),
        d("whd_2", "dev_2", "CONTACT_UNSUBSCRIBED", "wh_b", DeliveryState.SUCCEEDED, 200, 5),
        d("whd_1", "dev_1", "CONTACT_CREATED", "wh_a", DeliveryState.SUCCEEDED, 200, 1),
      ],
      new Map([["wh_a", "CRM <sync>"], ["wh_b", "Billing"]]),
      "wh-h",
    ).toString();
    expect([...html.matchAll(/<tr data-event-id="([^"]+)">[\s\S]*?<code>([A-Z_]+)<\/code>/g)].map((m) => [m[1], m[2]])).toEqual([["dev_2", "CONTACT_UNSUBSCRIBED"], ["dev_1", "CONTACT_CREATED"]]);
    const unsubscribed = html.match(/<tr data-event-id="dev_2">[\s\S]*?<\/tr>/)![0];
    expect(unsubscribed).toMatch(/CRM &lt;sync&gt;.*Failed.*500.*Billing.*Succeeded.*200/s);
    expect(unsubscribed).toContain("2030-01-01T12:05:00.000Z");
  });

  it("says so when no webhook has received anything about the contact", () => {
    expect(contactWebhookHistory([], new Map(), "wh-h").toString()).toContain("No webhook has received an event about this contact yet");
  });
});
