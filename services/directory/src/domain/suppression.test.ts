import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../testing.js";

describe("suppression list", () => {
  it("answers which of many addresses are suppressed, case-insensitively, per workspace", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.suppressions.add("ws_a", "Bounce@Example.test", "hard_bounce", "550 5.1.1 no such user");
    await dir.suppressions.add("ws_a", "gone@example.test", "unsubscribed");
    await dir.suppressions.add("ws_a", "spam@example.test", "complaint");
    await dir.suppressions.add("ws_b", "ok@example.test", "manual");
    const hits = await dir.suppressions.check("ws_a", ["BOUNCE@example.test", "fine@example.test", "gone@example.test", "spam@Example.Test", "ok@example.test", "garbage"]);
    expect(hits.map((h) => [h.emailLower, h.reason]).sort()).toEqual([
      ["bounce@example.test", "hard_bounce"], ["gone@example.test", "unsubscribed"], ["spam@example.test", "complaint"],
    ]);
    expect(hits.find((h) => h.reason === "hard_bounce")?.detail).toBe("550 5.1.1 no such user");
    expect(await dir.suppressions.check("ws_b", ["bounce@example.test"])).toEqual([]);
  });

  it("is idempotent, lets a bounce override an unsubscribe, and can be lifted", async () => {
    const dir = await memoryDirectory();
    await dir.suppressions.add("ws_a", "x@example.test", "unsubscribed");
    await dir.suppressions.add("ws_a", "x@example.test", "unsubscribed");
    await dir.suppressions.add("ws_a", "x@example.test", "hard_bounce", "550");
    await dir.suppressions.add("ws_a", "x@example.test", "unsubscribed");
    const [hit] = await dir.suppressions.check("ws_a", ["x@example.test"]);
    expect(hit.reason).toBe("hard_bounce");
    expect((await dir.suppressions.list("ws_a")).items).toHaveLength(1);
    await dir.suppressions.remove("ws_a", "X@example.test");
    expect(await dir.suppressions.check("ws_a", ["x@example.test"])).toEqual([]);
    expect(errorInfoOf(await dir.suppressions.add("ws_a", "nope", "manual").catch((e) => e))?.code).toBe("invalid_email");
  });
});
