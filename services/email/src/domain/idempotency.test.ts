import { beforeEach, describe, expect, it } from "vitest";
import { buildTestWorld, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";
import { requestHash } from "./hash.js";

const WS = "ws_acme";
const email = (key: string | undefined, subject = "Hello"): EmailRequest => ({
  to: "ann@example.test",
  content: { kind: "raw", from: "team@acme.test", subject, html: "<p>Hi</p>" },
  idempotencyKey: key,
});

describe("idempotency keys", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
  });

  it("answers a repeated request with the original record and sends nothing again", async () => {
    const first = await w.service.send(WS, email("order-1"));
    const again = await w.service.send(WS, email("order-1"));
    expect(again).toEqual(first);
    expect(w.queue.jobs).toHaveLength(1);
    expect(w.directory.used).toBe(1);
  });

  it("refuses the same key with another payload with 409 idempotency_key_reused", async () => {
    await w.service.send(WS, email("order-2", "Hello"));
    await expect(w.service.send(WS, email("order-2", "Different"))).rejects.toMatchObject({ code: "idempotency_key_reused", httpStatus: 409 });
    expect(w.queue.jobs).toHaveLength(1);
  });

  it("keeps keys per workspace", async () => {
    const a = await w.service.send(WS, email("shared"));
    const b = await w.service.send("ws_other", email("shared"));
    expect(b.id).not.toBe(a.id);
    expect(w.queue.jobs).toHaveLength(2);
  });

  it("lets exactly one of many concurrent identical requests send; the rest get 409 in progress", async () => {
    w.directory.delayMs = 20; // keeps the first request in flight while the others arrive
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => w.service.send(WS, email("burst"))));
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(7);
    for (const r of refused) expect(r.reason).toMatchObject({ code: "idempotency_request_in_progress", httpStatus: 409 });
    expect(w.queue.jobs).toHaveLength(1);
    // Once done, the same request replays the record.
    const replay = await w.service.send(WS, email("burst"));
    expect(replay.id).toBe((ok[0] as PromiseFulfilledResult<{ id: string }>).value.id);
  });

  it("frees the key when the request failed, so a corrected retry can send", async () => {
    const bad: EmailRequest = { ...email("fix-me"), content: { kind: "raw", from: "eve@evil.test", subject: "x", html: "<p>x</p>" } };
    await expect(w.service.send(WS, bad)).rejects.toMatchObject({ code: "invalid_from" });
    const good = await w.service.send(WS, email("fix-me"));
    expect(good.status).toBe("SENT");

    w.directory.limit = 0;
    await expect(w.service.send(WS, email("limit-key"))).rejects.toMatchObject({ code: "monthly_limit_reached" });
    w.directory.limit = 10;
    expect((await w.service.send(WS, email("limit-key"))).status).toBe("SENT");
  });

  it("applies keys per batch item, including a key repeated inside one batch", async () => {
    const first = await w.service.sendBatch(WS, [email("item-a"), email("item-b"), email(undefined)]);
    expect(first.successful).toHaveLength(3);
    const second = await w.service.sendBatch(WS, [email("item-a"), email("item-c"), email("item-c"), email("item-b", "changed")]);
    expect(second.successful.map((r) => r.id)[0]).toBe(first.successful[0].id);
    expect(second.successful).toHaveLength(2);
    expect(second.failed.map((f) => [f.index, f.error.code])).toEqual([
      [2, "idempotency_request_in_progress"],
      [3, "idempotency_key_reused"],
    ]);
    // item-a replayed, item-c sent once: 3 + 1 jobs.
    expect(w.queue.jobs).toHaveLength(4);
    expect(w.directory.used).toBe(4);
  });

  it("frees a key held by a request that died soon after the gateway gave up on it (35 s), not minutes later", async () => {
    w.directory.delayMs = 300; // the holder is still inside the send
    const holder = w.service.send(WS, email("held-1"));
    await new Promise((r) => setTimeout(r, 100));
    await expect(w.service.send(WS, email("held-1"))).rejects.toMatchObject({ code: "idempotency_request_in_progress" });
    w.directory.delayMs = 0; // the holder stays stuck (as good as dead); the taker runs at once
    w.clock.advance(36_000); // just past the gateway's 30 s deadline and the lease
    const taker = await w.service.send(WS, email("held-1"));
    // The old holder, if it finishes at all, answers with the same email or 409: one email either way.
    const late = await holder.then((r) => r.id, (err) => err.code);
    expect([taker.id, "idempotency_request_in_progress"]).toContain(late);
    await expect(w.service.send(WS, email("held-1"))).resolves.toMatchObject({ id: taker.id });
    expect(w.queue.jobs).toHaveLength(1);
  });

  it("takes over a key whose request died: replays the email it stored, or sends with the same id", async () => {
    const { idempotency, emails } = w.deps;
    const now = w.clock.now();
    // A request died after storing its email but before completing the key.
    const stored = await w.service.send(WS, email(undefined));
    await idempotency.tryInsert({ workspaceId: WS, key: "dead-1", payloadHash: requestHash(email("dead-1")), emailId: stored.id, state: "in_flight", leaseUntil: new Date(now.getTime() + 1000), createdAt: now });
    await expect(w.service.send(WS, email("dead-1"))).rejects.toMatchObject({ code: "idempotency_request_in_progress" });
    w.clock.advance(5_000);
    const replay = await w.service.send(WS, email("dead-1"));
    expect(replay.id).toBe(stored.id);
    expect(w.queue.jobs).toHaveLength(1);

    // A request died before storing anything: the taker sends, with the id the key holds.
    await idempotency.tryInsert({ workspaceId: WS, key: "dead-2", payloadHash: requestHash(email("dead-2")), emailId: "trs_reserved0000000000000000000", state: "in_flight", leaseUntil: w.clock.now(), createdAt: w.clock.now() });
    w.clock.advance(1);
    const sent = await w.service.send(WS, email("dead-2"));
    expect(sent.id).toBe("trs_reserved0000000000000000000");
    expect(await emails.find(WS, sent.id)).not.toBeNull();
    expect(w.queue.jobs).toHaveLength(2);
  });
});
