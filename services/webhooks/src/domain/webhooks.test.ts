import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestDomain } from "../testing.js";

async function refusal(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("webhook management", () => {
  it("creates an ACTIVE webhook with a generated whsec_ token of 32 random bytes", async () => {
    const { webhooks } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://hooks.acme.test/mailroom", events: ["EMAIL_SENT", "EMAIL_SENT", "CONTACT_CREATED"] });
    expect(w).toMatchObject({ workspaceId: "ws_1", status: "ACTIVE", events: ["EMAIL_SENT", "CONTACT_CREATED"], displayName: "hooks.acme.test" });
    expect(w.id).toMatch(/^wh_/);
    expect(w.token).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(w.token.slice(6), "base64")).toHaveLength(32);
  });

  it("keeps a token given by the caller as given", async () => {
    const { webhooks } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "http://127.0.0.1:9/x", events: ["EMAIL_SENT"], token: "my secret" });
    expect(w.token).toBe("my secret");
  });

  it("refuses non-http URLs and URLs with credentials", async () => {
    const { webhooks } = await buildTestDomain();
    for (const url of ["ftp://acme.test/x", "javascript:alert(1)", "not a url", "", "https://user:pw@acme.test/hook", "https://user@acme.test/hook"]) {
      const err = await refusal(webhooks.create("ws_1", { url, events: ["EMAIL_SENT"] }));
      expect([err.httpStatus, err.code], url).toEqual([400, "invalid_payload"]);
    }
  });

  it("takes subscriptions to CONTACT_TAG_* (groups produce them) at create and update, each name once", async () => {
    const { webhooks } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://hooks.acme.test/h", events: ["CONTACT_TAG_ADDED", "CONTACT_CREATED", "CONTACT_TAG_ADDED"] });
    expect(w.events).toEqual(["CONTACT_TAG_ADDED", "CONTACT_CREATED"]);
    const updated = await webhooks.update("ws_1", w.id, { events: ["CONTACT_UPDATED", "CONTACT_TAG_REMOVED"] });
    expect(updated.events).toEqual(["CONTACT_UPDATED", "CONTACT_TAG_REMOVED"]);
    // An unknown name is still invalid_payload.
    expect((await refusal(webhooks.create("ws_1", { url: "https://hooks.acme.test/h", events: ["NOPE", "CONTACT_TAG_ADDED"] }))).code).toBe("invalid_payload");
  });

  it("refuses URLs that are or resolve to non-public addresses at create and update, unless their network is trusted", async () => {
    const dns = { "internal.acme.test": ["10.0.0.7"], "hooks.acme.test": ["93.184.215.14"], "localhost": ["127.0.0.1", "::1"] };
    const { webhooks } = await buildTestDomain({}, { allow: [], dns });
    const refused = [
      "http://127.0.0.1:8222/varz",
      "http://10.0.0.1/hook",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]:8080/hook",
      "http://[::ffff:10.0.0.1]/hook",
      "https://internal.acme.test/hook",
      "http://localhost:3000/hook",
    ];
    for (const url of refused) {
      const err = await refusal(webhooks.create("ws_1", { url, events: ["EMAIL_SENT"] }));
      expect([err.httpStatus, err.code], url).toEqual([400, "webhook_url_not_allowed"]);
      expect(err.message, url).toMatch(/^url is not allowed: .*(loopback|private|link-local).*; webhooks may only target public addresses$/);
    }
    const w = await webhooks.create("ws_1", { url: "https://hooks.acme.test/h", events: ["EMAIL_SENT"] });
    const err = await refusal(webhooks.update("ws_1", w.id, { url: "http://169.254.169.254/latest/meta-data/" }));
    expect([err.httpStatus, err.code]).toEqual([400, "webhook_url_not_allowed"]);
    expect((await webhooks.get("ws_1", w.id)).url).toBe("https://hooks.acme.test/h");

    const trusting = (await buildTestDomain({}, { allow: ["10.0.0.0/8", "127.0.0.0/8", "::1/128"], dns })).webhooks;
    for (const url of ["http://10.0.0.1/hook", "https://internal.acme.test/hook", "http://[::1]:8080/hook", "http://localhost:3000/hook", "http://[::ffff:10.0.0.1]/hook"]) {
      expect((await trusting.create("ws_1", { url, events: ["EMAIL_SENT"] })).url, url).toBe(url);
    }
    expect((await refusal(trusting.create("ws_1", { url: "http://169.254.169.254/", events: ["EMAIL_SENT"] }))).code).toBe("webhook_url_not_allowed");
  });

  it("refuses unknown event names, naming the allowed values", async () => {
    const { webhooks } = await buildTestDomain();
    const err = await refusal(webhooks.create("ws_1", { url: "https://acme.test/h", events: ["EMAIL_SENT", "email.sent"] }));
    expect(err.code).toBe("invalid_payload");
    expect(err.message).toContain("email.sent");
    expect(err.message).toContain("TESTING_CONNECTION");
    expect(JSON.parse(err.details.extra!.allowedValues)).toContain("EMAIL_DELIVERED");
    expect((await refusal(webhooks.create("ws_1", { url: "https://acme.test/h", events: [] }))).code).toBe("invalid_payload");
  });

  it("never shows, changes or deletes another workspace's webhook", async () => {
    const { webhooks } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://acme.test/h", events: ["EMAIL_SENT"] });
    for (const attempt of [
      webhooks.get("ws_2", w.id),
      webhooks.update("ws_2", w.id, { url: "https://evil.test/" }),
      webhooks.delete("ws_2", w.id),
      webhooks.sendTestEvent("ws_2", w.id),
      webhooks.listDeliveries("ws_2", w.id),
    ]) {
      const err = await refusal(attempt);
      expect([err.httpStatus, err.code]).toEqual([404, "webhook_not_found"]);
    }
    expect(await webhooks.list("ws_2")).toEqual([]);
    expect((await webhooks.get("ws_1", w.id)).url).toBe("https://acme.test/h");
  });

  it("updates fields, refuses BANNED as a requested status, and deletes", async () => {
    const { webhooks, clock } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://acme.test/h", events: ["EMAIL_SENT"] });
    clock.advance(1000);
    const u = await webhooks.update("ws_1", w.id, { url: "https://acme.test/v2", events: ["EMAIL_BOUNCED"], token: "t2" });
    expect(u).toMatchObject({ url: "https://acme.test/v2", events: ["EMAIL_BOUNCED"], token: "t2" });
    expect(u.updatedAt.getTime()).toBe(w.createdAt.getTime() + 1000);
    expect((await refusal(webhooks.update("ws_1", w.id, { status: "BANNED" }))).code).toBe("invalid_payload");
    expect((await webhooks.delete("ws_1", w.id)).id).toBe(w.id);
    expect((await refusal(webhooks.get("ws_1", w.id))).code).toBe("webhook_not_found");
  });

  it("queues a TESTING_CONNECTION delivery on demand, whatever the webhook subscribes to", async () => {
    const { webhooks, sender, runOutbox } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://acme.test/h", events: ["EMAIL_SENT"] });
    const d = await webhooks.sendTestEvent("ws_1", w.id);
    expect(d).toMatchObject({ eventType: "TESTING_CONNECTION", state: "PENDING" });
    await runOutbox();
    expect(sender.sent).toHaveLength(1);
    expect(JSON.parse(sender.sent[0].body)).toMatchObject({ type: "TESTING_CONNECTION", workspaceId: "ws_1", id: d.eventId });
    const [listed] = await webhooks.listDeliveries("ws_1", w.id);
    expect(listed).toMatchObject({ id: d.id, state: "SUCCEEDED", attempts: 1, lastAttempt: { statusCode: 200, attempt: 1 } });
  });

  it("pages a webhook's deliveries newest first by (createdAt, id), unshifted by new ones, and refuses a made-up cursor", async () => {
    const { webhooks, clock } = await buildTestDomain();
    const w = await webhooks.create("ws_1", { url: "https://acme.test/h", events: ["EMAIL_SENT"] });
    // Seven deliveries, some created in the same millisecond (the id breaks the tie).
    for (let i = 0; i < 7; i++) {
      await webhooks.sendTestEvent("ws_1", w.id);
      if (i % 3 === 2) clock.advance(1000);
    }
    const all = (await webhooks.listDeliveries("ws_1", w.id, 200)).map((d) => d.id);
    expect(all).toHaveLength(7);
    const first = await webhooks.pageDeliveries("ws_1", w.id, { limit: 3 });
    expect(first.deliveries.map((d) => d.id)).toEqual(all.slice(0, 3));
    expect(first.nextCursor).toBeTruthy();
    // A delivery created between two pages goes on top; the next page does not move.
    clock.advance(1000);
    await webhooks.sendTestEvent("ws_1", w.id);
    const second = await webhooks.pageDeliveries("ws_1", w.id, { limit: 3, cursor: first.nextCursor });
    expect(second.deliveries.map((d) => d.id)).toEqual(all.slice(3, 6));
    const last = await webhooks.pageDeliveries("ws_1", w.id, { limit: 3, cursor: second.nextCursor });
    expect(last.deliveries.map((d) => d.id)).toEqual(all.slice(6));
    expect(last.nextCursor).toBeUndefined();
    for (const cursor of ["nope", Buffer.from("[1,2]").toString("base64url"), Buffer.from('{"a":1}').toString("base64url")]) {
      expect([(await refusal(webhooks.pageDeliveries("ws_1", w.id, { cursor }))).code]).toEqual(["invalid_cursor"]);
    }
    // Another workspace's webhook is not found, cursor or not.
    expect((await refusal(webhooks.pageDeliveries("ws_2", w.id, { cursor: first.nextCursor }))).code).toBe("webhook_not_found");
  });
});
