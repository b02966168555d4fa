import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestWorld, draft } from "../testing.js";

const WS = "ws_acme";

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe("gating", () => {
  it("checks early access, then the add-on, then verification, on every call", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    const calls = [
      () => w.service.create(WS, draft()),
      () => w.service.get(WS, broadcast.id),
      () => w.service.list(WS, {}),
      () => w.service.sendTest(WS, broadcast.id, ["owner@acme.test"]),
      () => w.service.schedule(WS, broadcast.id, {}),
      () => w.service.cancel(WS, broadcast.id),
    ];
    const expectEach = async (code: string, status: number) => {
      for (const call of calls) expect(await refusal(call())).toMatchObject({ code, httpStatus: status });
    };
    w.directory.setWorkspace(WS, { broadcastEarlyAccess: false, emailApiAddon: false, verified: false });
    await expectEach("broadcast_api_not_enabled", 403);
    w.directory.setWorkspace(WS, { broadcastEarlyAccess: true });
    await expectEach("broadcast_api_addon_required", 402);
    w.directory.setWorkspace(WS, { emailApiAddon: true });
    await expectEach("broadcast_api_workspace_not_verified", 403);
    expect(w.queue.jobs).toHaveLength(0);
  });
});

describe("create", () => {
  it("stores a DRAFT with the HTML byte for byte, defaults, detected variables and a cmp_ id", async () => {
    const w = await buildTestWorld();
    const html = "<p>Hi {{firstName}} \u00e9 <a href='https://acme.test'>x</a></p>\r\n  ";
    const created = await w.service.create(WS, draft({ html, previewText: "{{email}}", replyTo: ["help@acme.test"], text: "plain" }));
    expect(created.broadcast).toMatchObject({ status: "DRAFT", html, settings: { trackOpens: true, trackClicks: true }, replyTo: ["help@acme.test"], text: "plain" });
    expect(created.broadcast.id).toMatch(/^cmp_[0-9a-z]{26}$/);
    expect(created.variables).toEqual({ detected: ["firstName", "email"], unknown: [] });
    expect(created.warnings).toEqual([]);
    expect((await w.service.get(WS, created.broadcast.id)).html).toBe(html);
  });

  it("refuses unknown variables unless allowUnknownVariables", async () => {
    const w = await buildTestWorld();
    const html = "<p>{{firstName}} {{coupon}} {{unsubscribeUrl}} {{plan}}</p>";
    expect(await refusal(w.service.create(WS, draft({ html, subject: "{{season}}" })))).toMatchObject({
      code: "broadcast_unknown_variables",
      httpStatus: 400,
      details: { unknownVariables: ["coupon", "season"] },
    });
    const ok = await w.service.create(WS, draft({ html, allowUnknownVariables: true }));
    expect(ok.variables.unknown).toEqual(["coupon"]);
  });

  it("refuses an unverified sender with the allowed lists", async () => {
    const w = await buildTestWorld();
    expect(await refusal(w.service.create(WS, draft({ fromEmail: "eve@evil.test" })))).toMatchObject({
      code: "campaigns/invalid_from_email",
      httpStatus: 400,
      details: { allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] },
    });
  });

  it("takes up to 512,000 bytes of HTML (413 beyond) and warns over 102 KB", async () => {
    const w = await buildTestWorld();
    const big = (bytes: number) => `<p>${"é".repeat((bytes - 7) / 2)}</p>`;
    expect((await w.service.create(WS, draft({ html: big(511_999) }))).warnings).toEqual(["html_over_102kb_may_be_clipped"]);
    expect(await refusal(w.service.create(WS, draft({ html: big(512_001) })))).toMatchObject({ code: "broadcast_html_too_large", httpStatus: 413 });
    expect((await w.service.create(WS, draft({ html: big(102 * 1024 - 1) }))).warnings).toEqual([]);
  });

  it("requires name, subject, fromEmail, fromName, html and audience { all: true }", async () => {
    const w = await buildTestWorld();
    for (const field of ["name", "subject", "fromEmail", "fromName", "html"]) {
      expect(await refusal(w.service.create(WS, draft({ [field]: "" })))).toMatchObject({ code: "invalid_payload", httpStatus: 400 });
    }
    expect((await refusal(w.service.create(WS, draft({ audience: { all: false } })))).code).toBe("invalid_payload");
    expect((await refusal(w.service.create(WS, draft({ fromName: "Acme\r\nBcc: x@y.test" })))).code).toBe("header_injection");
  });
});

