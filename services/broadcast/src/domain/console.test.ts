import { describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestWorld, draft, type TestWorld } from "../testing.js";
import { deliveryIdOf } from "./model.js";

// What the web console adds to the broadcast API: editing drafts, previews, the timeline.
const WS = "ws_acme";
const MIN = 60_000;

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

async function run(w: TestWorld) {
  const sender = w.sender();
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

describe("update", () => {
  it("replaces a DRAFT's fields with the create checks, and refuses once it is scheduled", async () => {
    const w = await buildTestWorld();
    const { broadcast } = await w.service.create(WS, draft());
    w.clock.advance(MIN);
    const updated = await w.service.update(WS, broadcast.id, draft({ name: "Renamed", subject: "New {{plan}}", html: "<p>v2</p>", settings: { trackOpens: false } }));
    expect(updated.broadcast).toMatchObject({ id: broadcast.id, status: "DRAFT", name: "Renamed", subject: "New {{plan}}", html: "<p>v2</p>", settings: { trackOpens: false, trackClicks: true } });
    expect(updated.broadcast.updatedAt).toEqual(w.clock.now());
    expect(updated.variables.detected).toEqual(["plan"]);
    expect((await w.service.get(WS, broadcast.id)).name).toBe("Renamed");

    expect(await refusal(w.service.update(WS, broadcast.id, draft({ html: "{{coupon}}" })))).toMatchObject({ code: "broadcast_unknown_variables", httpStatus: 400 });
    expect(await refusal(w.service.update(WS, broadcast.id, draft({ fromEmail: "x@other.test" })))).toMatchObject({ code: "campaigns/invalid_from_email" });
    expect(await refusal(w.service.update(WS, broadcast.id, draft({ subject: "a\r\nBcc: x@y.z" })))).toMatchObject({ code: "header_injection" });

    w.directory.setWorkspace("ws_other", {});
    expect(await refusal(w.service.update("ws_other", broadcast.id, draft()))).toMatchObject({ code: "broadcast_not_found", httpStatus: 404 });

    await w.service.schedule(WS, broadcast.id, { sendAt: new Date(w.clock.now().getTime() + 3600_000), deliveryMethod: "ASAP" });
    expect(await refusal(w.service.update(WS, broadcast.id, draft({ name: "late" })))).toMatchObject({ code: "broadcast_not_editable", httpStatus: 409 });
    expect((await w.service.get(WS, broadcast.id)).name).toBe("Renamed");
  });
});

describe("preview", () => {
  it("merges the contact's data with tracking off, and sample values when the address is no contact", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(2, (i) => ({ properties: { plan: i === 0 ? "pro" : "free" } }));
    const { broadcast } = await w.service.create(WS, draft({ previewText: "for {{email}}" }));

    const p = await w.service.preview(WS, broadcast.id, "C1@example.test");
    expect(p).toMatchObject({ contactFound: true, subject: "Hello First1", html: "<p>Hi First1, you are on free.</p>", previewText: "for c1@example.test" });
    const { input, recipient } = w.renderer.rendered[0];
    expect(input).toMatchObject({ trackOpens: false, trackClicks: false, contentId: broadcast.id });
    expect(recipient.contactId).toBe(w.directory.contacts[1].id);
    // Not the broadcast's Message-ID form, so even a stray tracking hit would not count.
    expect(recipient.messageId.startsWith(`${recipient.contactId}.${broadcast.id}@`)).toBe(false);

    const none = await w.service.preview(WS, broadcast.id, "nobody@example.test");
    expect(none).toMatchObject({ contactFound: false, subject: "Hello [firstName]", html: "<p>Hi [firstName], you are on [plan].</p>", previewText: "for nobody@example.test" });
    // No address at all: the same sample values, and the renderer's own address.
    expect(await w.service.preview(WS, broadcast.id, "")).toMatchObject({ contactFound: false, subject: "Hello [firstName]" });
    expect(await refusal(w.service.preview(WS, broadcast.id, "not an address"))).toMatchObject({ code: "invalid_payload", httpStatus: 400 });
    w.directory.setWorkspace("ws_other", {});
    expect(await refusal(w.service.preview("ws_other", broadcast.id, ""))).toMatchObject({ code: "broadcast_not_found", httpStatus: 404 });
    // Nothing was sent or locked by previews.
    expect(w.queue.jobs).toHaveLength(0);
    expect((await w.service.get(WS, broadcast.id)).status).toBe("DRAFT");
  });

  it("previews each A/B variant with its own fields; an index it does not have is refused", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1);
    const abTest = { variants: [{ subject: "Alpha {{firstName}}" }, { html: "<p>Beta {{firstName}}</p>", previewText: "beta" }], testShare: 0.2, metric: "opens", waitForSeconds: 3600 };
    const { broadcast } = await w.service.create(WS, draft({ abTest }));
    expect((await w.service.preview(WS, broadcast.id, "C0@example.test", 0)).subject).toBe("Alpha First0");
    const b = await w.service.preview(WS, broadcast.id, "", 1);
    expect(b).toMatchObject({ subject: "Hello [firstName]", html: "<p>Beta [firstName]</p>", previewText: "beta" });
    // Without a variant: the broadcast's own fields, as before.
    expect((await w.service.preview(WS, broadcast.id, "")).subject).toBe("Hello [firstName]");
    for (const bad of [2, -1, 0.5]) expect(await refusal(w.service.preview(WS, broadcast.id, "", bad))).toMatchObject({ code: "invalid_payload", httpStatus: 400 });
    const { broadcast: plain } = await w.service.create(WS, draft());
    expect((await refusal(w.service.preview(WS, plain.id, "", 0))).message).toContain("no A/B test");
  });
});

