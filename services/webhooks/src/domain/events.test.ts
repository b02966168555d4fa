import { describe, expect, it } from "vitest";
import { payloadOf, webhookEventOf, webhookEventOfType } from "./events.js";
import { EMAIL_EVENTS, WEBHOOK_EVENTS, type MailEventData, type MailEventKind } from "./model.js";

describe("mail event → webhook event mapping", () => {
  it("maps every outcome of transactional and broadcast mail to an EMAIL_* event", () => {
    const kinds: MailEventKind[] = ["sent", "deferred", "bounced", "failed", "opened", "clicked", "unsubscribed", "complained", "suppressed"];
    const table = Object.fromEntries(kinds.map((k) => [k, webhookEventOf("transactional", k)]));
    expect(table).toEqual({
      sent: "EMAIL_DELIVERED",
      deferred: "EMAIL_DEFERRED",
      bounced: "EMAIL_BOUNCED",
      failed: "EMAIL_FAILED",
      opened: "EMAIL_OPENED",
      clicked: "EMAIL_CLICKED",
      unsubscribed: "EMAIL_UNSUBSCRIBED",
      complained: "EMAIL_COMPLAINED",
      suppressed: "EMAIL_FAILED",
    });
    for (const k of kinds) expect(webhookEventOf("broadcast", k)).toBe(table[k]);
    for (const name of Object.values(table)) expect(EMAIL_EVENTS).toContain(name);
  });

  it("sends nothing for broadcast test sends", () => {
    expect(webhookEventOf("broadcast_test", "sent")).toBeUndefined();
  });

  it("lists the client's events, the email events and the suppression events", () => {
    expect(WEBHOOK_EVENTS).toContain("TESTING_CONNECTION");
    expect(WEBHOOK_EVENTS).toContain("CONTACT_TAG_REMOVED");
    expect(WEBHOOK_EVENTS).toContain("BROADCAST_COMPLETED");
    expect(WEBHOOK_EVENTS).toContain("AUTOMATION_RUN_EXITED");
    expect(WEBHOOK_EVENTS).toContain("SUPPRESSION_CREATED");
    expect(WEBHOOK_EVENTS).toContain("SUPPRESSION_DELETED");
    expect(WEBHOOK_EVENTS).toContain("EMAIL_RECEIVED");
    expect(WEBHOOK_EVENTS).toHaveLength(29);
  });
});

describe("webhook body", () => {
  it("carries the event id and time inside the body, and only the fields the event has", () => {
    const event: MailEventData = {
      eventId: "evt_1",
      kind: "clicked",
      source: "broadcast",
      workspaceId: "ws_1",
      occurredAt: new Date("2030-01-15T12:00:00Z"),
      broadcastId: "cmp_1",
      messageId: "m1@acme.test",
      recipient: "ada@example.test",
      contactId: "ctc_1",
      url: "https://acme.test/pricing",
    };
    expect(payloadOf(event, "EMAIL_CLICKED")).toEqual({
      id: "evt_1",
      type: "EMAIL_CLICKED",
      createdAt: "2030-01-15T12:00:00.000Z",
      workspaceId: "ws_1",
      data: {
        source: "broadcast",
        broadcastId: "cmp_1",
        messageId: "m1@acme.test",
        to: "ada@example.test",
        contactId: "ctc_1",
        url: "https://acme.test/pricing",
      },
    });
  });

  it("carries the email's tags as data.tags in the client's [{ name, value }] shape (DESIGN §9.5)", () => {
    const event: MailEventData = {
      eventId: "evt_2",
      kind: "sent",
      source: "transactional",
      workspaceId: "ws_1",
      occurredAt: new Date("2030-01-15T12:00:00Z"),
      emailId: "trs_1",
      tags: [{ name: "category", value: "invoice" }, { name: "tenant", value: "t-42" }],
    };
    expect(payloadOf(event, "EMAIL_DELIVERED").data.tags).toEqual([{ name: "category", value: "invoice" }, { name: "tenant", value: "t-42" }]);
    expect(payloadOf({ ...event, tags: undefined }, "EMAIL_DELIVERED").data).not.toHaveProperty("tags");
  });
});

describe("webhook events no MailEvent carries", () => {
  it("takes EMAIL_SENT and BROADCAST_STARTED / COMPLETED from WebhookEvents, and nothing that has another producer", () => {
    const produced = ["EMAIL_SENT", "BROADCAST_STARTED", "BROADCAST_COMPLETED", "AUTOMATION_RUN_STARTED", "AUTOMATION_RUN_COMPLETED", "AUTOMATION_RUN_EXITED", "EMAIL_RECEIVED"];
    expect(produced.map(webhookEventOfType)).toEqual(produced);
    for (const t of ["EMAIL_DELIVERED", "EMAIL_OPENED", "TESTING_CONNECTION", "EMAIL_TELEPORTED", ""]) expect(webhookEventOfType(t), t).toBeUndefined();
    expect(WEBHOOK_EVENTS).toContain("BROADCAST_STARTED");
  });
});
