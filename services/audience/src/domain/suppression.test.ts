import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { memoryDirectory } from "../testing.js";
import { reserveSendable } from "./sendable.js";
import { contactStatus } from "@mailroom/records/model.js";
import { ADD_BATCH_MAX } from "./suppression.js";

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

describe("suppression list: domains, reasons, sources, imports (DESIGN §10.3)", () => {
  it("a domain suppression stops every address at that domain, named in the check's answer; an address's own entry wins", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    const { created } = await dir.suppressions.suppress("ws_a", { domain: "Blocked.Test" }, "manual", { source: "policy" });
    expect(created).toBe(true);
    await dir.suppressions.add("ws_a", "own@blocked.test", "hard_bounce", "550");
    const hits = await dir.suppressions.check("ws_a", ["Ann@Blocked.test", "own@blocked.test", "ok@other.test", "x@sub.blocked.test"]);
    expect(hits.map((h) => [h.emailLower, h.reason, h.domain]).sort()).toEqual([
      ["ann@blocked.test", "manual", "blocked.test"],
      ["own@blocked.test", "hard_bounce", undefined],
    ]);
    // Another workspace's domain suppression is not this one's.
    expect(await dir.suppressions.check("ws_b", ["ann@blocked.test"])).toEqual([]);
    // Sending to it is left out like a suppressed address, and not counted.
    const r = await reserveSendable(dir, "ws_a", ["bob@blocked.test", "ok@other.test"]);
    expect(r.suppressed.map((s) => s.emailLower)).toEqual(["bob@blocked.test"]);
  });

  it("refuses bad addresses, bad domains, both at once and unknown reasons with clear codes", async () => {
    const dir = await memoryDirectory();
    const code = (p: Promise<unknown>) => p.then(() => "ok", (e) => errorInfoOf(e)?.code);
    expect(await code(dir.suppressions.suppress("ws_a", { email: "nope" }, "manual"))).toBe("invalid_email");
    expect(await code(dir.suppressions.suppress("ws_a", { domain: "not a domain" }, "manual"))).toBe("invalid_domain");
    expect(await code(dir.suppressions.suppress("ws_a", { domain: "localhost" }, "manual"))).toBe("invalid_domain");
    expect(await code(dir.suppressions.suppress("ws_a", { email: "a@x.test", domain: "x.test" }, "manual"))).toBe("email_and_domain");
    expect(await code(dir.suppressions.suppress("ws_a", {}, "manual"))).toBe("invalid_request");
    expect(await code(dir.suppressions.suppress("ws_a", { email: "a@x.test" }, "bogus" as never))).toBe("invalid_reason");
    expect(await code(dir.suppressions.suppress("ws_a", { email: "a@x.test" }, "manual", { source: "x".repeat(501) }))).toBe("invalid_source");
    expect((await dir.suppressions.list("ws_a")).items).toEqual([]);
  });

  it("lists with reason, since and search filters and cursor paging, never the erased hashed entries", async () => {
    let now = new Date("2026-01-01T00:00:00Z");
    const dir = await memoryDirectory({ now: () => now });
    await dir.suppressions.add("ws_a", "a@x.test", "hard_bounce", "550", undefined, "trs_1");
    await dir.suppressions.add("ws_a", "b@x.test", "complaint");
    now = new Date("2026-02-01T00:00:00Z");
    await dir.suppressions.add("ws_a", "c@x.test", "manual");
    await dir.suppressions.suppress("ws_a", { domain: "y.test" }, "manual");
    await dir.suppressions.add("ws_a", "gone@x.test", "manual");
    await dir.suppressions.erase("ws_a", "gone@x.test");
    const all = await dir.suppressions.list("ws_a");
    expect(all.items.map((s) => s.domain ?? s.emailLower)).toEqual(["y.test", "a@x.test", "b@x.test", "c@x.test"]);
    expect(all.items[1].source).toBe("trs_1");
    expect((await dir.suppressions.list("ws_a", { reason: "complaint" })).items.map((s) => s.emailLower)).toEqual(["b@x.test"]);
    expect((await dir.suppressions.list("ws_a", { since: new Date("2026-01-15T00:00:00Z") })).items.map((s) => s.domain ?? s.emailLower)).toEqual(["y.test", "c@x.test"]);
    expect((await dir.suppressions.list("ws_a", { search: "B@" })).items.map((s) => s.emailLower)).toEqual(["b@x.test"]);
    const first = await dir.suppressions.list("ws_a", { limit: 3 });
    expect(first.hasMore).toBe(true);
    const second = await dir.suppressions.list("ws_a", { limit: 3, cursor: first.nextCursor });
    expect(second.items.map((s) => s.emailLower)).toEqual(["c@x.test"]);
    expect(second.hasMore).toBe(false);
    // The erased address stays suppressed though unlisted.
    expect((await dir.suppressions.check("ws_a", ["gone@x.test"]))[0]?.reason).toBe("manual");
    const exported: string[] = [];
    for await (const batch of dir.suppressions.export("ws_a", { batchSize: 2 })) exported.push(...batch.map((s) => s.domain ?? s.emailLower));
    expect(exported).toEqual(["y.test", "a@x.test", "b@x.test", "c@x.test"]);
  });

  it("lifting a complaint needs force (409 force_required); an unknown one is 404 when asked", async () => {
    const dir = await memoryDirectory();
    await dir.suppressions.add("ws_a", "spam@x.test", "complaint");
    const err = await dir.suppressions.lift("ws_a", { email: "spam@x.test" }, { requireFound: true }).catch((e) => e);
    expect(errorInfoOf(err)).toMatchObject({ code: "force_required", httpStatus: 409 });
    expect(await dir.suppressions.check("ws_a", ["spam@x.test"])).toHaveLength(1);
    const lifted = await dir.suppressions.lift("ws_a", { email: "Spam@x.test" }, { force: true, requireFound: true });
    expect(lifted).toMatchObject({ emailLower: "spam@x.test", reason: "complaint" });
    expect(await dir.suppressions.check("ws_a", ["spam@x.test"])).toEqual([]);
    expect(errorInfoOf(await dir.suppressions.lift("ws_a", { email: "spam@x.test" }, { requireFound: true }).catch((e) => e))).toMatchObject({ code: "suppression_not_found", httpStatus: 404 });
    await dir.suppressions.suppress("ws_a", { domain: "d.test" }, "manual");
    expect(await dir.suppressions.lift("ws_a", { domain: "@D.test" }, { requireFound: true })).toMatchObject({ domain: "d.test" });
    expect(await dir.suppressions.check("ws_a", ["a@d.test"])).toEqual([]);
    // An erased address's hashed entry is lifted by its address (the caller knows it).
    await dir.suppressions.add("ws_a", "gone@x.test", "manual");
    await dir.suppressions.erase("ws_a", "gone@x.test");
    expect(await dir.suppressions.lift("ws_a", { email: "gone@x.test" }, { requireFound: true })).toMatchObject({ emailLower: "gone@x.test" });
    expect(await dir.suppressions.check("ws_a", ["gone@x.test"])).toEqual([]);
  });

  it("a batch reports each entry created, existing or rejected, is idempotent, and keeps an import's dates and sources", async () => {
    const dir = await memoryDirectory({ now: () => new Date("2026-03-01T00:00:00Z") });
    await dir.suppressions.add("ws_a", "known@x.test", "unsubscribed");
    await dir.suppressions.add("ws_a", "erased@x.test", "manual");
    await dir.suppressions.erase("ws_a", "erased@x.test");
    const entries = [
      { email: "new@x.test", source: "postmark.csv", createdAt: new Date("2024-05-01T00:00:00Z") },
      { email: "KNOWN@x.test", reason: "hard_bounce" as const },
      { email: "erased@x.test" },
      { domain: "blocked.test", reason: "manual" as const },
      { email: "new@x.test" },
      { email: "bad" },
      { domain: "bad domain" },
      { email: "a@x.test", domain: "x.test" },
      { email: "future@x.test", createdAt: new Date("2030-01-01T00:00:00Z") },
    ];
    const results = await dir.suppressions.addMany("ws_a", entries);
    expect(results.map((r) => (r.outcome === "rejected" ? r.code : r.outcome))).toEqual([
      "created", "existing", "existing", "created", "existing", "invalid_email", "invalid_domain", "email_and_domain", "invalid_created_at",
    ]);
    const [created] = await dir.suppressions.check("ws_a", ["new@x.test"]);
    expect(created).toMatchObject({ reason: "imported", source: "postmark.csv", createdAt: new Date("2024-05-01T00:00:00Z") });
    // A stronger reason replaced the weaker one.
    expect((await dir.suppressions.check("ws_a", ["known@x.test"]))[0].reason).toBe("hard_bounce");
    const again = await dir.suppressions.addMany("ws_a", entries);
    expect(again.filter((r) => r.outcome === "created")).toEqual([]);
    expect(errorInfoOf(await dir.suppressions.addMany("ws_a", []).catch((e) => e))?.code).toBe("invalid_request");
    expect(errorInfoOf(await dir.suppressions.addMany("ws_a", Array.from({ length: ADD_BATCH_MAX + 1 }, (_, i) => ({ email: `u${i}@x.test` }))).catch((e) => e))?.code).toBe("invalid_request");
  });

  it("a batch's unsubscribed rows unsubscribe the addresses that are contacts (the others are only suppressed)", async () => {
    const dir = await memoryDirectory();
    await dir.workspaces.create({ id: "ws_a", name: "A" });
    await dir.contacts.create("ws_a", { email: "Ann@x.test" });
    await dir.contacts.create("ws_a", { email: "bob@x.test" });
    const results = await dir.suppressions.addMany("ws_a", [
      { email: "ann@x.test", reason: "unsubscribed" }, { email: "nobody@x.test", reason: "unsubscribed" }, { email: "bob@x.test", reason: "imported" },
    ]);
    expect(results.map((r) => r.outcome)).toEqual(["created", "created", "created"]);
    expect(contactStatus(await dir.contacts.get("ws_a", "ann@x.test"))).toBe("UNSUBSCRIBED");
    expect(contactStatus(await dir.contacts.get("ws_a", "bob@x.test"))).toBe("SUBSCRIBED");
  });

  it("announces SUPPRESSION_CREATED / SUPPRESSION_DELETED once per change, never for erased entries", async () => {
    const events: Array<{ id: string; type: string; data: Record<string, unknown> }> = [];
    const dir = await memoryDirectory({ publishChanges: (batch) => void events.push(...batch) });
    await dir.suppressions.suppress("ws_a", { email: "a@x.test" }, "manual", { source: "console" });
    await dir.suppressions.suppress("ws_a", { email: "a@x.test" }, "manual");
    await dir.suppressions.addMany("ws_a", [{ domain: "d.test" }, { email: "a@x.test" }]);
    await dir.suppressions.lift("ws_a", { domain: "d.test" });
    await dir.suppressions.add("ws_a", "gone@x.test", "manual");
    events.length = 3;
    await dir.suppressions.erase("ws_a", "gone@x.test");
    expect(events.map((e) => [e.type, e.data.suppression])).toEqual([
      ["SUPPRESSION_CREATED", expect.objectContaining({ email: "a@x.test", reason: "manual", source: "console" })],
      ["SUPPRESSION_CREATED", expect.objectContaining({ domain: "d.test", reason: "imported" })],
      ["SUPPRESSION_DELETED", expect.objectContaining({ domain: "d.test" })],
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(3);
  });
});
