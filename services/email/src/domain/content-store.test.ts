import { beforeEach, describe, expect, it } from "vitest";
import { DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import { buildTestWorld, decodeCompiled, type TestWorld } from "../testing.js";
import type { EmailRequest } from "./model.js";

const WS = "ws_acme";
const HOUR = 3600_000;
const raw = (to = "ann@example.test", over: Partial<EmailRequest> = {}): EmailRequest => ({
  to,
  content: { kind: "raw", from: "team@acme.test", subject: "Hello", html: "<p>Hi</p>", contactProperties: { plan: "pro" } },
  ...over,
});

/** DESIGN §9.1: the compiled content is in the content store before the job naming it is published. */
describe("content store writes on the send path", () => {
  let w: TestWorld;
  beforeEach(async () => {
    w = await buildTestWorld();
  });

  it("writes an immediate email's compiled content under email:<id> before its job, and the job names it", async () => {
    w.content.delayMs = 20; // the put is still running while the email is inserted
    const record = await w.service.send(WS, raw());
    expect(w.log).toEqual([`put email:${record.id}`, `job email:${record.id}`]);
    const stored = w.content.get(WS, `email:${record.id}`);
    expect(stored).toBeDefined();
    expect(decodeCompiled(stored!).contentId).toBe(record.id);
    const [job] = w.queue.published;
    expect(job).toMatchObject({ deliveryId: record.id, emailId: record.id, contentRef: `email:${record.id}`, source: DeliverySource.TRANSACTIONAL });
    // Merge values travel as JSON bytes, never as a Struct.
    expect(job.recipient?.variables).toBeUndefined();
    expect(JSON.parse(new TextDecoder().decode(job.recipient!.variablesJson))).toEqual({ plan: "pro" });
  });

  it("writes every email of a batch before its own job, the writes running at once rather than one after another", async () => {
    w.content.delayMs = 30;
    const started = Date.now();
    const { successful } = await w.service.sendBatch(WS, Array.from({ length: 10 }, (_, i) => raw(`r${i}@example.test`)));
    const elapsed = Date.now() - started;
    expect(successful).toHaveLength(10);
    for (const r of successful) {
      const put = w.log.indexOf(`put email:${r.id}`);
      expect(put).toBeGreaterThanOrEqual(0);
      expect(w.log.indexOf(`job email:${r.id}`)).toBeGreaterThan(put);
    }
    // Ten puts of 30 ms one after another would take 300 ms.
    expect(elapsed).toBeLessThan(200);
  });

  it("publishes no job when the content could not be written; the scheduler writes it and publishes later", async () => {
    w.content.failNext = 1;
    const record = await w.service.send(WS, raw());
    expect(record.status).toBe("SENT");
    expect(w.queue.published).toHaveLength(0);
    const scheduler = w.scheduler("other-process");
    w.clock.advance(6_000);
    expect(await scheduler.tick()).toBe(1);
    expect(w.log).toEqual([`put email:${record.id}`, `job email:${record.id}`]);
    expect(decodeCompiled(w.content.get(WS, `email:${record.id}`)!).contentId).toBe(record.id);
  });

  it("writes nothing for a suppressed recipient", async () => {
    w.directory.suppressions.set("gone@example.test", "hard_bounce");
    const record = await w.service.send(WS, raw("gone@example.test"));
    expect(record.status).toBe("FAILED");
    expect(w.log).toEqual([]);
  });

  it("writes a scheduled email's content when the scheduler releases it, not at acceptance", async () => {
    const record = await w.service.send(WS, raw("ann@example.test", { sendAt: new Date(w.clock.now().getTime() + HOUR) }));
    expect(record.status).toBe("SCHEDULED");
    expect(w.log).toEqual([]);
    const scheduler = w.scheduler();
    w.clock.advance(HOUR);
    expect(await scheduler.tick()).toBe(1);
    expect(w.log).toEqual([`put email:${record.id}`, `job email:${record.id}`]);
    expect(decodeCompiled(w.content.get(WS, `email:${record.id}`)!).contentId).toBe(record.id);
  });

  it("writes nothing more for a replayed idempotency key", async () => {
    const first = await w.service.send(WS, raw("a@example.test", { idempotencyKey: "k1" }));
    expect(w.content.get(WS, `email:${first.id}`)).toBeDefined();
    // A replay of the key writes nothing more.
    await w.service.send(WS, raw("a@example.test", { idempotencyKey: "k1" }));
    expect(w.log.filter((l) => l.startsWith("put"))).toHaveLength(1);
  });
});