describe("audiences", () => {
  it("stores the audience as given, has the audience unit count it on create, update and get, and keeps it when an update names none", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const audience = { groups: ["vip", "grp_1"], exclude: { segmentId: "seg_free", filterJson: '{"properties.plan":"free"}' }, topicId: "top_news" };
    const created = await w.service.create(WS, draft({ audience }));
    expect(created.broadcast.audience).toEqual(audience);
    expect(created.audienceCount).toBe(3);
    expect(w.directory.audiences).toEqual([audience]);
    expect((await w.service.get(WS, created.broadcast.id)).audience).toEqual(audience); // as stored
    const renamed = await w.service.update(WS, created.broadcast.id, { ...draft({ name: "Renamed" }), audience: undefined });
    expect(renamed.broadcast).toMatchObject({ name: "Renamed", audience });
    const everyone = await w.service.update(WS, created.broadcast.id, draft({ audience: { all: true } }));
    expect(everyone.broadcast.audience).toEqual({ all: true });
    expect(await w.service.getCounted(WS, created.broadcast.id)).toMatchObject({ audienceCount: 3 });
    // A count the audience unit refuses leaves it out of a read, not the broadcast.
    const seg = await w.service.create(WS, draft({ audience: { segmentId: "seg_x" } }));
    w.directory.goneSegments.add("seg_x");
    expect(await w.service.getCounted(WS, seg.broadcast.id)).toEqual({ broadcast: expect.objectContaining({ id: seg.broadcast.id }) });
    expect(await refusal(w.service.schedule(WS, seg.broadcast.id, {}))).toMatchObject({ code: "audience_not_found", httpStatus: 400 });
    expect(await w.service.topicOf(WS, created.broadcast.id)).toBe("");
    expect(await w.service.topicOf(WS, (await w.service.create(WS, draft({ audience: { all: true, topicId: "top_1" } }))).broadcast.id)).toBe("top_1");
  });

  it("takes exactly one of all, groups, segmentId, filter; refuses malformed parts before asking the audience unit", async () => {
    const w = await buildTestWorld();
    for (const audience of [
      undefined, {}, { all: false }, { all: true, groups: ["a"] }, { groups: [] }, { segmentId: "seg_1", filterJson: "{}" }, { groups: ["ok", ""] },
      { groups: Array.from({ length: 101 }, (_, i) => `g${i}`) }, { all: true, exclude: "x" }, { all: true, exclude: { groups: [1] } }, { all: true, topicId: "a\nb" },
    ]) {
      expect([audience, (await refusal(w.service.create(WS, draft({ audience: audience as never })))).code]).toEqual([audience, "invalid_payload"]);
    }
    expect(w.directory.audiences).toEqual([]);
    expect((await w.service.create(WS, draft({ audience: { all: true, exclude: {} } }))).broadcast.audience).toEqual({ all: true });
  });

  it("resolves the audience the broadcast names when sending starts; a segment deleted since ends resolution with no one, once", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(4);
    const { broadcast } = await w.service.create(WS, draft({ audience: { segmentId: "seg_soon_gone" } }));
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    w.directory.goneSegments.add("seg_soon_gone");
    const sender = w.sender();
    for (let i = 0; i < 50 && (await sender.tick()) > 0; i++);
    const done = await w.service.get(WS, broadcast.id);
    expect(done.status).toBe("COMPLETED");
    expect(done.progress.recipients).toBe(0);
    expect(w.queue.jobs).toHaveLength(0);
    expect(w.directory.audiences.filter((a) => a.segmentId === "seg_soon_gone")).toHaveLength(3); // create, schedule, one stream
  });
});

