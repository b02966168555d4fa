import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { connectClient } from "@mailroom/kit/connect.js";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";
import type { ReceivedMessage } from "../harness/smtp-sink.js";

/**
 * Signup forms with double opt-in (issue 27, DESIGN §9.4) through the public HTTP API against
 * the real processes (accounts, audience, renderer, email, delivery, gateway), nats-server and an SMTP
 * sink: forms CRUD and validation, the hosted page, signups with and without double opt-in,
 * the confirmation email and its signed link, CORS, the honeypot and the rate limits.
 */

const KEY = "mr_test_forms_1";
const OTHER_KEY = "mr_test_forms_other_1";
const PER_IP = 40;

const bootstrap = {
  workspaces: [
    {
      id: "ws_forms", name: "Acme Letters", timezone: "UTC",
      apiKeys: [{ key: KEY }],
      verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
      monthlyLimit: 100_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }, { slug: "seats", type: "number" }],
    },
    {
      id: "ws_forms_other", name: "Other", timezone: "UTC",
      apiKeys: [{ key: OTHER_KEY }],
      verifiedEmails: [], verifiedDomains: ["other.test"], members: [],
      monthlyLimit: 1000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("signup forms with double opt-in over the public API", () => {
  let sys: TestSystem;
  let groupId: string;
  let topicId: string;
  const api = (method: string, path: string, body?: unknown, key = KEY) => sys.api(method, path, { key, body });
  /** A signup as a browser's form post (urlencoded; redirects not followed). */
  const postForm = (formId: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${sys.gatewayUrl}/f/${formId}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html", ...headers },
      body: new URLSearchParams(fields).toString(),
      redirect: "manual",
    });
  const postJson = (formId: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${sys.gatewayUrl}/f/${formId}`, { method: "POST", headers: { "content-type": "application/json", origin: "https://blog.example", ...headers }, body: JSON.stringify(body) });
  const contactByEmail = async (email: string) => {
    const res = await api("GET", `/v1/contacts/search?email=${encodeURIComponent(email)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.contact ?? undefined;
  };
  const groupMembers = async () => ((await api("GET", `/v1/groups/${groupId}/contacts?limit=100`)).body.items as Array<{ contactId: string }>).map((m) => m.contactId);
  const topicState = async (contactId: string) => ((await api("GET", `/v1/contacts/${contactId}/topics`)).body.topics as Array<{ id: string; subscribed: boolean }>).find((t) => t.id === topicId)?.subscribed;
  /** The sink's messages to an address, after waiting for `count` of them. */
  async function mailTo(address: string, count = 1, timeoutMs = 20_000): Promise<ReceivedMessage[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = sys.sink!.messages.filter((m) => m.to.includes(address));
      if (found.length >= count) return found;
      if (Date.now() > deadline) throw new Error(`no mail to ${address}\n${await sys.log("email")}\n${await sys.log("gateway")}`);
      await sleep(100);
    }
  }
  async function confirmLink(message: ReceivedMessage): Promise<string> {
    const parsed = await PostalMime.parse(message.raw);
    const link = /https?:\/\/\S+?\/c\/[A-Za-z0-9_.-]+/.exec(parsed.text ?? "")?.[0];
    expect(link, parsed.text).toBeTruthy();
    return link!;
  }

  beforeAll(async () => {
    sys = await useSystem({
      bootstrap,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      env: { MAILROOM_FORM_SUBMITS_PER_MINUTE: String(PER_IP) },
    });
    const group = await api("POST", "/v1/groups", { publicId: "newsletter", displayName: "Newsletter" });
    expect(group.status, JSON.stringify(group.body)).toBe(201);
    groupId = group.body.group.id;
    const topic = await api("POST", "/v1/topics", { name: "Product news", defaultSubscription: "OPT_IN" });
    expect(topic.status, JSON.stringify(topic.body)).toBe(201);
    topicId = topic.body.topic.id;
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
  });

  it("creates, reads, lists, changes and deletes forms, refusing what does not exist", async () => {
    const created = await api("POST", "/v1/forms", { name: "Footer", fields: ["firstName", { name: "plan", label: "Plan" }], groups: ["newsletter"], topics: [topicId], doubleOptIn: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const form = created.body.form;
    expect(form).toEqual({
      id: expect.stringMatching(/^frm_[0-9a-z]{26}$/), name: "Footer",
      fields: [{ name: "email", label: "Email", required: true }, { name: "firstName", label: "First name", required: false }, { name: "plan", label: "Plan", required: false }],
      groups: [groupId], topics: [topicId], doubleOptIn: true, redirectUrl: null, confirmTemplate: null, fromEmail: null, fromName: null,
      url: `${sys.publicUrl}/f/${form.id}`, createdAt: expect.any(String), updatedAt: expect.any(String),
    });
    expect((await api("GET", `/v1/forms/${form.id}`)).body.form).toEqual(form);
    const patched = await api("PATCH", `/v1/forms/${form.id}`, { name: "Footer signup", redirectUrl: "https://acme.test/thanks" });
    expect(patched.status).toBe(200);
    expect(patched.body.form).toMatchObject({ name: "Footer signup", redirectUrl: "https://acme.test/thanks", groups: [groupId], doubleOptIn: true });
    expect((await api("PATCH", `/v1/forms/${form.id}`, { redirectUrl: null })).body.form.redirectUrl).toBeNull();

    const refusals: Array<[unknown, number, string]> = [
      [{ name: "x", fields: ["nope"] }, 400, "invalid_form"],
      [{ name: "x", groups: ["no-such-group"] }, 400, "invalid_form"],
      [{ name: "x", topics: ["top_nope"] }, 400, "invalid_form"],
      [{ name: "x", redirectUrl: "ftp://acme.test" }, 400, "invalid_form"],
      [{ name: "x", fromEmail: "me@unverified.test" }, 400, "invalid_from"],
      [{ name: "x", confirmTemplate: "missing" }, 400, "template_not_found"],
      [{ name: "x", doubleOptIn: "yes" }, 400, "invalid_request"],
      [{ fields: [] }, 400, "invalid_request"],
      [{ name: "x", extra: 1 }, 400, "invalid_request"],
    ];
    for (const [body, status, code] of refusals) {
      const res = await api("POST", "/v1/forms", body);
      expect([res.status, res.body.code], JSON.stringify(body)).toEqual([status, code]);
    }
    // Another workspace sees none of it, and its own groups are not ours.
    expect((await api("GET", `/v1/forms/${form.id}`, undefined, OTHER_KEY)).status).toBe(404);
    expect((await api("PATCH", `/v1/forms/${form.id}`, { name: "X" }, OTHER_KEY)).status).toBe(404);
    expect((await api("DELETE", `/v1/forms/${form.id}`, undefined, OTHER_KEY)).status).toBe(404);
    expect((await api("POST", "/v1/forms", { name: "x", groups: [groupId] }, OTHER_KEY)).body.code).toBe("invalid_form");
    expect((await api("GET", "/v1/forms", undefined, OTHER_KEY)).body.forms).toEqual({ items: [], cursor: null, hasMore: false });

    const second = (await api("POST", "/v1/forms", { name: "Second" })).body.form;
    const page1 = (await api("GET", "/v1/forms?limit=1")).body.forms;
    expect(page1).toMatchObject({ hasMore: true, items: [{ id: form.id }] });
    const page2 = (await api("GET", `/v1/forms?limit=1&cursor=${page1.cursor}`)).body.forms;
    expect(page2.items.map((f: { id: string }) => f.id)).toEqual([second.id]);
    expect((await api("GET", "/v1/forms?cursor=bogus")).body.code).toBe("invalid_cursor");

    const deleted = await api("DELETE", `/v1/forms/${second.id}`);
    expect(deleted.body).toMatchObject({ isDeleted: true, form: { id: second.id } });
    expect((await api("GET", `/v1/forms/${second.id}`)).status).toBe(404);
    expect((await fetch(`${sys.gatewayUrl}/f/${second.id}`)).status).toBe(404);
  });

  it("serves the hosted page with the form's fields, escaped, and a hidden honeypot", async () => {
    const form = (await api("POST", "/v1/forms", { name: "<script>alert(1)</script> News", fields: ["firstName", "seats"] })).body.form;
    const res = await fetch(`${sys.gatewayUrl}/f/${form.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const html = await res.text();
    expect(html).not.toContain("<script>alert(1)");
    expect(html).toContain("&#60;script&#62;alert(1)&#60;/script&#62; News");
    expect(html).toContain(`action="/f/${form.id}"`);
    expect(html).toMatch(/name="email" type="email"[^>]*required/);
    expect(html).toContain(`name="firstName"`);
    expect(html).toMatch(/name="seats" type="number"/);
    expect(html).toMatch(/name="_hp"[^>]*tabindex="-1"/);
    expect(html).toContain("Acme Letters");
  });

  it("without double opt-in a form post subscribes at once and joins the groups and topics", async () => {
    const form = (await api("POST", "/v1/forms", { name: "Open", fields: ["firstName", "seats"], groups: [groupId], topics: [topicId], redirectUrl: "https://acme.test/welcome" })).body.form;
    const res = await postForm(form.id, { email: "Ann@Example.test", firstName: "Ann", seats: "4", _hp: "" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("https://acme.test/welcome");
    const contact = await contactByEmail("ann@example.test");
    expect(contact.properties).toMatchObject({ email: "Ann@example.test", firstName: "Ann", seats: 4, status: "SUBSCRIBED" });
    expect(await groupMembers()).toContain(contact.id);
    expect(await topicState(contact.id)).toBe(true);
    expect(sys.sink!.messages.filter((m) => m.to.includes("Ann@example.test") || m.to.includes("ann@example.test"))).toEqual([]);
    // JSON callers get JSON; bad input is a clear 400, never a 500.
    const json = await postJson(form.id, { email: "ben@example.test" });
    expect([json.status, await json.json()]).toEqual([200, { ok: true, doubleOptIn: false, message: "You are subscribed." }]);
    const bad = await postJson(form.id, { email: "not-an-address" });
    expect([bad.status, (await bad.json()).code]).toEqual([400, "invalid_email"]);
    const badSeats = await postJson(form.id, { email: "cy@example.test", seats: "many" });
    expect([badSeats.status, (await badSeats.json()).code]).toEqual([400, "invalid_property_value"]);
    const badPage = await postForm(form.id, { email: "" });
    expect(badPage.status).toBe(400);
    expect(badPage.headers.get("content-type")).toContain("text/html");
    const unknown = await postJson("frm_00000000000000000000000000", { email: "ann@example.test" });
    expect([unknown.status, (await unknown.json()).code]).toEqual([404, "form_not_found"]);
  });

  it("with double opt-in: pending, a confirmation email whose link subscribes and joins; a tampered link is refused", async () => {
    const form = (await api("POST", "/v1/forms", { name: "Weekly", fields: ["firstName"], groups: ["newsletter"], topics: [topicId], doubleOptIn: true })).body.form;
    const res = await postJson(form.id, { email: "dora@example.test", firstName: "Dora" });
    expect([res.status, await res.json()]).toEqual([200, { ok: true, doubleOptIn: true, message: "Check your inbox: we sent you a link to confirm your subscription." }]);
    const pending = await contactByEmail("dora@example.test");
    expect(pending.properties).toMatchObject({ firstName: "Dora", status: "OPT_IN_PENDING" });
    expect(await groupMembers()).not.toContain(pending.id);

    const [mail] = await mailTo("dora@example.test");
    const parsed = await PostalMime.parse(mail!.raw);
    expect(parsed.subject).toBe("Confirm your subscription to Acme Letters");
    expect(parsed.from?.address).toBe("no-reply@acme.test");
    const link = await confirmLink(mail!);
    expect(link.startsWith(`${sys.publicUrl}/c/`)).toBe(true);

    // Signing up again within the interval sends no second email.
    expect((await postJson(form.id, { email: "dora@example.test" })).status).toBe(200);
    await sleep(1500);
    expect(sys.sink!.messages.filter((m) => m.to.includes("dora@example.test"))).toHaveLength(1);

    // A tampered link (another contact id, same MAC) and garbage confirm nothing.
    const token = link.slice(link.lastIndexOf("/c/") + 3);
    const [body, mac] = token.split(".");
    const payload = JSON.parse(Buffer.from(body!, "base64url").toString());
    const forged = `${Buffer.from(JSON.stringify({ ...payload, e: "eve@example.test" })).toString("base64url")}.${mac}`;
    // A changed MAC: its first character (the last ones carry bits base64url decoding drops, and
    // could equal what replaced them).
    const badMac = `${mac![0] === "A" ? "B" : "A"}${mac!.slice(1)}`;
    for (const t of [forged, `${body}.${badMac}`, "garbage"]) {
      const r = await fetch(`${sys.gatewayUrl}/c/${t}`, { redirect: "manual" });
      expect(r.status, t).toBe(400);
      expect(await r.text()).toContain("not valid");
    }
    expect((await contactByEmail("dora@example.test")).properties.status).toBe("OPT_IN_PENDING");

    const confirmed = await fetch(link, { redirect: "manual" });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain("Your subscription is confirmed");
    const after = await contactByEmail("dora@example.test");
    expect(after.properties.status).toBe("SUBSCRIBED");
    expect(await groupMembers()).toContain(after.id);
    expect(await topicState(after.id)).toBe(true);
    // Following it again is harmless.
    expect((await fetch(link, { redirect: "manual" })).status).toBe(200);
  });

  it("never downgrades a SUBSCRIBED contact nor emails it; a filled honeypot does nothing", async () => {
    const form = (await api("POST", "/v1/forms", { name: "DOI", doubleOptIn: true })).body.form;
    const made = await api("POST", "/v1/contacts", { properties: { email: "eli@example.test" } });
    expect(made.body.contact.properties.status).toBe("SUBSCRIBED");
    const res = await postJson(form.id, { email: "eli@example.test" });
    expect(await res.json()).toMatchObject({ ok: true, doubleOptIn: true });
    expect((await contactByEmail("eli@example.test")).properties.status).toBe("SUBSCRIBED");

    const bot = await postForm(form.id, { email: "bot@example.test", _hp: "http://spam.example" });
    expect(bot.status).toBe(200);
    expect(await bot.text()).toContain("Check your inbox");
    const botJson = await postJson(form.id, { email: "bot2@example.test", _hp: "x" });
    expect(await botJson.json()).toMatchObject({ ok: true });
    await sleep(1500);
    expect(await contactByEmail("bot@example.test")).toBeUndefined();
    expect(await contactByEmail("bot2@example.test")).toBeUndefined();
    expect(sys.sink!.messages.filter((m) => ["eli@example.test", "bot@example.test", "bot2@example.test"].some((a) => m.to.includes(a)))).toEqual([]);
  });

  it("answers a suppressed address's double opt-in signup like any other, sending nothing (a refusal of the email service is the workspace's business)", async () => {
    const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
    await contacts.addSuppression({ workspaceId: "ws_forms", email: "gil@example.test", reason: SuppressionReason.UNSUBSCRIBED });
    const form = (await api("POST", "/v1/forms", { name: "Suppressed", doubleOptIn: true })).body.form;
    const res = await postJson(form.id, { email: "gil@example.test" });
    expect([res.status, await res.json()]).toEqual([200, { ok: true, doubleOptIn: true, message: "Check your inbox: we sent you a link to confirm your subscription." }]);
    expect((await contactByEmail("gil@example.test")).properties.status).not.toBe("SUBSCRIBED");
    await sleep(1500);
    expect(sys.sink!.messages.filter((m) => m.to.includes("gil@example.test"))).toEqual([]);
  });

  it("answers CORS preflights and puts Access-Control-Allow-Origin on signups", async () => {
    const form = (await api("POST", "/v1/forms", { name: "Embed" })).body.form;
    const pre = await fetch(`${sys.gatewayUrl}/f/${form.id}`, {
      method: "OPTIONS",
      headers: { origin: "https://blog.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toContain("POST");
    expect(pre.headers.get("access-control-allow-headers")?.toLowerCase()).toContain("content-type");
    const res = await postJson(form.id, { email: "fay@example.test" });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    const refused = await postJson(form.id, { email: "nope" });
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("limits signups per email address and per client address (429 with Retry-After)", async () => {
    const form = (await api("POST", "/v1/forms", { name: "Limits" })).body.form;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await postJson(form.id, { email: "gus@example.test" })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const limited = await postJson(form.id, { email: "GUS@example.test" });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await limited.json()).code).toBe("rate_limited");
    // Per client address: distinct addresses until the bucket is empty.
    let first429 = -1;
    for (let i = 0; i < PER_IP + 5 && first429 < 0; i++) {
      const r = await postJson(form.id, { email: `ip${i}@example.test` });
      if (r.status === 429) first429 = i;
      else expect(r.status).toBe(200);
    }
    expect(first429).toBeGreaterThan(0);
    expect(first429).toBeLessThanOrEqual(PER_IP);
    const page = await postForm(form.id, { email: "late@example.test" });
    expect(page.status).toBe(429);
    expect(page.headers.get("content-type")).toContain("text/html");
  });
});
