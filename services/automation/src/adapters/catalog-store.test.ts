import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Automation } from "../domain/model.js";
import { StoreCatalog } from "./catalog-store.js";

const WS = "ws_acme";
const automation = (over: Partial<Automation> = {}): Automation => ({
  id: "aut_01jqz8k4m2x7v9c3n5b6t1w0ye",
  workspaceId: WS,
  name: "A",
  status: "DRAFT",
  version: 1,
  // A filter's keys ($and, dotted paths) are not valid field names in a stored document.
  trigger: { type: "event", name: "paid", filter: { $and: [{ "properties.plan": "pro" }] } },
  steps: [{ id: "s", type: "send", template: "welcome" }],
  reentry: "once",
  createdAt: new Date("2030-01-01T00:00:00Z"),
  updatedAt: new Date("2030-01-01T00:00:00Z"),
  ...over,
});

describe("StoreCatalog", () => {
  it("keeps filters with $ and dotted keys intact, and every version apart", async () => {
    const catalog = new StoreCatalog(openMemoryStore());
    await catalog.init();
    await catalog.insert(automation());
    expect((await catalog.find(WS, automation().id))!.trigger).toEqual(automation().trigger);
    expect(await catalog.saveVersion(automation({ version: 2, steps: [{ id: "x", type: "exit" }] }), 1)).toBe(true);
    // A stale writer (still at version 1) loses.
    expect(await catalog.saveVersion(automation({ version: 2, name: "late" }), 1)).toBe(false);
    expect((await catalog.version(WS, automation().id, 1))!.definition.steps[0].id).toBe("s");
    expect((await catalog.version(WS, automation().id, 2))!.definition.steps[0].id).toBe("x");
    expect((await catalog.find(WS, automation().id))!.name).toBe("A");
  });

  it("a version written only inline (a crash between the two writes) is still readable, and kept once the next version is made", async () => {
    const store = openMemoryStore();
    const catalog = new StoreCatalog(store);
    await catalog.insert(automation());
    await store.collection("automation_versions").deleteMany({});
    expect((await new StoreCatalog(store).version(WS, automation().id, 1))!.definition.steps[0].id).toBe("s");
    await catalog.saveVersion(automation({ version: 2, steps: [{ id: "x", type: "exit" }] }), 1);
    expect((await new StoreCatalog(store).version(WS, automation().id, 1))!.definition.steps[0].id).toBe("s");
  });

  it("active automations by trigger: cached briefly, cleared at once by this process's changes", async () => {
    const store = openMemoryStore();
    const here = new StoreCatalog(store, { activeCacheMs: 60_000 });
    const elsewhere = new StoreCatalog(store, { activeCacheMs: 60_000 });
    await here.insert(automation());
    expect(await elsewhere.activeWithTrigger(WS, "event")).toEqual([]);
    await here.setStatus(WS, automation().id, ["DRAFT"], "ACTIVE", new Date());
    expect((await here.activeWithTrigger(WS, "event")).map((a) => a.id)).toEqual([automation().id]);
    // The other process answers from its cache until it expires.
    expect(await elsewhere.activeWithTrigger(WS, "event")).toEqual([]);
    expect(await here.activeWithTrigger(WS, "contact_created")).toEqual([]);
    await here.markDeleted(WS, automation().id, new Date());
    expect(await here.activeWithTrigger(WS, "event")).toEqual([]);
    expect(await here.version(WS, automation().id, 1)).toMatchObject({ deleted: true, status: "ACTIVE" });
  });
});