describe("list and get", () => {
  it("pages newest first without duplicates, filters by status, hides other workspaces", async () => {
    const w = await buildTestWorld();
    w.directory.setWorkspace("ws_other", {});
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) ids.push((await w.service.create(WS, draft({ name: `b${i}` }))).broadcast.id);
    await w.service.create("ws_other", draft());
    await w.service.schedule(WS, ids[3], { sendAt: new Date(w.clock.now().getTime() + 3600_000) });

    const first = await w.service.list(WS, {});
    expect(first.items).toHaveLength(20);
    expect(first.hasMore).toBe(true);
    const second = await w.service.list(WS, { cursor: first.cursor });
    expect(second.hasMore).toBe(false);
    expect([...first.items, ...second.items].map((b) => b.id)).toEqual([...ids].reverse());
    expect((await w.service.list(WS, { status: "SCHEDULED" })).items.map((b) => b.id)).toEqual([ids[3]]);
    expect((await w.service.list(WS, { limit: 100 })).items).toHaveLength(25);
    expect((await refusal(w.service.list(WS, { limit: 101 }))).code).toBe("invalid_payload");
    expect((await refusal(w.service.list(WS, { status: "SENT" }))).code).toBe("invalid_payload");
    expect(await refusal(w.service.get("ws_other", ids[0]))).toMatchObject({ code: "broadcast_not_found", httpStatus: 404 });
  });
});