describe("timeline", () => {
  it("buckets counted outcomes per minute and never counts a redelivered event twice", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const { broadcast } = await w.service.create(WS, draft());
    await w.service.schedule(WS, broadcast.id, { deliveryMethod: "ASAP" });
    await run(w);
    const [a, b, c] = w.directory.contacts.map((x) => x.id);
    const job = (contactId: string) => w.queue.jobs.find((j) => j.recipient.contactId === contactId)!;
    const sent = (contactId: string) => w.event({ kind: "sent", broadcastId: broadcast.id, deliveryId: deliveryIdOf(broadcast.id, contactId) });
    const tracked = (kind: "opened" | "clicked", contactId: string) =>
      w.event({ kind, broadcastId: broadcast.id, contactId, messageId: job(contactId).messageId });

    const t0 = w.clock.now();
    await sent(a);
    await sent(a); // redelivered
    await sent(b);
    w.clock.advance(MIN);
    await sent(c);
    await tracked("opened", a);
    await tracked("opened", a); // a reloaded pixel
    await tracked("clicked", a);
    w.clock.advance(2 * MIN);
    await w.event({ kind: "bounced", broadcastId: broadcast.id, deliveryId: deliveryIdOf(broadcast.id, b) });
    await w.event({ kind: "bounced", broadcastId: broadcast.id, deliveryId: deliveryIdOf(broadcast.id, b) });

    const points = await w.service.timeline(WS, broadcast.id);
    const minute = (d: Date) => new Date(Math.floor(d.getTime() / MIN) * MIN);
    expect(points).toEqual([
      { at: minute(t0), sent: 2, delivered: 2, opened: 0, clicked: 0, bounced: 0, planned: 0 },
      { at: minute(new Date(t0.getTime() + MIN)), sent: 1, delivered: 1, opened: 1, clicked: 1, bounced: 0, planned: 0 },
      { at: minute(new Date(t0.getTime() + 3 * MIN)), sent: 0, delivered: -1, opened: 0, clicked: 0, bounced: 1, planned: 0 },
    ]);
    // The chart adds up to the counters.
    const progress = (await w.service.get(WS, broadcast.id)).progress;
    const sum = (k: "sent" | "delivered" | "opened" | "clicked") => points.reduce((n, p) => n + p[k], 0);
    expect({ sent: sum("sent"), delivered: sum("delivered"), opened: sum("opened"), clicked: sum("clicked") }).toEqual({
      sent: progress.sent,
      delivered: progress.delivered,
      opened: progress.opened,
      clicked: progress.clicked,
    });
    w.directory.setWorkspace("ws_other", {});
    expect(await refusal(w.service.timeline("ws_other", broadcast.id))).toMatchObject({ code: "broadcast_not_found" });
  });
});
