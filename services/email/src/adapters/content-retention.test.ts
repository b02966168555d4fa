import { describe, expect, it } from "vitest";
import { buildTestWorld } from "../testing.js";
import { CollectionEmailStore } from "./store.js";

const WS = "ws_retention";

describe("content of final emails", () => {
  it("is dropped at once by default, and kept for the retention period when configured", async () => {
    for (const hours of [0, 2]) {
      const w = await buildTestWorld();
      const store = new CollectionEmailStore(w.store, { contentRetentionHours: hours });
      await store.init();
      const record = await w.service.send(WS, { to: "ann@example.test", content: { kind: "raw", from: "Acme <team@acme.test>", subject: "Hi", html: "<p>Hi</p>" } });
      expect(await store.compiledContent(WS, record.id)).not.toBeNull();
      expect(await store.transition(record.id, ["SENT"], "DELIVERED", new Date())).toBe(true);
      const kept = await store.compiledContent(WS, record.id);
      if (hours) expect(kept, "kept for the retention period").not.toBeNull();
      else expect(kept, "dropped at once").toBeNull();
      // Never to another workspace.
      expect(await store.compiledContent("ws_other", record.id)).toBeNull();
    }
  });

  it("keeps an email's attachments exactly as long as its content, TTL included", async () => {
    const w = await buildTestWorld();
    const store = new CollectionEmailStore(w.store, { contentRetentionHours: 2 });
    await store.init();
    const file = new Uint8Array([1, 2, 3, 4]);
    const record = await w.service.send(WS, {
      to: "ann@example.test",
      content: { kind: "raw", from: "Acme <team@acme.test>", subject: "Hi", html: "<p>Hi</p>" },
      attachments: [{ filename: "a.pdf", content: file }],
    });
    expect(await store.transition(record.id, ["SENT"], "DELIVERED", new Date())).toBe(true);
    const kept = await w.store.collection<{ _id: string; keepUntil?: Date }>("email_attachments").findOne({ _id: `${record.id}.0` });
    const content = await w.store.collection<{ _id: string; keepUntil?: Date }>("email_contents").findOne({ _id: record.id });
    expect(kept?.keepUntil).toBeInstanceOf(Date);
    expect(kept?.keepUntil).toEqual(content?.keepUntil);
    expect(await store.attachmentContent(WS, record.id, 0)).toEqual(file);
    expect(await store.attachmentContent("ws_other", record.id, 0)).toBeNull();
  });
});