describe("test send", () => {
  it("sends [TEST] copies to members with their contact's merge values, uncounted, status unchanged", async () => {
    const w = await buildTestWorld();
    w.directory.memberList = ["owner@acme.test", "Dev@Acme.test"];
    w.directory.contacts.push({ id: "ctc_owner", email: "owner@acme.test", firstName: "Olga", lastName: "O", timezone: "", properties: { plan: "team" }, subscribed: true });
    const { broadcast } = await w.service.create(WS, draft());
    const res = await w.service.sendTest(WS, broadcast.id, ["owner@acme.test", "dev@acme.test"]);
    expect(res.broadcast.status).toBe("DRAFT");
    expect(w.queue.jobs).toHaveLength(2);
    expect(w.queue.jobs[0]).toMatchObject({
      test: true,
      subjectPrefix: "[TEST] ",
      recipient: { email: "owner@acme.test", contactId: "ctc_owner", variables: { firstName: "Olga", plan: "team" } },
    });
    expect(w.queue.jobs[1].recipient).toMatchObject({ email: "dev@acme.test", contactId: "", variables: {} });
    // Compiled like the real send; delivery reads the test's own content from the content store,
    // written before the test's jobs.
    expect(w.renderer.compiled[0]).toMatchObject({ contentId: broadcast.id, trackClicks: true, trackOpens: true });
    const ref = w.queue.jobs[0].contentRef;
    expect(ref).toMatch(/^broadcast:cmp_[0-9a-z]+-test-[0-9a-z]+$/);
    expect(w.queue.jobs[1].contentRef).toBe(ref);
    expect(w.content.get(WS, ref)?.length).toBeGreaterThan(0);
    expect(w.log).toEqual([`put ${ref}`, `job ${ref}`, `job ${ref}`]);
    expect(w.directory.used).toBe(0);
    expect((await w.service.get(WS, broadcast.id)).status).toBe("DRAFT");
  });

  it("sends every A/B variant to each member, each with its own content and [TEST A], [TEST B] …", async () => {
    const w = await buildTestWorld();
    w.directory.memberList = ["owner@acme.test", "dev@acme.test"];
    const abTest = { variants: [{ subject: "Alpha" }, { subject: "Beta", fromName: "Beta Team" }, { html: "<p>Gamma</p>" }], testShare: 0.3, metric: "opens", waitForSeconds: 3600 };
    const { broadcast } = await w.service.create(WS, draft({ abTest }));
    await w.service.sendTest(WS, broadcast.id, ["owner@acme.test", "dev@acme.test"]);
    expect(w.queue.jobs).toHaveLength(6);
    const sent = w.queue.jobs.map((j) => `${j.recipient.email} ${j.subjectPrefix}${j.fromName}`).sort();
    expect(sent).toEqual([
      "dev@acme.test [TEST A] Acme", "dev@acme.test [TEST B] Beta Team", "dev@acme.test [TEST C] Acme",
      "owner@acme.test [TEST A] Acme", "owner@acme.test [TEST B] Beta Team", "owner@acme.test [TEST C] Acme",
    ].sort());
    // Each variant compiled from its own fields, into its own content entry, written before its jobs.
    const refs = [...new Set(w.queue.jobs.map((j) => j.contentRef))];
    expect(refs).toHaveLength(3);
    expect(w.renderer.compiled.map((c) => c.subject).sort()).toEqual(["Alpha", "Beta", "Hello {{firstName}}"].sort());
    expect(w.renderer.compiled.find((c) => c.subject === "Hello {{firstName}}")?.html).toBe("<p>Gamma</p>");
    for (const ref of refs) {
      expect(w.content.get(WS, ref)?.length).toBeGreaterThan(0);
      expect(w.log.indexOf(`put ${ref}`)).toBeLessThan(w.log.indexOf(`job ${ref}`));
    }
    expect(new Set(w.queue.jobs.map((j) => j.deliveryId)).size).toBe(6);
  });

  it("needs 1 to 10 valid addresses, all members; otherwise nothing is sent", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    for (const emails of [[], Array.from({ length: 11 }, (_, i) => `m${i}@acme.test`), ["not-an-address"]]) {
      expect(await refusal(w.service.sendTest(WS, broadcast.id, emails))).toMatchObject({ code: "invalid_test_recipients", httpStatus: 400 });
    }
    const err = await refusal(w.service.sendTest(WS, broadcast.id, ["owner@acme.test", "stranger@example.test"]));
    expect(err).toMatchObject({ code: "test_recipients_not_members", httpStatus: 400 });
    expect(JSON.parse(err.details.extra!.notMembers)).toEqual(["stranger@example.test"]);
    expect(w.queue.jobs).toHaveLength(0);
    expect(await refusal(w.service.sendTest("ws_acme", "cmp_01aaaaaaaaaaaaaaaaaaaaaaaa", ["owner@acme.test"]))).toMatchObject({ code: "broadcast_not_found" });
  });
});

