import { describe, expect, it } from "vitest";
import { buildTestWorld, draft, silentLogger, type TestWorld } from "../testing.js";
import { deliveryIdOf } from "./model.js";
import type { PageRepository } from "./ports.js";
import { CONTENT_REFRESH_MS, MAX_PAGE_BYTES, Sender, chunkBySize } from "./sending.js";

const WS = "ws_acme";

async function run(w: TestWorld, sender = w.sender()) {
  for (let i = 0; i < 200; i++) if ((await sender.tick()) === 0) return;
  throw new Error("sender kept working");
}

async function scheduled(w: TestWorld, method?: string) {
  const { broadcast } = await w.service.create(WS, draft());
  await w.service.schedule(WS, broadcast.id, { deliveryMethod: method });
  return broadcast.id;
}

/** Distinct pages by id (what the stream keeps after msgID deduplication). */
const distinctPages = (w: TestWorld) => new Map(w.queue.pages.map((p) => [p.pageId, p]));

describe("page jobs", () => {
  it("publishes a broadcast of N recipients as ceil(N / window) pages whose recipients are disjoint and complete", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 250 } });
    w.directory.addContacts(2_050, (i) => ({ properties: { plan: i % 2 ? "pro" : "free" } }));
    const id = await scheduled(w, "ASAP");
    await run(w);

    const pages = w.queue.pages;
    expect(pages).toHaveLength(Math.ceil(2_050 / 250));
    expect(new Set(pages.map((p) => p.pageId)).size).toBe(pages.length);
    const seen = new Set<string>();
    for (const page of pages) {
      expect(page).toMatchObject({ broadcastId: id, workspaceId: WS, contentRef: `broadcast:${id}`, fromEmail: "news@acme.test", subjectPrefix: "" });
      expect(page.recipients.length).toBeGreaterThan(0);
      expect(page.recipients.length).toBeLessThanOrEqual(250);
      for (const r of page.recipients) {
        expect(seen.has(r.deliveryId)).toBe(false);
        seen.add(r.deliveryId);
      }
    }
    expect(seen).toEqual(new Set(w.directory.contacts.map((c) => deliveryIdOf(id, c.id))));
    // Each recipient keeps its own delivery id, Message-ID and merge values (JSON bytes).
    const r7 = pages.flatMap((p) => p.recipients).find((r) => r.email === "c7@example.test")!;
    expect(r7).toMatchObject({ deliveryId: deliveryIdOf(id, w.directory.contacts[7].id), contactId: w.directory.contacts[7].id });
    expect(r7.messageId).toBe(`${w.directory.contacts[7].id}.${id}@acme.test`);
    expect(JSON.parse(new TextDecoder().decode(r7.variablesJson))).toEqual({ plan: "pro", firstName: "First7", lastName: "" });
    // Ledger entries are written per window too: the last recipient of the last page has one.
    expect((await w.repos.ledger.mark(deliveryIdOf(id, w.directory.contacts[2_049].id), "sent")).known).toBe(true);
    expect((await w.service.get(WS, id)).progress).toMatchObject({ recipients: 2_050, released: 2_050 });
  });

  it("leaves suppressed recipients out of the page and a window of only suppressed recipients unpublished", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 2 } });
    w.directory.addContacts(4);
    const id = await scheduled(w, "ASAP");
    w.directory.suppressions.add("c2@example.test");
    w.directory.suppressions.add("c3@example.test");
    // Suppressed after resolution: the window's reservation settles them.
    const directory = w.directory;
    const suppressed = directory.suppressed.bind(directory);
    directory.suppressed = async (ws, emails) => (await suppressed(ws, emails), new Set());
    await run(w);
    expect(w.queue.pages.map((p) => p.recipients.map((r) => r.email))).toEqual([["c0@example.test", "c1@example.test"]]);
    expect((await w.service.get(WS, id)).progress).toMatchObject({ released: 4, suppressed: 2 });
  });

  it("writes the compiled content to the content store before the first page, and no page when that write fails", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 100 } });
    w.directory.addContacts(300);
    const id = await scheduled(w, "ASAP");
    w.content.failNext = 1;
    await w.sender().tick();
    expect(w.queue.pages).toHaveLength(0);
    w.clock.advance(3_000);
    await run(w);
    const ref = `broadcast:${id}`;
    expect(w.log[0]).toBe(`put ${ref}`);
    expect(w.log.slice(1).every((l) => l.startsWith(`page ${ref} `))).toBe(true);
    expect(w.log.filter((l) => l.startsWith("page"))).toHaveLength(3);
    // The very bytes the renderer compiled at schedule.
    const { contentKey } = await w.service.get(WS, id);
    expect(w.content.get(WS, ref)).toEqual((await w.repos.lockedContent.get(contentKey!))!.compiled);
  });

  it("re-publishes a window after a crash under the same page id with the same recipients (deduplicated by msgID)", async () => {
    const w = await buildTestWorld({ sender: { windowSize: 100 } });
    w.directory.addContacts(250);
    const id = await scheduled(w, "ASAP");
    // A process that publishes its first window, then dies before marking it released.
    let dying = true;
    const pages: PageRepository = Object.assign(Object.create(Object.getPrototypeOf(w.repos.pages)), w.repos.pages, {
      markReleased: async (...args: Parameters<PageRepository["markReleased"]>) => {
        if (dying) throw new Error("killed");
        return w.repos.pages.markReleased(...args);
      },
    });
    const doomed = new Sender({ ...w.repos, pages, directory: w.directory, queue: w.queue, deliveryContent: w.content, clock: w.clock, logger: silentLogger }, { owner: "doomed", windowSize: 100 });
    await doomed.tick();
    dying = false;
    expect(w.queue.pages).toHaveLength(1);
    const first = w.queue.pages[0];
    const reservations = w.directory.calls.filter((c) => c.startsWith("reserve")).length;

    w.clock.advance(3_000);
    await run(w);
    const published = w.queue.pages;
    expect(published).toHaveLength(4); // the first window twice, then two more
    const again = published.filter((p) => p.pageId === first.pageId);
    expect(again).toHaveLength(2);
    expect(again[1].recipients).toEqual(first.recipients);
    // No second reservation for the re-published window.
    expect(w.directory.calls.filter((c) => c.startsWith("reserve")).length).toBe(reservations + 2);
    const kept = distinctPages(w);
    expect(kept.size).toBe(3);
    expect([...kept.values()].reduce((n, p) => n + p.recipients.length, 0)).toBe(250);
    expect((await w.service.get(WS, id)).progress.released).toBe(250);
  });

  it("splits a window whose merge values are large into several pages, deterministically", () => {
    const big = "x".repeat(100_000);
    const recipients = Array.from({ length: 12 }, (_, i) => ({ deliveryId: `d${i}`, messageId: `m${i}`, email: `e${i}@x.test`, contactId: `c${i}`, variablesJson: new TextEncoder().encode(JSON.stringify({ big })) }));
    const chunks = chunkBySize(recipients, MAX_PAGE_BYTES);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.flat()).toEqual(recipients);
    expect(chunkBySize(recipients, MAX_PAGE_BYTES).map((c) => c.length)).toEqual(chunks.map((c) => c.length));
    expect(chunkBySize(recipients.slice(0, 3), MAX_PAGE_BYTES)).toHaveLength(1);
  });
});

