import { beforeEach, describe, expect, it } from "vitest";
import { AppError } from "@mailroom/kit/errors.js";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";

const WS = "ws_erase";
const raw = (to: string, extra: Partial<EmailRequest> = {}): EmailRequest => ({
  to,
  content: { kind: "raw", from: "Acme <team@acme.test>", subject: `Hello ${to}`, html: "<p>Hi</p>", contactProperties: { plan: "pro" } },
  ...extra,
});

describe("erasing one recipient's emails", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
  });

  it("removes every record, its stored and delivery content and its idempotency entry, and nothing else", async () => {
    const ann = [
      await w.service.send(WS, raw("ann@example.test", { idempotencyKey: "k-ann" })),
      await w.service.send(WS, raw("Ann <ANN@Example.test>")),
      // Scheduled: its record is what the scheduler would claim; once erased it is never sent.
      await w.service.send(WS, raw("ann@example.test", { sendAt: new Date(w.clock.now().getTime() + 3600_000) })),
    ];
    const joann = await w.service.send(WS, raw("joann@example.test"));
    const elsewhere = await w.service.send("ws_other", raw("ann@example.test"));
    for (const e of ann) expect(w.content.get(WS, `email:${e.id}`) ?? (await w.deps.emails.compiledContent(WS, e.id))).toBeTruthy();

    expect(await w.service.eraseRecipient(WS, "ANN@example.test")).toBe(3);

    for (const e of ann) {
      await expect(w.service.get(WS, e.id)).rejects.toMatchObject({ code: "email_not_found" });
      expect(w.content.get(WS, `email:${e.id}`)).toBeUndefined();
      expect(await w.deps.emails.compiledContent(WS, e.id)).toBeNull();
    }
    expect(await w.deps.idempotency.get(WS, "k-ann")).toBeNull();
    // The same key is free again: a new request with it is a new email, not the erased answer.
    const again = await w.service.send(WS, raw("ann@example.test", { idempotencyKey: "k-ann" }));
    expect(again.id).not.toBe(ann[0].id);
    // A part of the address, and other workspaces, are untouched.
    expect((await w.service.get(WS, joann.id)).to).toBe("joann@example.test");
    expect((await w.service.get("ws_other", elsewhere.id)).to).toBe("ann@example.test");
    const listed = await w.service.list(WS, { recipient: "ann@example.test", recipientExact: true });
    expect(listed.emails.map((e) => e.id)).toEqual([again.id]);
    // Nothing erased is ever claimed by the scheduler.
    w.clock.advance(2 * 3600_000);
    await w.scheduler().tick();
    expect(w.queue.jobs.map((j) => j.emailId)).not.toContain(ann[2].id);
  });

  it("takes the address off other recipients' emails where it was a cc or bcc (suppressed or not), keeping those emails and everyone else on them", async () => {
    w.directory.suppressions.set("ann@example.test", "unsubscribed");
    const asCc = await w.service.send(WS, raw("bob@example.test", { cc: ["Ann <ANN@example.test>", "Cy <cy@example.test>"], bcc: ["dee@example.test"] }));
    w.directory.suppressions.clear();
    const asBcc = await w.service.send(WS, raw("eve@example.test", { cc: ["cy@example.test"], bcc: ["ann@example.test", "joann@example.test"] }));
    const untouched = await w.service.send(WS, raw("fay@example.test", { cc: ["joann@example.test"] }));
    // One of them is final: its content in the content store (whose Cc header named ann) goes too.
    expect(await w.deps.emails.transition(asCc.id, ["SENT"], "DELIVERED", w.clock.now())).toBe(true);
    expect(w.content.get(WS, `email:${asCc.id}`)).toBeTruthy();
    expect((await w.service.get(WS, asCc.id)).suppressed).toEqual([expect.objectContaining({ email: "ANN@example.test" })]);

    expect(await w.service.eraseRecipient(WS, "ann@example.test")).toBe(0);

    const cc = await w.service.get(WS, asCc.id);
    expect([cc.to, cc.cc, cc.bcc, cc.suppressed ?? []]).toEqual(["bob@example.test", ["Cy <cy@example.test>"], ["dee@example.test"], []]);
    expect(w.content.get(WS, `email:${asCc.id}`)).toBeUndefined();
    const bcc = await w.service.get(WS, asBcc.id);
    expect([bcc.to, bcc.cc, bcc.bcc]).toEqual(["eve@example.test", ["cy@example.test"], ["joann@example.test"]]);
    // Still on its way: the content delivery reads stays until the email is final.
    expect(w.content.get(WS, `email:${asBcc.id}`)).toBeTruthy();
    expect((await w.service.get(WS, untouched.id)).cc).toEqual(["joann@example.test"]);
    expect(JSON.stringify(await w.service.list(WS, {}))).not.toMatch(/\bann@example\.test/i);
  });

  it("erases more emails than one round holds, and is a no-op the second time", async () => {
    for (let i = 0; i < 230; i++) await w.service.send(WS, raw("bulk@example.test"));
    expect(await w.service.eraseRecipient(WS, "bulk@example.test")).toBe(230);
    expect(await w.service.eraseRecipient(WS, "bulk@example.test")).toBe(0);
    expect((await w.service.list(WS, { recipient: "bulk", limit: 100 })).emails).toEqual([]);
  });

  it("refuses what is not an address", async () => {
    for (const bad of ["", "   ", "no-at-sign", "x".repeat(400) + "@example.test"]) {
      const err = await w.service.eraseRecipient(WS, bad).then(() => undefined, (e) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).httpStatus).toBe(400);
    }
  });
});
