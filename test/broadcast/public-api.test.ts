import { afterAll, beforeAll, describe, expect, it } from "vitest";
import PostalMime from "postal-mime";
import { JSDOM } from "jsdom";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * Broadcasts through the public API: the gateway and every unit as real processes,
 * nats-server and an SMTP sink. Every refusal of the spec's broadcast table and design §6,
 * the lifecycle to COMPLETED, SMART holding the contacts whose local time has not come, and
 * WARMUP's first-day cap. (Release times and day boundaries under a fake clock:
 * services/broadcast/src/domain/pacing.test.ts and sending.test.ts.)
 */

const flagsOn = { broadcastEarlyAccess: true, emailApiAddon: true, verified: true };
const workspace = (id: string, over: Record<string, unknown> = {}) => ({
  id, name: id, timezone: "UTC",
  apiKeys: [{ key: `mr_test_${id}_1`, scopes: ["api_user"] }],
  verifiedEmails: ["founder@gmail.test"], verifiedDomains: ["acme.test"],
  members: ["owner@acme.test", "dev@acme.test"],
  flags: flagsOn, monthlyLimit: 100_000, sendingAccountNew: false,
  contactProperties: [{ slug: "plan", type: "string" }],
  ...over,
});
const person = (email: string, firstName: string, extra: Record<string, unknown> = {}) => ({ email, firstName, subscribed: true, properties: { plan: "pro" }, ...extra });
const WARMUP_AUDIENCE = 1_010;

