import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime, { type Email } from "postal-mime";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit/connect.js";
import { startSystem, type TestSystem } from "../harness/system.js";

/**
 * The spec's transactional email endpoints through the public HTTP API, against the real
 * processes (accounts, audience, renderer, email, delivery, gateway), nats-server and an SMTP sink.
 * One test per row of the spec's email Errors table and per behaviour rule of issue 6.
 */

const KEY = "mr_test_acme_email_1";
const ADMIN_ONLY_KEY = "mr_test_acme_admin_only";
const SMALL_KEY = "mr_test_small_email_1";
const OTHER_KEY = "mr_test_other_email_1";

const bootstrap = {
  workspaces: [
    {
      id: "ws_acme", name: "Acme", timezone: "UTC",
      apiKeys: [{ key: KEY, scopes: ["api_user"] }, { key: ADMIN_ONLY_KEY, scopes: ["admin"] }],
      verifiedEmails: ["founder@gmail.test"], verifiedDomains: ["acme.test"], members: [],
      flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
      monthlyLimit: 10_000, sendingAccountNew: false,
      contactProperties: [{ slug: "plan", type: "string" }],
      templates: [{
        name: "welcome",
        subject: "Welcome {{firstName}}{{missing}}!",
        html: '<html><body><p>Hi {{firstName}}, your code is {{code}}.</p><p><a href="https://acme.test/start?x=1">Start</a> or <a href="mailto:help@acme.test">mail us</a></p></body></html>',
        previewText: "Your account is ready",
      }],
    },
    {
      id: "ws_small", name: "Small", timezone: "UTC",
      apiKeys: [{ key: SMALL_KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["small.test"], members: [],
      monthlyLimit: 3, sendingAccountNew: false,
    },
    {
      id: "ws_other", name: "Other", timezone: "UTC",
      apiKeys: [{ key: OTHER_KEY, scopes: ["api_user"] }],
      verifiedEmails: [], verifiedDomains: ["other.test"], members: [],
      monthlyLimit: 1000, sendingAccountNew: false,
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("transactional emails over the public API", () => {
  let sys: TestSystem;
  let seq = 0;
  /** A recipient no other test uses, so the sink's messages can be told apart. */
  const rcpt = (tag: string) => `${tag}-${++seq}@example.test`;

  const send = (body: unknown, key = KEY) => sys.api("POST", "/v1/emails", { key, body });
  const batch = (body: unknown, key = KEY) => sys.api("POST", "/v1/emails/batch", { key, body });
  const get = (id: string, key = KEY) => sys.api("GET", `/v1/emails/${id}`, { key });
  const raw = (to: string, extra: Record<string, unknown> = {}) => ({
    from: "Acme Team <team@acme.test>", to, subject: "Hello there", html: '<p>Hello <a href="https://acme.test/docs">docs</a></p>', ...extra,
  });

  async function mailTo(address: string, timeoutMs = 15_000): Promise<Email & { raw: string }> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const msg = sys.sink!.messages.find((m) => m.to.includes(address));
      if (msg) return Object.assign(await PostalMime.parse(msg.raw), { raw: msg.raw });
      if (Date.now() > deadline) {
        throw new Error(`no mail to ${address} within ${timeoutMs} ms\n--- email ---\n${await sys.log("email")}\n--- delivery ---\n${await sys.log("delivery")}`);
      }
      await sleep(50);
    }
  }
  const mailCount = (address: string) => sys.sink!.messages.filter((m) => m.to.includes(address)).length;

  async function statusBecomes(id: string, status: string, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs;
    let last: any;
    while (Date.now() < deadline) {
      last = await get(id);
      if (last.body?.email?.status === status) return last.body.email;
      await sleep(100);
    }
    throw new Error(`email ${id} did not become ${status}; last: ${JSON.stringify(last?.body)}`);
  }

  beforeAll(async () => {
    sys = await startSystem({
      bootstrap,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      env: { MAILROOM_SCHEDULER_INTERVAL_MS: "200" },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  describe("errors table", () => {
    it("400 with allowedEmails, allowedDomains and docsUrl when from is not verified", async () => {
      const to = rcpt("unverified");
      const res = await send(raw(to, { from: "Eve <eve@evil.test>" }));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        statusCode: 400, error: "Bad Request", code: "invalid_from", message: expect.stringContaining("eve@evil.test"),
        allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"], docsUrl: `${sys.publicUrl}/docs/errors/invalid_from`,
      });
      await sleep(300);
      expect(mailCount(to)).toBe(0);
    });

    it("400 with docsUrl when the payload matches neither form", async () => {
      for (const body of [
        { to: "a@example.test", subject: "no html, no template" },
        { from: "team@acme.test", to: "a@example.test", subject: "x", html: "<p>x</p>", template: "welcome" },
        { from: "team@acme.test", to: "a@example.test", html: "<p>missing subject</p>" },
        { template: "welcome", variables: { a: 1 } },
        { from: 42, to: "a@example.test", subject: "x", html: "<p>x</p>" },
        [],
        JSON.stringify("just a string"),
        "null",
      ]) {
        const res = await send(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toEqual({ statusCode: 400, error: "Bad Request", code: "invalid_payload", message: expect.any(String), docsUrl: `${sys.publicUrl}/docs/errors/invalid_payload` });
      }
    });

    it("401 for a missing, invalid or under-scoped key on every email endpoint", async () => {
      const sent = await send(raw(rcpt("auth")));
      const id = sent.body.email.id;
      const calls = [
        (k?: string) => sys.api("POST", "/v1/emails", { key: k, body: raw("x@example.test") }),
        (k?: string) => sys.api("POST", "/v1/emails/batch", { key: k, body: { emails: [raw("x@example.test")] } }),
        (k?: string) => sys.api("GET", `/v1/emails/${id}`, { key: k }),
        (k?: string) => sys.api("POST", `/v1/emails/${id}/cancel`, { key: k }),
      ];
      for (const call of calls) {
        for (const key of [undefined, "mr_test_no_such_key_123", ADMIN_ONLY_KEY]) {
          const res = await call(key);
          expect(res.status).toBe(401);
          expect(res.body).toEqual({ statusCode: 401, error: "Unauthorized", code: "unauthorized", message: expect.any(String), docsUrl: `${sys.publicUrl}/docs/errors/unauthorized` });
        }
      }
      expect(mailCount("x@example.test")).toBe(0);
    });

    it("403 when the monthly limit is reached; a batch that would cross it sends nothing", async () => {
      const a = rcpt("small");
      const b = rcpt("small");
      const first = await batch({ emails: [raw(a, { from: "hi@small.test" }), raw(b, { from: "hi@small.test" })] }, SMALL_KEY);
      expect(first.status).toBe(200);
      expect(first.body.emails.successful).toHaveLength(2);

      const c = rcpt("small");
      const d = rcpt("small");
      const crossing = await batch({ emails: [raw(c, { from: "hi@small.test" }), raw(d, { from: "hi@small.test" })] }, SMALL_KEY);
      expect(crossing.status).toBe(403);
      expect(crossing.body).toEqual({ statusCode: 403, error: "Forbidden", code: "monthly_limit_reached", message: expect.any(String), docsUrl: `${sys.publicUrl}/docs/errors/monthly_limit_reached` });

      const last = await send(raw(c, { from: "hi@small.test" }), SMALL_KEY);
      expect(last.status).toBe(200);
      const over = await send(raw(d, { from: "hi@small.test" }), SMALL_KEY);
      expect(over.status).toBe(403);
      expect(over.body).toEqual({ statusCode: 403, error: "Forbidden", code: "monthly_limit_reached", message: expect.any(String), docsUrl: `${sys.publicUrl}/docs/errors/monthly_limit_reached` });
      await mailTo(c);
      await sleep(300);
      expect(mailCount(d)).toBe(0);
    });
  });

  describe("raw emails", () => {
    it("answers with exactly the spec's record and delivers a MIME message with the right headers and parts", async () => {
      const to = rcpt("raw");
      const res = await send(raw(to, { replyTo: "support@acme.test", previewText: "A quick peek" }));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        email: {
          id: expect.stringMatching(/^trs_[0-9a-z]{26}$/), messageId: expect.any(String), status: "SENT",
          to, type: "raw", from: "Acme Team <team@acme.test>", subject: "Hello there",
        },
      });
      const mail = await mailTo(to);
      expect(mail.from).toMatchObject({ address: "team@acme.test", name: "Acme Team" });
      expect(mail.to?.[0]?.address).toBe(to);
      expect(mail.subject).toBe("Hello there");
      expect(mail.replyTo?.[0]?.address).toBe("support@acme.test");
      expect(mail.messageId).toBe(`<${res.body.email.messageId}>`);
      // previewText is the hidden preheader, before the content.
      const html = mail.html!;
      expect(html).toMatch(/<div style="display:none[^"]*">A quick peek/);
      expect(html.indexOf("A quick peek")).toBeLessThan(html.indexOf("Hello"));
      // Raw defaults: clicks tracked, opens not.
      expect(html).toContain(`${sys.publicUrl}/t/c/`);
      expect(html).not.toContain("https://acme.test/docs\"");
      expect(html).not.toContain(`${sys.publicUrl}/t/o/`);
      // The text part is generated from the HTML.
      expect(mail.text).toContain("Hello");
    });

    it("uses the given text, fromName and tracking settings", async () => {
      const to = rcpt("settings");
      const res = await send(raw(to, { from: "team@acme.test", fromName: "Named Sender", text: "Plain words only", settings: { trackClicks: false, trackOpens: true } }));
      expect(res.status).toBe(200);
      const mail = await mailTo(to);
      expect(mail.from).toMatchObject({ address: "team@acme.test", name: "Named Sender" });
      expect(mail.text?.trim()).toBe("Plain words only");
      expect(mail.html).toContain('href="https://acme.test/docs"');
      expect(mail.html).toContain(`${sys.publicUrl}/t/o/`);
    });

    it("shows groupBy only when it was given", async () => {
      const withGroup = await send(raw(rcpt("group"), { groupBy: "receipts" }));
      expect(withGroup.body.email.groupBy).toBe("receipts");
      const without = await send(raw(rcpt("group")));
      expect(without.body.email).not.toHaveProperty("groupBy");
      expect(without.body.email).not.toHaveProperty("template");
    });

    it("upserts the recipient contact with contactProperties", async () => {
      const to = rcpt("contact");
      const res = await send(raw(to, { contactProperties: { firstName: "Cleo", plan: "gold" } }));
      expect(res.status).toBe(200);
      await mailTo(to);
      const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
      const { contact } = await contacts.getContact({ workspaceId: "ws_acme", email: to });
      expect(contact?.firstName).toBe("Cleo");
      expect(contact?.properties).toMatchObject({ plan: "gold" });
    });

    it("refuses CR/LF and control characters in from, to, subject and replyTo with 400", async () => {
      const to = rcpt("inject");
      for (const body of [
        raw(`${to}\r\nBcc: victim@example.test`),
        raw(to, { from: "team@acme.test\r\nBcc: victim@example.test" }),
        raw(to, { subject: "Hi\r\nBcc: victim@example.test" }),
        raw(to, { replyTo: "a@acme.test\nBcc: victim@example.test" }),
        raw(to, { subject: "tab\u0000null" }),
      ]) {
        const res = await send(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
      }
      await sleep(300);
      expect(mailCount(to) + mailCount("victim@example.test")).toBe(0);
    });
  });

  describe("templated emails", () => {
    it("renders the stored template with variables (missing ones empty) and tracks opens and clicks by default", async () => {
      const to = rcpt("tpl");
      const res = await send({ template: "welcome", to, variables: { firstName: "Ann", code: "X-42" } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        email: { id: expect.stringMatching(/^trs_/), messageId: expect.any(String), status: "SENT", to, type: "templated", template: "welcome" },
      });
      const mail = await mailTo(to);
      expect(mail.subject).toBe("Welcome Ann!");
      expect(mail.html).toContain("Hi Ann, your code is X-42.");
      expect(mail.html).toMatch(/display:none[^>]*>Your account is ready/);
      expect(mail.html).toContain(`${sys.publicUrl}/t/o/`);
      expect(mail.html).toContain(`${sys.publicUrl}/t/c/`);
      expect(mail.html).toContain('href="mailto:help@acme.test"');
      expect(mail.text).toContain("Hi Ann, your code is X-42.");
      expect(mail.from?.address).toBe("founder@gmail.test");
    });

    it("accepts a templated email without variables", async () => {
      const to = rcpt("novars");
      const res = await send({ template: "welcome", to });
      expect(res.status).toBe(200);
      expect((await mailTo(to)).subject).toBe("Welcome !");
    });

    it("refuses an unknown template with 400 naming it", async () => {
      const res = await send({ template: "no-such-template", to: rcpt("tpl"), variables: {} });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
      expect(res.body.message).toContain("no-such-template");
    });
  });

  describe("statuses, scheduling and cancel", () => {
    it("moves a delivered email to DELIVERED and a hard bounce to FAILED with its reason", async () => {
      const ok = rcpt("delivered");
      const sent = await send(raw(ok));
      await mailTo(ok);
      expect(await statusBecomes(sent.body.email.id, "DELIVERED")).toMatchObject({ id: sent.body.email.id, to: ok, type: "raw" });

      const bounce = rcpt("bounce");
      sys.sink!.setBehaviour((message) => (message.includes(bounce) ? { kind: "reject", code: 550, message: "no such user" } : { kind: "accept" }));
      try {
        const res = await send(raw(bounce));
        const failed = await statusBecomes(res.body.email.id, "FAILED");
        expect(failed.reason).toMatch(/550|no such user/i);
        // The address ends on the suppression list through one path: the audience unit's consumer of the BOUNCED event.
        const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
        const deadline = Date.now() + 15_000;
        let found;
        while (!(found = (await contacts.listSuppressions({ workspaceId: "ws_acme", page: { limit: 100 } })).suppressions.find((s) => s.email === bounce))) {
          if (Date.now() > deadline) throw new Error(`${bounce} was not suppressed`);
          await sleep(100);
        }
        expect(found).toMatchObject({ email: bounce, reason: SuppressionReason.HARD_BOUNCE });
      } finally {
        sys.sink!.setBehaviour(() => ({ kind: "accept" }));
      }
    });

    it("accepts a suppressed recipient with a record that ends FAILED, never sending", async () => {
      const to = rcpt("suppressed");
      const contacts = connectClient(ContactService, `http://127.0.0.1:${sys.ports.audience}`);
      await contacts.addSuppression({ workspaceId: "ws_acme", email: to, reason: SuppressionReason.UNSUBSCRIBED });
      const res = await send(raw(to));
      expect(res.status).toBe(200);
      const record = (await get(res.body.email.id)).body.email;
      expect(record.status).toBe("FAILED");
      expect(record.reason).toMatch(/suppress/i);
      await sleep(500);
      expect(mailCount(to)).toBe(0);
    });

    it("sends now for a past sendAt, refuses beyond 90 days and invalid dates", async () => {
      const past = rcpt("past");
      const res = await send(raw(past, { sendAt: new Date(Date.now() - 3600_000).toISOString() }));
      expect(res.body.email.status).toBe("SENT");
      await mailTo(past);

      const far = await send(raw(rcpt("far"), { sendAt: new Date(Date.now() + 91 * 24 * 3600_000).toISOString() }));
      expect(far.status).toBe(400);
      expect(far.body).toMatchObject({ statusCode: 400, error: "Bad Request", code: "send_at_out_of_range" });
      for (const sendAt of ["tomorrow", "2030-02-30T10:00:00Z", "2030-01-01T10:00:00", 12345]) {
        const bad = await send(raw(rcpt("bad-date"), { sendAt }));
        expect(bad.status, String(sendAt)).toBe(400);
        expect(bad.body.statusCode).toBe(400);
      }
    });

    it("schedules a future email, delivers it when due even across an email-service restart", async () => {
      const to = rcpt("scheduled");
      const sendAt = new Date(Date.now() + 4_000);
      const res = await send(raw(to, { sendAt: sendAt.toISOString() }));
      expect(res.status).toBe(200);
      expect(res.body.email.status).toBe("SCHEDULED");
      expect((await get(res.body.email.id)).body.email).toMatchObject({ status: "SCHEDULED", sendAt: sendAt.toISOString() });

      await sys.processes.restart("email");
      const mail = await mailTo(to, 20_000);
      expect(Date.now()).toBeGreaterThanOrEqual(sendAt.getTime());
      expect(mail.subject).toBe("Hello there");
      await statusBecomes(res.body.email.id, "DELIVERED");
      await sleep(600);
      expect(mailCount(to)).toBe(1);
    });

    it("cancels a scheduled email (never sent), and answers 409 for a second cancel or a sent email", async () => {
      const to = rcpt("cancel");
      const res = await send(raw(to, { sendAt: new Date(Date.now() + 2_000).toISOString() }));
      const id = res.body.email.id;
      const cancelled = await sys.api("POST", `/v1/emails/${id}/cancel`, { key: KEY });
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.email).toMatchObject({ id, status: "CANCELLED" });
      expect((await get(id)).body.email.status).toBe("CANCELLED");
      // A bodiless POST that still says Content-Type: application/json is fine too.
      const again = await sys.api("POST", `/v1/emails/${id}/cancel`, { key: KEY, headers: { "content-type": "application/json" } });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ statusCode: 409, error: "Conflict", code: "email_not_cancellable" });

      const now = await send(raw(rcpt("cancel-sent")));
      const late = await sys.api("POST", `/v1/emails/${now.body.email.id}/cancel`, { key: KEY });
      expect(late.status).toBe(409);
      await sleep(2_500);
      expect(mailCount(to)).toBe(0);
    });

    it("answers 404 for unknown ids and for another workspace's email", async () => {
      const mine = await send(raw(rcpt("tenant")));
      expect((await get(mine.body.email.id, OTHER_KEY)).status).toBe(404);
      expect((await sys.api("POST", `/v1/emails/${mine.body.email.id}/cancel`, { key: OTHER_KEY })).status).toBe(404);
      const unknown = await get("trs_01hzzzzzzzzzzzzzzzzzzzzzzz");
      expect(unknown.status).toBe(404);
      expect(unknown.body).toMatchObject({ statusCode: 404, error: "Not Found" });
      expect((await get("not-an-id")).status).toBe(404);
    });
  });

  describe("idempotency", () => {
    it("returns the original record for the same key and payload, 409 for another payload, sending once", async () => {
      const to = rcpt("idem");
      const body = raw(to, { idempotencyKey: `order-${seq}` });
      const first = await send(body);
      const second = await send(body);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.body).toEqual(first.body);
      const other = await send({ ...body, subject: "Another subject" });
      expect(other.status).toBe(409);
      expect(other.body).toMatchObject({ statusCode: 409, error: "Conflict", code: "idempotency_key_reused" });
      await mailTo(to);
      await sleep(500);
      expect(mailCount(to)).toBe(1);
    });

    it("sends once under concurrent identical requests; the others get the record or 409 in progress", async () => {
      const to = rcpt("idem-race");
      const body = raw(to, { idempotencyKey: `race-${seq}` });
      const results = await Promise.all(Array.from({ length: 10 }, () => send(body)));
      const ok = results.filter((r) => r.status === 200);
      const busy = results.filter((r) => r.status === 409);
      expect(ok.length + busy.length).toBe(10);
      expect(new Set(ok.map((r) => r.body.email.id)).size).toBe(1);
      for (const r of busy) expect(r.body.code).toBe("idempotency_request_in_progress");
      await mailTo(to);
      await sleep(500);
      expect(mailCount(to)).toBe(1);
    });

    it("applies per batch item", async () => {
      const a = rcpt("idem-batch");
      const b = rcpt("idem-batch");
      const items = [raw(a, { idempotencyKey: `item-a-${seq}` }), raw(b, { idempotencyKey: `item-b-${seq}` })];
      const first = await batch({ emails: items });
      const second = await batch({ emails: [items[0], { ...items[1], subject: "changed" }] });
      expect(second.body.emails.successful[0].id).toBe(first.body.emails.successful[0].id);
      expect(second.body.emails.failed).toEqual([
        expect.objectContaining({ index: 1, to: b, statusCode: 409, code: "idempotency_key_reused" }),
      ]);
      await Promise.all([mailTo(a), mailTo(b)]);
      await sleep(500);
      expect(mailCount(a) + mailCount(b)).toBe(2);
    });
  });

  describe("hostile input", () => {
    it("answers every malformed field value with a 4xx, never a 500", async () => {
      const values: unknown[] = [null, 0, -1, true, [], {}, "", " ", "x".repeat(20_000), "\u0000", "a\r\nb", "😀@😀", { $gt: "" }, ["a@b.test"]];
      const rawFields = ["from", "fromName", "to", "subject", "html", "text", "previewText", "replyTo", "contactProperties", "settings", "groupBy", "sendAt", "idempotencyKey"];
      const tplFields = ["template", "to", "variables", "settings", "groupBy", "sendAt", "idempotencyKey"];
      const bodies: unknown[] = [];
      for (const field of rawFields) for (const v of values) bodies.push({ ...raw(`fuzz-${field}@example.test`), [field]: v });
      for (const field of tplFields) for (const v of values) bodies.push({ template: "welcome", to: `fuzz-${field}@example.test`, variables: {}, [field]: v });
      bodies.push({ ...raw("fuzz@example.test"), settings: { trackClicks: "yes" } }, { ...raw("fuzz@example.test"), settings: { other: true } });
      const statuses = new Map<number, number>();
      for (let i = 0; i < bodies.length; i += 16) {
        const chunk = await Promise.all(bodies.slice(i, i + 16).map((b) => send(b)));
        chunk.forEach((res, j) => {
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(res.status, JSON.stringify(bodies[i + j]).slice(0, 200)).toBeLessThan(500);
          expect(res.body.statusCode ?? 200).toBe(res.status);
        });
      }
      const batchRes = await batch({ emails: bodies.slice(0, 50) });
      expect(batchRes.status).toBeLessThan(500);
      for (const f of batchRes.body.emails?.failed ?? []) expect(f.statusCode).toBeLessThan(500);
      expect(statuses.get(400)).toBeGreaterThan(0);
    });
  });

  describe("batch", () => {
    it("sends mixed raw and templated items with their own sendAt and groupBy; invalid items fail alone with their index", async () => {
      const [r1, t1, s1, bad1, bad2, bad3] = [rcpt("b-raw"), rcpt("b-tpl"), rcpt("b-sched"), rcpt("b-bad"), rcpt("b-bad"), rcpt("b-bad")];
      const res = await batch({
        emails: [
          raw(r1, { groupBy: "g-raw" }),
          { template: "welcome", to: t1, variables: { firstName: "Tia" }, groupBy: "g-tpl" },
          raw(s1, { sendAt: new Date(Date.now() + 3600_000).toISOString() }),
          raw(bad1, { from: "nobody@evil.test" }),
          { to: bad2, subject: "neither form" },
          { template: "missing-template", to: bad3, variables: {} },
        ],
      });
      expect(res.status).toBe(200);
      const { successful, failed } = res.body.emails;
      expect(successful).toEqual([
        { id: expect.stringMatching(/^trs_/), messageId: expect.any(String), status: "SENT", to: r1, type: "raw" },
        { id: expect.stringMatching(/^trs_/), messageId: expect.any(String), status: "SENT", to: t1, type: "templated", template: "welcome" },
        { id: expect.stringMatching(/^trs_/), messageId: expect.any(String), status: "SCHEDULED", to: s1, type: "raw" },
      ]);
      expect(failed).toEqual([
        { index: 3, to: bad1, statusCode: 400, error: "Bad Request", code: "invalid_from", message: expect.any(String), allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"], docsUrl: expect.any(String) },
        { index: 4, to: bad2, statusCode: 400, error: "Bad Request", code: "invalid_payload", message: expect.any(String), docsUrl: expect.any(String) },
        expect.objectContaining({ index: 5, to: bad3, statusCode: 400, error: "Bad Request", code: "template_not_found" }),
      ]);
      expect((await get(successful[0].id)).body.email.groupBy).toBe("g-raw");
      expect((await get(successful[1].id)).body.email.groupBy).toBe("g-tpl");
      expect((await mailTo(t1)).subject).toBe("Welcome Tia!");
      await mailTo(r1);
      await sleep(300);
      expect(mailCount(s1) + mailCount(bad1) + mailCount(bad2) + mailCount(bad3)).toBe(0);
    });

    it("refuses more than 50, an empty list and a non-array with 400, sending nothing", async () => {
      const to = rcpt("b-big");
      for (const body of [{ emails: Array.from({ length: 51 }, () => raw(to)) }, { emails: [] }, { emails: raw(to) }, {}, [raw(to)]]) {
        const res = await batch(body);
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
      }
      const fifty = await batch({ emails: Array.from({ length: 50 }, (_, i) => raw(`b50-${seq}-${i}@example.test`)) });
      expect(fifty.status).toBe(200);
      expect(fifty.body.emails.successful).toHaveLength(50);
      await sleep(300);
      expect(mailCount(to)).toBe(0);
    });
  });

  describe("the public API's rough edges (issue 12)", () => {
    it("renders raw content's {{name}} from its contactProperties in HTML, subject, preview text and text (Liquid, DESIGN §10.2); links are still tracked", async () => {
      const to = rcpt("literal");
      const res = await send(raw(to, {
        subject: "Hi {{name}}", previewText: "Peek {{name}}", text: "Text {{name}}",
        html: '<p>Hello {{name}} and {{ firstName }}</p><a href="https://acme.test/x?u={{name}}">go</a>',
        contactProperties: { name: "Ann", firstName: "Ann" },
      }));
      expect(res.status).toBe(200);
      const mail = await mailTo(to);
      expect(mail.subject).toBe("Hi Ann");
      expect(mail.html).toContain("<p>Hello Ann and Ann</p>");
      expect(mail.html).toMatch(/display:none[^>]*>Peek Ann/);
      expect(mail.text?.trim()).toBe("Text Ann");
      const click = /href="([^"]*\/t\/c\/[^"]+)"/.exec(mail.html!)![1];
      const redirect = await fetch(click, { redirect: "manual" });
      expect(redirect.headers.get("location")).toBe("https://acme.test/x?u=Ann");
    });

    it("puts every replyTo address in Reply-To, raw or templated (duplicates dropped), and checks each", async () => {
      const a = rcpt("reply-list");
      expect((await send(raw(a, { replyTo: ["Help <help@acme.test>", "sales@acme.test", "HELP@ACME.TEST"] }))).status).toBe(200);
      expect((await mailTo(a)).replyTo?.map((r) => r.address)).toEqual(["help@acme.test", "sales@acme.test"]);
      const b = rcpt("reply-tpl");
      expect((await send({ template: "welcome", to: b, replyTo: "owner@acme.test" })).status).toBe(200);
      expect((await mailTo(b)).replyTo?.map((r) => r.address)).toEqual(["owner@acme.test"]);
      const c = rcpt("reply-tpl-list");
      expect((await send({ template: "welcome", to: c, replyTo: ["x@acme.test", "y@acme.test"] })).status).toBe(200);
      expect((await mailTo(c)).replyTo?.map((r) => r.address)).toEqual(["x@acme.test", "y@acme.test"]);
      for (const replyTo of [["ok@acme.test", "a@acme.test\r\nBcc: victim@example.test"], ["not an address"], Array.from({ length: 6 }, (_, i) => `r${i}@acme.test`)]) {
        const res = await send(raw(rcpt("reply-bad"), { replyTo }));
        expect(res.status, JSON.stringify(replyTo)).toBe(400);
      }
    });

    it("accepts sendAt in every ISO 8601 form with a zone, and refuses one without", async () => {
      const at = new Date(Math.ceil((Date.now() + 2 * 86_400_000) / 60_000) * 60_000);
      const shifted = new Date(at.getTime() + 3_600_000); // the wall-clock time at +01:00
      const basic = shifted.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "").slice(0, 13) + "+01";
      for (const sendAt of [basic, shifted.toISOString().replace(/:00\.000Z$/, "+0100"), at.toISOString().replace(/\.\d+Z$/, "z")]) {
        const res = await send(raw(rcpt("send-at"), { sendAt }));
        expect(res.body.email?.status, `${sendAt}: ${JSON.stringify(res.body)}`).toBe("SCHEDULED");
        expect((await get(res.body.email.id)).body.email.sendAt).toBe(at.toISOString());
      }
      const noZone = await send(raw(rcpt("send-at"), { sendAt: at.toISOString().replace("Z", "") }));
      expect(noZone.body).toMatchObject({ statusCode: 400, code: "invalid_send_at", docsUrl: `${sys.publicUrl}/docs/errors/invalid_send_at` });
    });

    it("names every answer with x-request-id, takes the scheme in any case, and serves the error pages", async () => {
      const ok = await sys.api("POST", "/v1/emails", { body: raw(rcpt("rid")), headers: { authorization: `bearer ${KEY}`, "x-request-id": "sdk-call-42" } });
      expect(ok.status).toBe(200);
      expect(ok.headers.get("x-request-id")).toBe("sdk-call-42");
      const refused = await sys.api("POST", "/v1/emails", { body: {}, headers: { authorization: `BEARER ${KEY}` } });
      expect(refused.status).toBe(400);
      expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
      const page = await fetch(refused.body.docsUrl);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("invalid_payload");
      expect((await fetch(`${sys.publicUrl}/docs/errors/nope`)).status).toBe(404);
    });

    it("carries a 50-item batch of 400 KB emails through every process, and 5 MB of HTML in one email", async () => {
      const filler = "<p>" + "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(7_100) + "</p>";
      expect(filler.length).toBeGreaterThan(400_000);
      const recipients = Array.from({ length: 50 }, () => rcpt("big-batch"));
      const res = await batch({ emails: recipients.map((to, i) => raw(to, { subject: `Big ${i}`, html: `<p>item ${i}</p>${filler}` })) });
      expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
      expect(res.body.emails.failed).toEqual([]);
      expect(res.body.emails.successful).toHaveLength(50);
      for (const to of [recipients[0], recipients[49]]) expect((await mailTo(to, 60_000)).html).toContain("Lorem ipsum");

      const huge = rcpt("huge");
      const html = "<p>" + "x".repeat(5 * 1024 * 1024 - 7) + "</p>";
      const single = await send(raw(huge, { html }));
      expect(single.status, JSON.stringify(single.body).slice(0, 300)).toBe(200);
      expect((await mailTo(huge, 60_000)).html!.length).toBeGreaterThan(5_000_000);
      const over = await send(raw(rcpt("huge"), { html: html + "x" }));
      expect(over.status).toBe(413);
      expect(over.body).toMatchObject({ statusCode: 413, code: "payload_too_large" });
    }, 120_000);
  });
});
