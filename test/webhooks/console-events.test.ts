/**
 * The console shows what webhooks receive (issue 26): a webhook's page lists its subscribed
 * events (each marked as firing today or not) with its recent deliveries of each, and a
 * contact's page shows its webhook history (the CONTACT_* events that went to webhooks). Real
 * accounts, audience, webhooks and gateway processes over a real nats-server, a loopback receiver, and
 * the console read over HTTP with a signed-in session.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import { startReceiver } from "./receiver.js";

const WS = "ws_console_hooks";
const KEY = `mr_test_${WS}_1`;
const OTHER = "ws_console_hooks_other";
const OTHER_KEY = `mr_test_${OTHER}_1`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("console: webhook events and a contact's webhook history", () => {
  let sys: TestSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  /** Signs in over HTTP as the browser would; answers a GET of a console page with that session. */
  async function signIn(key: string) {
    const page = await fetch(`${sys.gatewayUrl}/console/sign-in`);
    const jar = new Map<string, string>();
    const keep = (res: Response) => {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(";");
        const i = pair.indexOf("=");
        jar.set(pair.slice(0, i), pair.slice(i + 1));
      }
    };
    keep(page);
    const csrf = (await page.text()).match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const res = await fetch(`${sys.gatewayUrl}/console/sign-in`, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie(), origin: sys.gatewayUrl },
      body: new URLSearchParams({ _csrf: csrf, apiKey: key, next: "/console" }).toString(),
    });
    expect(res.status, await res.clone().text()).toBe(303);
    keep(res);
    return async (path: string) => {
      const r = await fetch(`${sys.gatewayUrl}/console${path}`, { headers: { cookie: cookie() }, redirect: "manual" });
      return { status: r.status, html: await r.text() };
    };
  }

  beforeAll(async () => {
    receiver = await startReceiver();
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "webhooks", "gateway"],
      bootstrap: {
        workspaces: [
          { id: WS, name: WS, timezone: "UTC", apiKeys: [{ key: KEY, scopes: ["api_user"] }] },
          { id: OTHER, name: OTHER, timezone: "UTC", apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }] },
        ],
      },
    });
  }, 120_000);

  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  it("shows each subscribed event with whether it fires and its deliveries, and the contact's webhook history", async () => {
    const api = (method: string, path: string, body?: unknown) => sys.api(method, path, { key: KEY, body });
    const hook = await api("POST", "/v1/webhooks", { url: receiver.url, events: ["CONTACT_CREATED", "CONTACT_UPDATED", "BROADCAST_COMPLETED"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(200);
    const webhookId = hook.body.webhook.id as string;
    // Groups produce CONTACT_TAG_*: a subscription to them is taken (it was refused before groups).
    const tagHook = await api("POST", "/v1/webhooks", { url: receiver.url, events: ["CONTACT_TAG_ADDED"] });
    expect(tagHook.status, JSON.stringify(tagHook.body)).toBe(200);
    expect((await api("DELETE", `/v1/webhooks/${tagHook.body.webhook.id}`)).status).toBe(200);

    const created = await api("POST", "/v1/contacts", { properties: { email: "ada@example.test", firstName: "Ada" } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const contactId = created.body.contact.id as string;
    expect((await api("PUT", `/v1/contacts/${contactId}`, { properties: { firstName: "Augusta" } })).status).toBe(200);
    for (let i = 0; i < 200 && receiver.received.length < 2; i++) await sleep(50);
    expect(receiver.received.map((r) => r.event.type).sort()).toEqual(["CONTACT_CREATED", "CONTACT_UPDATED"]);

    const get = await signIn(KEY);
    // The webhook's page: its three events, which fire, and the deliveries of each.
    // (The receiver has both; each delivery's outcome is written just after its answer.)
    let page = await get(`/webhooks/${webhookId}`);
    for (let i = 0; i < 100 && (page.html.match(/Succeeded/g) ?? []).length < 4; i++) {
      await sleep(50);
      page = await get(`/webhooks/${webhookId}`);
    }
    expect(page.status).toBe(200);
    const row = (event: string) => page.html.match(new RegExp(`<tr data-event="${event}">[\\s\\S]*?</tr>`))?.[0] ?? "";
    expect(page.html).toContain("Events it receives");
    expect(row("CONTACT_CREATED")).toMatch(/fires[\s\S]*1 · last[\s\S]*Succeeded[\s\S]*200/);
    expect(row("CONTACT_UPDATED")).toMatch(/fires[\s\S]*1 · last[\s\S]*Succeeded/);
    expect(row("BROADCAST_COMPLETED")).toMatch(/fires[\s\S]*none yet/);
    expect(page.html).not.toContain('data-event="EMAIL_SENT"');
    // The add form offers CONTACT_TAG_* like every other event.
    const list = await get("/webhooks");
    expect(list.html).toMatch(/value="CONTACT_TAG_ADDED">/);
    expect(list.html).not.toMatch(/value="CONTACT_TAG_ADDED"[^>]*disabled/);

    // The contact's page: its webhook history, each event with the webhook it went to.
    const contact = await get(`/contacts/${contactId}`);
    expect(contact.status).toBe(200);
    expect(contact.html).toContain("Webhook history");
    const history = contact.html.slice(contact.html.indexOf('id="wh-h"'));
    const types = [...history.matchAll(/<tr data-event-id="[^"]+">[\s\S]*?<code>([A-Z_]+)<\/code>/g)].map((m) => m[1]);
    expect(types).toEqual(["CONTACT_UPDATED", "CONTACT_CREATED"]);
    expect(history).toMatch(/127\.0\.0\.1[\s\S]*Succeeded[\s\S]*200/);

    // Another workspace sees neither the webhook nor the contact.
    const other = await signIn(OTHER_KEY);
    expect((await other(`/webhooks/${webhookId}`)).status).toBe(404);
    expect((await other(`/contacts/${contactId}`)).status).toBe(404);
  }, 90_000);
});