const bootstrap = {
  workspaces: [
    workspace("ws_pub", {
      contacts: [
        person("ann@example.test", "Ann"), person("bob@example.test", "Bob"), person("cid@example.test", "Cid"),
        person("dee@example.test", "Dee", { properties: { plan: "team" } }),
        person("gus@example.test", "Gus", { subscribed: false }),
      ],
    }),
    workspace("ws_other"),
    workspace("ws_g1", { flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: false } }),
    workspace("ws_g2", { flags: { broadcastEarlyAccess: true, emailApiAddon: false, verified: false } }),
    workspace("ws_g3", { flags: { broadcastEarlyAccess: true, emailApiAddon: true, verified: false } }),
    workspace("ws_limit", { monthlyLimit: 2, contacts: [person("l1@example.test", "L1"), person("l2@example.test", "L2"), person("l3@example.test", "L3")] }),
    workspace("ws_smart", {
      timezone: "Asia/Tokyo",
      contacts: [
        person("tokyo@example.test", "Taro", { timezone: "Asia/Tokyo" }),
        person("seoul@example.test", "Minji", { timezone: "Asia/Seoul" }), // same offset, no DST
        person("nozone@example.test", "Nia"),
        person("newyork@example.test", "Ned", { timezone: "America/New_York" }),
        person("paris@example.test", "Paul", { timezone: "Europe/Paris" }),
      ],
    }),
    workspace("ws_warm", {
      sendingAccountNew: true,
      contacts: Array.from({ length: WARMUP_AUDIENCE }, (_, i) => person(`w${i}@example.test`, `W${i}`)),
    }),
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("broadcasts through the public API (real processes)", () => {
  let sys: TestSystem;
  const api = (ws: string, method: string, path: string, body?: unknown) => sys.api(method, path, { key: `mr_test_${ws}_1`, body });
  const draft = (over: Record<string, unknown> = {}) => ({
    name: "Spring",
    subject: "Spring for {{firstName}}",
    previewText: "Hi {{firstName}}, the {{plan}} news",
    fromEmail: "news@acme.test",
    fromName: "Acme News",
    html: `<html><body><p>Hi {{firstName}}, plan {{plan}}.</p><p><a href="https://acme.test/spring?x=1">Spring</a> <a href="mailto:help@acme.test">Mail</a> <a href="tel:+331234">Call</a> <a href="#top">Top</a></p></body></html>`,
    audience: { all: true },
    ...over,
  });
  const create = async (ws: string, over: Record<string, unknown> = {}) => {
    const res = await api(ws, "POST", "/v1/broadcasts", draft(over));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.broadcast.id as string;
  };
  const mailsTo = (domainOrMarker: (m: { raw: string; to: string[] }) => boolean) => sys.sink!.messages.filter(domainOrMarker);

  async function until<T>(what: string, read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last = await read();
    while (!done(last)) {
      if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(last).slice(0, 600)}\n${await sys.log("broadcast")}`);
      await sleep(100);
      last = await read();
    }
    return last;
  }
  const broadcastOf = async (ws: string, id: string) => (await api(ws, "GET", `/v1/broadcasts/${id}`)).body.broadcast;

  beforeAll(async () => {
    sys = await useSystem({ bootstrap, units: ["accounts", "audience", "renderer", "delivery", "broadcast", "gateway"] });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("gates with the api_user key, then 403 not enabled, 402 add-on, 403 not verified, in that order", async () => {
    const noKey = await sys.api("GET", "/v1/broadcasts");
    expect(noKey.body).toMatchObject({ statusCode: 401, code: "unauthorized" });
    const expected: Array<[string, number, string]> = [
      ["ws_g1", 403, "broadcast_api_not_enabled"],
      ["ws_g2", 402, "broadcast_api_addon_required"],
      ["ws_g3", 403, "broadcast_api_workspace_not_verified"],
    ];
    for (const [ws, status, code] of expected) {
      for (const [method, path, body] of [["POST", "/v1/broadcasts", draft()], ["GET", "/v1/broadcasts", undefined], ["POST", "/v1/broadcasts/cmp_01jqz8k4m2x7v9c3n5b6t1w0ye/schedule", {}]] as const) {
        const res = await api(ws, method, path, body);
        expect([ws, path, res.status, res.body.code]).toEqual([ws, path, status, code]);
        expect(res.body).toMatchObject({ statusCode: status, error: status === 402 ? "Payment Required" : "Forbidden" });
        expect(typeof res.body.message).toBe("string");
      }
    }
  });

  it("refuses unknown variables, an unverified sender (with the lists), oversized HTML; warns over 102 KB", async () => {
    const unknown = await api("ws_pub", "POST", "/v1/broadcasts", draft({ html: "<p>{{coupon}} {{plan}} {{ firstName }}</p>", subject: "{{code}}" }));
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ statusCode: 400, error: "Bad Request", code: "broadcast_unknown_variables" });
    expect([...unknown.body.unknownVariables].sort()).toEqual(["code", "coupon"]);
    const allowed = await api("ws_pub", "POST", "/v1/broadcasts", draft({ html: "<p>{{coupon}}</p>", allowUnknownVariables: true }));
    expect(allowed.status).toBe(201);
    expect(allowed.body.variables.unknown).toEqual(["coupon"]);

    const from = await api("ws_pub", "POST", "/v1/broadcasts", draft({ fromEmail: "news@evil.test" }));
    expect(from.status).toBe(400);
    expect(from.body).toMatchObject({ code: "campaigns/invalid_from_email", allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] });

    const tooLarge = await api("ws_pub", "POST", "/v1/broadcasts", draft({ html: `<p>${"é".repeat(256_000)}</p>` })); // 512,007 bytes
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toMatchObject({ statusCode: 413, error: "Payload Too Large", code: "broadcast_html_too_large" });

    const clipped = await api("ws_pub", "POST", "/v1/broadcasts", draft({ html: `<p>${"x".repeat(103 * 1024)}</p>` }));
    expect(clipped.status).toBe(201);
    expect(clipped.body.warnings).toEqual(["html_over_102kb_may_be_clipped"]);
    const id = clipped.body.broadcast.id;
    const scheduled = await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, { sendAt: new Date(Date.now() + 3_600_000).toISOString(), deliveryMethod: "ASAP" });
    expect(scheduled.body.warnings).toEqual(["html_over_102kb_may_be_clipped"]);
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/cancel`, {})).body.broadcast.status).toBe("DRAFT");

    const invalid = await api("ws_pub", "POST", "/v1/broadcasts", draft({ audience: { segment: "vip" } }));
    expect(invalid.body).toMatchObject({ statusCode: 400, code: "invalid_payload" });
  });

  it("applies the schedule rules: method for a new account, horizon, method names, monthly limit", async () => {
    const warm = await create("ws_warm", { subject: "Warm {{firstName}} #never" });
    const asap = await api("ws_warm", "POST", `/v1/broadcasts/${warm}/schedule`, { deliveryMethod: "ASAP" });
    expect(asap.status).toBe(400);
    expect(asap.body).toMatchObject({ code: "campaigns/delivery_method_not_available" });
    expect(asap.body.docsUrl).toBeDefined();

    const id = await create("ws_pub");
    const far = await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, { sendAt: new Date(Date.now() + 91 * 86_400_000).toISOString() });
    expect(far.body).toMatchObject({ statusCode: 400, code: "send_at_out_of_range" });
    const method = await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "TURBO" });
    expect(method.body).toMatchObject({ statusCode: 400, code: "invalid_payload" });
    expect(method.body.message).toMatch(/ASAP.*PROGRESSIVE.*SMART.*WARMUP/);
    const status = await api("ws_pub", "GET", "/v1/broadcasts?status=SENT");
    expect(status.body).toMatchObject({ statusCode: 400, code: "invalid_payload" });
    expect(status.body.message).toMatch(/DRAFT.*SCHEDULED.*IN_PROGRESS.*COMPLETED/);

    const limited = await create("ws_limit");
    const limit = await api("ws_limit", "POST", `/v1/broadcasts/${limited}/schedule`, {});
    expect(limit.status).toBe(403);
    expect(limit.body).toMatchObject({ statusCode: 403, error: "Forbidden", code: "monthly_limit_reached" });
    expect((await broadcastOf("ws_limit", limited)).status).toBe("DRAFT");
  });

  it("hides other workspaces' broadcasts (404) and enforces the states (409)", async () => {
    const id = await create("ws_pub");
    for (const [method, path, body] of [["GET", "", undefined], ["POST", "/test", { emails: ["owner@acme.test"] }], ["POST", "/schedule", {}], ["POST", "/cancel", {}]] as const) {
      const res = await api("ws_other", method, `/v1/broadcasts/${id}${path}`, body);
      expect([path, res.status, res.body.code]).toEqual([path, 404, "broadcast_not_found"]);
    }
    expect((await api("ws_other", "GET", "/v1/broadcasts")).body.broadcasts.items).toEqual([]);
    const cancelDraft = await api("ws_pub", "POST", `/v1/broadcasts/${id}/cancel`);
    expect(cancelDraft.body).toMatchObject({ statusCode: 409, error: "Conflict", code: "broadcast_not_cancellable" });
    await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, { sendAt: new Date(Date.now() + 3_600_000).toISOString(), deliveryMethod: "ASAP" });
    const again = await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, {});
    expect(again.body).toMatchObject({ statusCode: 409, code: "broadcast_not_schedulable" });
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/cancel`, {})).status).toBe(200);
  });

  it("sends tests to 1-10 members only, listing the others", async () => {
    const id = await create("ws_pub", { subject: "Test for {{firstName}} #pubtest" });
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, { emails: [] })).body.code).toBe("invalid_test_recipients");
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, { emails: Array.from({ length: 11 }, (_, i) => `m${i}@acme.test`) })).body.code).toBe("invalid_test_recipients");
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, { emails: ["not an address"] })).body.code).toBe("invalid_test_recipients");
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, {})).body.code).toBe("invalid_test_recipients");
    const outsiders = await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, { emails: ["owner@acme.test", "ann@example.test", "zed@example.test"] });
    expect(outsiders.status).toBe(400);
    expect(outsiders.body).toMatchObject({ code: "test_recipients_not_members", notMembers: ["ann@example.test", "zed@example.test"] });
    const ok = await api("ws_pub", "POST", `/v1/broadcasts/${id}/test`, { emails: ["owner@acme.test", "dev@acme.test"] });
    expect(ok.status).toBe(200);
    expect(ok.body.broadcast).toMatchObject({ id, status: "DRAFT" });
    await sys.sink!.waitFor(2, 10_000);
    const mails = await until("test copies", async () => mailsTo((m) => m.raw.includes("#pubtest")), (m) => m.length >= 2, 10_000);
    expect(mails.flatMap((m) => m.to).sort()).toEqual(["dev@acme.test", "owner@acme.test"]);
    expect((await PostalMime.parse(mails[0].raw)).subject).toMatch(/^\[TEST\] Test for/);
  });

  it("runs DRAFT → SCHEDULED → IN_PROGRESS → COMPLETED with one message per subscribed contact, as the design says it must look", async () => {
    const id = await create("ws_pub", { subject: "Spring for {{firstName}} #life", text: undefined, replyTo: ["help@acme.test"] });
    const created = await broadcastOf("ws_pub", id);
    expect(created).toMatchObject({ status: "DRAFT", scheduledAt: null, sentAt: null, deliveryMethod: null, replyTo: ["help@acme.test"], settings: { trackOpens: true, trackClicks: true } });
    const sendAt = new Date(Date.now() + 1_500);
    const scheduled = await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, { sendAt: sendAt.toISOString(), deliveryMethod: "ASAP" });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "ASAP", scheduledAt: sendAt.toISOString(), sentAt: null });
    const listed = await api("ws_pub", "GET", "/v1/broadcasts?status=SCHEDULED&limit=100");
    expect(listed.body.broadcasts.items.map((b: { id: string }) => b.id)).toContain(id);

    const seen: string[] = [];
    const done = await until("COMPLETED", async () => {
      const b = await broadcastOf("ws_pub", id);
      if (seen[seen.length - 1] !== b.status) seen.push(b.status);
      return b;
    }, (b) => b.status === "COMPLETED");
    // The statuses polled come in the design's order (four contacts may pass IN_PROGRESS between two polls);
    // sentAt below says it started.
    const order = ["SCHEDULED", "IN_PROGRESS", "COMPLETED"];
    expect(seen.every((s, i) => order.includes(s) && (i === 0 || order.indexOf(s) > order.indexOf(seen[i - 1])))).toBe(true);
    expect(Date.parse(done.sentAt)).toBeGreaterThanOrEqual(sendAt.getTime() - 5);
    expect(done.completedAt).not.toBeNull();
    expect(done.progress).toMatchObject({ recipients: 4, released: 4, sent: 4, delivered: 4, failed: 0, bounced: 0, suppressed: 0 });
    const mails = mailsTo((m) => m.raw.includes("#life"));
    expect(mails.flatMap((m) => m.to).sort()).toEqual(["ann@example.test", "bob@example.test", "cid@example.test", "dee@example.test"]);

    // One received message, read as a mail client's DOM would.
    const dee = await PostalMime.parse(mails.find((m) => m.to.includes("dee@example.test"))!.raw);
    expect(dee.subject).toBe("Spring for Dee #life");
    expect(dee.headers.find((h) => h.key === "list-unsubscribe")?.value).toMatch(/^<https?:\/\/[^>]+\/u\/[^>]+>, <mailto:/);
    expect(dee.headers.find((h) => h.key === "list-unsubscribe-post")?.value).toBe("List-Unsubscribe=One-Click");
    expect(dee.text).toContain("Hi Dee, plan team.");
    const { document } = new JSDOM(dee.html!).window;
    const preheader = document.body.firstElementChild as HTMLElement;
    expect(preheader.getAttribute("style")).toContain("display:none");
    expect(preheader.textContent).toContain("Hi Dee, the team news");
    expect(document.body.textContent).toContain("Hi Dee, plan team.");
    const hrefs = [...document.querySelectorAll("a")].map((a) => a.getAttribute("href")!);
    const spring = hrefs.find((h) => h.startsWith(`${sys.publicUrl}/t/c/`));
    expect(spring).toBeDefined();
    expect(hrefs).not.toContain("https://acme.test/spring?x=1");
    expect(hrefs).toEqual(expect.arrayContaining(["mailto:help@acme.test", "tel:+331234", "#top"]));
    const unsubscribe = [...document.querySelectorAll("a")].find((a) => a.textContent === "Unsubscribe")!;
    expect(unsubscribe.getAttribute("href")).toMatch(new RegExp(`^${sys.publicUrl}/u/`));
    expect(unsubscribe.closest("div")!.textContent).toContain("You are receiving this email");
    // The open beacon: a 1×1 CSS background (an <img> only inside Outlook's conditional comment).
    const pixel = [...document.querySelectorAll("div")].find((div) => div.getAttribute("style")?.includes(`background-image:url('${sys.publicUrl}/t/o/`));
    expect(pixel).toBeDefined();
    // The tracked link redirects to the original.
    const redirect = await fetch(spring!, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("https://acme.test/spring?x=1");

    // The HTML is as created; the state rules hold after completion.
    expect(done.html).toBe(created.html);
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/schedule`, {})).body.code).toBe("broadcast_not_schedulable");
    expect((await api("ws_pub", "POST", `/v1/broadcasts/${id}/cancel`, {})).body.code).toBe("broadcast_not_cancellable");
  });

  it("SMART: releases the contacts whose local time of sendAt has come and holds the others", async () => {
    // The workspace is on Tokyo time; sendAt is now, i.e. now in Tokyo and in Seoul (same
    // offset), and contacts without a zone get it at sendAt. New York and Paris reach that
    // wall-clock time hours later (the exact instants: pacing.test.ts, sending.test.ts).
    const id = await create("ws_smart", { subject: "Smart {{firstName}} #smart" });
    const res = await api("ws_smart", "POST", `/v1/broadcasts/${id}/schedule`, { deliveryMethod: "SMART" });
    expect(res.body.broadcast).toMatchObject({ status: "SCHEDULED", deliveryMethod: "SMART" });
    const b = await until("three released", () => broadcastOf("ws_smart", id), (x) => x.progress.sent >= 3);
    await sleep(1_500);
    const after = await broadcastOf("ws_smart", id);
    expect(after).toMatchObject({ status: "IN_PROGRESS", progress: { recipients: 5, released: 3, sent: 3 } });
    expect(b.sentAt).not.toBeNull();
    expect(mailsTo((m) => m.raw.includes("#smart")).flatMap((m) => m.to).sort()).toEqual(["nozone@example.test", "seoul@example.test", "tokyo@example.test"]);
    // Sending has started: too late to cancel.
    expect((await api("ws_smart", "POST", `/v1/broadcasts/${id}/cancel`, {})).body.code).toBe("broadcast_not_cancellable");
  });

  it("WARMUP: a new sending account gets the method by default and sends 1,000 on its first day, the rest waits", async () => {
    const id = await create("ws_warm", { subject: "Warm {{firstName}} #warm" });
    const res = await api("ws_warm", "POST", `/v1/broadcasts/${id}/schedule`, {});
    expect(res.body.broadcast.deliveryMethod).toBe("WARMUP");
    await until("1,000 sent", () => broadcastOf("ws_warm", id), (b) => b.progress.sent >= 1_000, 60_000);
    await sleep(1_500);
    const after = await broadcastOf("ws_warm", id);
    expect(after).toMatchObject({ status: "IN_PROGRESS", progress: { recipients: WARMUP_AUDIENCE, released: 1_000, sent: 1_000 } });
    const recipients = mailsTo((m) => m.raw.includes("#warm")).flatMap((m) => m.to);
    expect(recipients).toHaveLength(1_000);
    expect(new Set(recipients).size).toBe(1_000);
  }, 90_000);
});
