/**
 * The audience unit's contact events reach webhooks (DESIGN §9.2): the gateway, the accounts
 * and audience units and the webhooks unit as real processes over a real nats-server, and a real HTTP receiver on
 * 127.0.0.1 that checks the client's signature (`X-SMASHSEND-SIGNATURE`) and the Standard
 * Webhooks one. Each change arrives once, even when its JetStream message is redelivered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connectNats, type NatsConnection } from "@mailroom/kit";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { DIRECTORY_EVENTS_STREAM, directoryEventSubject } from "@mailroom/pipeline/subjects.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver, type Received } from "../webhooks/receiver.js";
import { verifyClientSignature, verifyStandardWebhook } from "../webhooks/verify.js";

const WS = "ws_hooks";
const KEY = `mr_test_${WS}_1`;
const EVENTS = ["CONTACT_CREATED", "CONTACT_UPDATED", "CONTACT_DELETED", "CONTACT_UNSUBSCRIBED", "CONTACT_RESUBSCRIBED", "CONTACT_PROPERTY_UPDATED"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("contact events → webhooks (real processes)", () => {
  let sys: TestSystem;
  let nc: NatsConnection;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let url = "";
  let token = "";
  const got = () => receiver.received;
  const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });

  async function waitFor(what: string, pick: (g: Received) => boolean, timeoutMs = 20_000): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = got().find(pick);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${got().map((g) => g.event.type).join(", ")}\n${await sys.log("audience", 30)}\n${await sys.log("webhooks", 30)}`);
      await sleep(25);
    }
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    url = receiver.url;
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "webhooks", "gateway"],
      bootstrap: { workspaces: [{ id: WS, name: WS, timezone: "UTC", apiKeys: [{ key: KEY, scopes: ["api_user"] }] }] },
    });
    nc = await connectNats(sys.nats.url, "contact-webhooks-test");
    const res = await api("POST", "/v1/webhooks", { url, events: EVENTS });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    token = res.body.webhook.token;
    expect(token).toBeTruthy();
  }, 120_000);

  afterAll(async () => {
    await nc?.drain();
    await sys?.stop();
    await receiver?.close();
  });

  const signed = (g: Received) => {
    expect(verifyClientSignature(g.body, g.headers["x-smashsend-signature"] as string, token)).toBe(true);
    expect(verifyStandardWebhook(g.body, g.headers, token)).toBe(true);
    expect(g.event.workspaceId).toBe(WS);
    expect(Number.isNaN(Date.parse(g.event.createdAt))).toBe(false);
  };

  let contactId = "";
  const email = "ada@example.test";

  it("CONTACT_CREATED from the API carries the contact as GET /v1/contacts/:id answers it", async () => {
    const res = await api("POST", "/v1/contacts", { properties: { email, firstName: "Ada" } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    contactId = res.body.contact.id;
    const hit = await waitFor("CONTACT_CREATED", (g) => g.event.type === "CONTACT_CREATED" && g.event.data.contact?.id === contactId);
    signed(hit);
    expect(hit.event.data.contact).toEqual((await api("GET", `/v1/contacts/${contactId}`)).body.contact);
  });

  it("CONTACT_UPDATED names the fields that changed", async () => {
    const res = await api("PUT", `/v1/contacts/${contactId}`, { properties: { firstName: "Augusta", lastName: "King" } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const hit = await waitFor("CONTACT_UPDATED", (g) => g.event.type === "CONTACT_UPDATED" && g.event.data.contact?.properties?.firstName === "Augusta");
    signed(hit);
    expect(hit.event.data.changes.sort()).toEqual(["firstName", "lastName"]);
    expect(hit.event.data.contact).toEqual((await api("GET", `/v1/contacts/${contactId}`)).body.contact);
    // The same update again changes nothing: no event.
    await api("PUT", `/v1/contacts/${contactId}`, { properties: { firstName: "Augusta", lastName: "King" } });
  });

  it("CONTACT_UNSUBSCRIBED from the one-click unsubscribe (POST /u/{token}), then RESUBSCRIBED", async () => {
    const rt = signRecipientToken(sys.secret, { workspaceId: WS, messageId: "", email, contactId, contentId: "cmp_1" });
    const res = await fetch(`${sys.gatewayUrl}/u/${rt}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(res.status).toBe(200);
    const off = await waitFor("CONTACT_UNSUBSCRIBED", (g) => g.event.type === "CONTACT_UNSUBSCRIBED");
    signed(off);
    expect(off.event.data.contact.id).toBe(contactId);
    expect(off.event.data.contact.properties.status).toBe("UNSUBSCRIBED");
    expect(off.event.data.reason).toBe("unsubscribed");
    const change = await waitFor("CONTACT_UPDATED (status)", (g) => g.event.type === "CONTACT_UPDATED" && g.event.data.changes.includes("status"));
    expect(change.event.data.changes).toEqual(["status"]);

    const back = await api("PUT", `/v1/contacts/${contactId}`, { properties: { status: "SUBSCRIBED" } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    const on = await waitFor("CONTACT_RESUBSCRIBED", (g) => g.event.type === "CONTACT_RESUBSCRIBED");
    signed(on);
    expect(on.event.data.contact.properties.status).toBe("SUBSCRIBED");
    expect(typeof on.event.data.reason).toBe("string");
  });

  it("CONTACT_PROPERTY_UPDATED when a custom property is created and changed", async () => {
    const res = await api("POST", "/v1/contact-properties", { displayName: "Plan", type: "STRING", typeConfig: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const id = res.body.property.id;
    const hit = await waitFor("CONTACT_PROPERTY_UPDATED", (g) => g.event.type === "CONTACT_PROPERTY_UPDATED" && g.event.data.property?.id === id);
    signed(hit);
    expect(hit.event.data.property).toMatchObject({ id, apiSlug: "plan", displayName: "Plan", type: "STRING" });
    const changed = await api("PUT", `/v1/contact-properties/${id}`, { displayName: "Plan name" });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    await waitFor("CONTACT_PROPERTY_UPDATED (changed)", (g) => g.event.type === "CONTACT_PROPERTY_UPDATED" && g.event.data.property?.displayName === "Plan name");
  });

  it("CONTACT_DELETED carries the contact as it was", async () => {
    const before = (await api("GET", `/v1/contacts/${contactId}`)).body.contact;
    const res = await api("DELETE", `/v1/contacts/${contactId}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const hit = await waitFor("CONTACT_DELETED", (g) => g.event.type === "CONTACT_DELETED");
    signed(hit);
    expect(hit.event.data.contact).toEqual(before);
  });

  it("one delivery per change, even when the event is redelivered", async () => {
    // Replay every event stored in DIRECTORY_EVENTS (a redelivery / a republish after a crash): new msgIDs get past the stream's dedupe.
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const info = await jsm.streams.info(DIRECTORY_EVENTS_STREAM);
    expect(info.state.messages).toBeGreaterThan(0);
    const originals = new Map<string, string>();
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(DIRECTORY_EVENTS_STREAM, { seq });
      if (!m) continue;
      const event = m.json<{ id: string; type: string }>();
      originals.set(event.id, event.type);
      await js.publish(directoryEventSubject(event.type), m.data, { msgID: `replay-${seq}` });
      await js.publish(directoryEventSubject(event.type), m.data, { msgID: event.id }); // same id: dropped by the stream
    }
    const after = await jsm.streams.info(DIRECTORY_EVENTS_STREAM);
    expect(after.state.messages).toBe(info.state.messages * 2);
    await sleep(2_000);
    const ids = got().map((g) => g.event.id);
    expect(new Set(ids).size).toBe(ids.length);
    const perType = (t: string) => got().filter((g) => g.event.type === t).length;
    // Exactly one delivery per change the audience unit announced (a write the tests above did not
    // make themselves, e.g. the unsubscribe consumer's own status write, is a change too).
    const announced = (t: string) => [...originals.values()].filter((type) => type === t).length;
    for (const type of EVENTS) expect(perType(type), type).toBe(announced(type));
    expect(perType("CONTACT_CREATED")).toBe(1);
    expect(perType("CONTACT_UPDATED")).toBeGreaterThanOrEqual(3); // names, status off, status on
    // Once: the one-click unsubscribe's MailEvent, consumed after the suite resubscribed, is older
    // than the contact's last status change and is not applied again.
    expect(perType("CONTACT_UNSUBSCRIBED")).toBe(1);
    expect(perType("CONTACT_RESUBSCRIBED")).toBe(1);
    expect(perType("CONTACT_PROPERTY_UPDATED")).toBe(2);
    expect(perType("CONTACT_DELETED")).toBe(1);
  });
});