describe("schedule and cancel", () => {
  it("compiles once at scheduling, locks the content and answers SCHEDULED", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft({ settings: { trackClicks: false } }));
    const { broadcast: scheduled, warnings } = await w.service.schedule(WS, broadcast.id, {});
    expect(scheduled).toMatchObject({ status: "SCHEDULED", deliveryMethod: "PROGRESSIVE", scheduledAt: w.clock.now() });
    expect(warnings).toEqual([]);
    expect(w.renderer.compiled).toHaveLength(1);
    expect(w.renderer.compiled[0]).toMatchObject({ contentId: broadcast.id, trackClicks: false, trackOpens: true, html: broadcast.html });
    // Locked in the broadcast's own store; the content store gets it when sending starts.
    const locked = await w.repos.lockedContent.get(scheduled.contentKey!);
    expect(locked?.workspaceId).toBe(WS);
    expect(locked?.compiled.length).toBeGreaterThan(0);
    expect(w.log).toEqual([]);
    expect(await refusal(w.service.schedule(WS, broadcast.id, {}))).toMatchObject({ code: "broadcast_not_schedulable", httpStatus: 409 });
  });

  it("limits sendAt to 90 days ahead and treats a past sendAt as now", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    const day = 24 * 3600_000;
    expect(await refusal(w.service.schedule(WS, broadcast.id, { sendAt: new Date(w.clock.now().getTime() + 90 * day + 1) }))).toMatchObject({
      code: "send_at_out_of_range",
      httpStatus: 400,
    });
    const past = await w.service.schedule(WS, broadcast.id, { sendAt: new Date(0) });
    expect(past.broadcast.scheduledAt).toEqual(w.clock.now());
  });

  it("offers new sending accounts WARMUP only, and picks the safest method when omitted", async () => {
    const w = await buildTestWorld();
    const make = async () => (await w.service.create(WS, draft())).broadcast.id;
    w.directory.setWorkspace(WS, { sendingAccountNew: true });
    for (const m of ["ASAP", "PROGRESSIVE", "SMART"]) {
      expect(await refusal(w.service.schedule(WS, await make(), { deliveryMethod: m }))).toMatchObject({ code: "campaigns/delivery_method_not_available", httpStatus: 400 });
    }
    expect((await w.service.schedule(WS, await make(), {})).broadcast.deliveryMethod).toBe("WARMUP");
    expect((await w.service.schedule(WS, await make(), { deliveryMethod: "WARMUP" })).broadcast.deliveryMethod).toBe("WARMUP");
    expect((await refusal(w.service.schedule(WS, await make(), { deliveryMethod: "SLOW" }))).code).toBe("invalid_payload");
    w.directory.setWorkspace(WS, { sendingAccountNew: false });
    expect((await w.service.schedule(WS, await make(), {})).broadcast.deliveryMethod).toBe("PROGRESSIVE");
    expect((await w.service.schedule(WS, await make(), { deliveryMethod: "SMART" })).broadcast.deliveryMethod).toBe("SMART");
  });

  it("refuses an audience larger than this month's usage left, queueing nothing", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(5);
    w.directory.addContacts(3, () => ({ subscribed: false }));
    w.directory.limit = 10;
    w.directory.used = 6;
    const { broadcast } = await w.service.create(WS, draft());
    expect(await refusal(w.service.schedule(WS, broadcast.id, {}))).toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
    expect((await w.service.get(WS, broadcast.id)).status).toBe("DRAFT");
    w.directory.used = 5;
    expect((await w.service.schedule(WS, broadcast.id, {})).broadcast.status).toBe("SCHEDULED");
  });

  it("cancels a SCHEDULED broadcast back to DRAFT with the HTML as created, and compiles again on the next schedule", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    const { broadcast: scheduled } = await w.service.schedule(WS, broadcast.id, { sendAt: new Date(w.clock.now().getTime() + 3600_000) });
    const cancelled = await w.service.cancel(WS, broadcast.id);
    expect(cancelled).toMatchObject({ status: "DRAFT", html: broadcast.html });
    expect(cancelled.scheduledAt).toBeUndefined();
    expect(await w.repos.lockedContent.get(scheduled.contentKey!)).toBeNull();
    expect(w.log).toEqual([`delete broadcast:${broadcast.id}`]);
    expect(await refusal(w.service.cancel(WS, broadcast.id))).toMatchObject({ code: "broadcast_not_cancellable", httpStatus: 409 });
    await w.service.schedule(WS, broadcast.id, {});
    expect(w.renderer.compiled).toHaveLength(2);
    expect(w.renderer.compiled[1].html).toBe(broadcast.html);
  });

  it("lets exactly one of a concurrent schedule and cancel pair win each round", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([w.service.schedule(WS, broadcast.id, {}), w.service.cancel(WS, broadcast.id)]);
      const status = (await w.service.get(WS, broadcast.id)).status;
      if (results[1].status === "fulfilled") expect(status).toBe("DRAFT");
      else expect(status).toBe("SCHEDULED");
      if (status === "SCHEDULED") await w.service.cancel(WS, broadcast.id);
    }
  });
});
