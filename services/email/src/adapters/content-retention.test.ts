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
});