describe("content store entry over a broadcast's life", () => {
  it("is deleted when the broadcast completes", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(3);
    const id = await scheduled(w, "ASAP");
    await run(w);
    expect(w.content.get(WS, `broadcast:${id}`)).toBeDefined();
    await w.settleAll(id, "sent");
    expect((await w.service.get(WS, id)).status).toBe("COMPLETED");
    expect(w.content.get(WS, `broadcast:${id}`)).toBeUndefined();
    expect(w.log.at(-1)).toBe(`delete broadcast:${id}`);
  });

  it("is written again when a paced (WARMUP) broadcast resumes more than a day later, not on every claim", async () => {
    const w = await buildTestWorld();
    w.directory.setWorkspace(WS, { sendingAccountNew: true });
    w.directory.addContacts(2_500);
    const id = await scheduled(w);
    const puts = () => w.log.filter((l) => l === `put broadcast:${id}`).length;
    await run(w);
    expect(w.queue.distinct().size).toBe(1_000);
    expect(puts()).toBe(1);
    w.clock.advance(3600_000); // later the same day: claims, nothing released, no write
    await run(w);
    expect(puts()).toBe(1);
    w.clock.advance(CONTENT_REFRESH_MS); // the next day's cap: the rest goes out, after a fresh write
    const dayTwo = w.log.length;
    await run(w);
    expect(w.log[dayTwo]).toBe(`put broadcast:${id}`);
    expect(w.log.slice(dayTwo + 1).every((l) => l.startsWith(`page broadcast:${id} `))).toBe(true);
    expect(w.queue.distinct().size).toBe(2_500);
    expect(puts()).toBe(2);
  });
});

describe("the audience is streamed once", () => {
  it("counts it at schedule with the audience unit's count, and streams it only to resolve it", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(1_200);
    const id = await scheduled(w, "ASAP");
    expect(w.directory.calls.filter((c) => c.startsWith("stream"))).toEqual([]);
    expect(w.directory.calls).toContain("count");
    await run(w);
    expect(w.directory.calls.filter((c) => c.startsWith("stream"))).toEqual(["stream after -"]);
    expect((await w.service.get(WS, id)).progress).toMatchObject({ recipients: 1_200, released: 1_200 });
  });

  it("still refuses to schedule an audience larger than this month's remaining sends (403)", async () => {
    const w = await buildTestWorld();
    w.directory.addContacts(10);
    w.directory.contacts[0].subscribed = false;
    w.directory.limit = 9;
    const { broadcast } = await w.service.create(WS, draft());
    w.directory.used = 1;
    await expect(w.service.schedule(WS, broadcast.id, {})).rejects.toMatchObject({ code: "monthly_limit_reached", httpStatus: 403 });
    w.directory.used = 0;
    expect((await w.service.schedule(WS, broadcast.id, {})).broadcast.status).toBe("SCHEDULED");
  });
});
