import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { CompiledMessageSchema, type CompiledMessage } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { compiledFrom } from "../testing.js";
import { CachedContentSource, compiledSize, sharedContentRef, type CompiledMessageSource } from "./content-source.js";

/** Answers from a map, counting calls; `gate` holds every answer until released. */
class CountingSource implements CompiledMessageSource {
  readonly contents = new Map<string, CompiledMessage>();
  calls = 0;
  gate?: Promise<void>;

  async get(_workspaceId: string, contentRef: string): Promise<CompiledMessage> {
    this.calls += 1;
    await this.gate;
    const found = this.contents.get(contentRef);
    if (!found) throw new Error(`no ${contentRef}`);
    return found;
  }

  decode(): CompiledMessage {
    throw new Error("not carried");
  }
}

const sized = (chars: number) => compiledFrom({ subject: "s", html: "x".repeat(chars), text: "" });

describe("CachedContentSource", () => {
  it("loads concurrent misses of one key once", async () => {
    const inner = new CountingSource();
    inner.contents.set("email:a", sized(10));
    let release!: () => void;
    inner.gate = new Promise((r) => (release = r));
    const cache = new CachedContentSource(inner, 1_000_000);
    const all = Promise.all(Array.from({ length: 20 }, () => cache.get("ws_1", "email:a")));
    release();
    const results = await all;
    expect(new Set(results).size).toBe(1);
    expect(inner.calls).toBe(1);
  });

  it("evicts least recently used contents past its byte budget, and never keeps one bigger than the budget", async () => {
    const inner = new CountingSource();
    for (const k of ["a", "b", "c"]) inner.contents.set(`email:${k}`, sized(400));
    inner.contents.set("email:huge", sized(5_000));
    const budget = compiledSize(sized(400)) * 2 + 10;
    const cache = new CachedContentSource(inner, budget);
    await cache.get("ws_1", "email:a");
    await cache.get("ws_1", "email:b");
    await cache.get("ws_1", "email:a"); // a is now the most recent
    await cache.get("ws_1", "email:c"); // evicts b
    expect(inner.calls).toBe(3);
    await cache.get("ws_1", "email:a");
    expect(inner.calls).toBe(3);
    await cache.get("ws_1", "email:b");
    expect(inner.calls).toBe(4);
    await cache.get("ws_1", "email:huge");
    await cache.get("ws_1", "email:huge");
    expect(inner.calls).toBe(6);
    expect(cache.cachedBytes).toBeLessThanOrEqual(budget);
  });

  it("keeps tenants apart and does not remember failures", async () => {
    const inner = new CountingSource();
    const cache = new CachedContentSource(inner, 1_000_000);
    await expect(cache.get("ws_1", "email:a")).rejects.toThrow("no email:a");
    inner.contents.set("email:a", create(CompiledMessageSchema, { workspaceId: "ws_1" }));
    expect((await cache.get("ws_1", "email:a")).workspaceId).toBe("ws_1");
    await cache.get("ws_2", "email:a");
    expect(inner.calls).toBe(3);
  });
});

describe("CachedContentSource bounds", () => {
  it("keeps at most maxEntries contents whatever their size", async () => {
    const inner = new CountingSource();
    for (let i = 0; i < 5; i++) inner.contents.set(`broadcast:${i}`, sized(1));
    const cache = new CachedContentSource(inner, { maxBytes: 1e9, maxEntries: 3 });
    for (let i = 0; i < 5; i++) await cache.get("ws_1", `broadcast:${i}`);
    expect(cache.cachedEntries).toBe(3);
  });

  it("passes refs that are not cacheable straight to the source (a transactional email's content is used once)", async () => {
    const inner = new CountingSource();
    inner.contents.set("email:a", sized(10));
    inner.contents.set("broadcast:b", sized(10));
    const cache = new CachedContentSource(inner, { maxBytes: 1e9, cacheable: sharedContentRef });
    await cache.get("ws_1", "email:a");
    await cache.get("ws_1", "email:a");
    await cache.get("ws_1", "broadcast:b");
    await cache.get("ws_1", "broadcast:b");
    expect(inner.calls).toBe(3);
    expect(cache.cachedEntries).toBe(1);
  });

  it("weighs a small message by what it holds in memory, not by its characters", () => {
    // A one-line message weighed ~300 "bytes" and took ~15 KiB of heap with its prepared merge.
    expect(compiledSize(sized(10))).toBeGreaterThanOrEqual(4096);
    expect(compiledSize(sized(10_000))).toBeGreaterThanOrEqual(50_000);
  });
});

describe("a forwarded message's content (DESIGN §10.4)", () => {
  it("comes back as its bytes and envelope sender, through a job's carried content and the content store alike", async () => {
    const { encodeStoredContent } = await import("@mailroom/pipeline/content-store.js");
    const { StoreContentSource } = await import("./content-source.js");
    const raw = new TextEncoder().encode("DKIM-Signature: v=1; d=sender.example\r\nFrom: ann@sender.example\r\n\r\nhello\r\n");
    const bytes = encodeStoredContent(compiledFrom({ subject: "s", html: "" }), { cc: [], headers: [], attachments: [], forwarded: { raw, envelopeFrom: "SRS0=abcdef=aa=sender.example=ann@b.test" } });
    const { decodeStoredContent } = await import("@mailroom/pipeline/content-store.js");
    const source = new StoreContentSource({ getStored: async () => decodeStoredContent(bytes) });
    for (const compiled of [source.decode("ws_test", "email:trs_1", bytes), await source.get("ws_test", "email:trs_1")]) {
      expect(compiled.workspaceId).toBe("ws_test");
      expect(compiled.carried?.forwarded?.envelopeFrom).toBe("SRS0=abcdef=aa=sender.example=ann@b.test");
      expect(Buffer.from(compiled.carried!.forwarded!.raw).equals(Buffer.from(raw))).toBe(true);
    }
    // Ordinary content carries no forward.
    expect(source.decode("ws_test", "email:trs_2", encodeStoredContent(compiledFrom({ subject: "s", html: "<p>x</p>" }))).carried).toBeUndefined();
  });
});
