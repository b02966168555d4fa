import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { Webhook } from "../domain/model.js";
import { CachedWebhookStore } from "./cached-webhooks.js";
import { openStores } from "./store.js";
import { TEST_SECRET_KEYS } from "../testing.js";

const hook = (id: string, workspaceId = "ws_1"): Webhook => ({
  id,
  workspaceId,
  url: "https://a.test/",
  events: ["EMAIL_SENT"],
  displayName: "a.test",
  status: "ACTIVE",
  token: "t",
  createdAt: new Date(1),
  updatedAt: new Date(1),
  consecutiveFailures: 0,
});

async function setup() {
  const { webhooks: inner } = await openStores(openMemoryStore(), TEST_SECRET_KEYS);
  const announced: Array<{ workspaceId?: string; webhookId?: string }> = [];
  // Another process: a second cache over the same store.
  const here = new CachedWebhookStore(inner, 60_000, (c) => announced.push(c));
  const there = new CachedWebhookStore(inner, 60_000);
  return { inner, here, there, announced };
}

describe("cached webhook store", () => {
  it("serves lookups from the cache and drops them on its own changes at once", async () => {
    const { inner, here, announced } = await setup();
    await here.insert(hook("wh_1"));
    expect((await here.list("ws_1")).map((w) => w.id)).toEqual(["wh_1"]);
    await inner.insert(hook("wh_2")); // behind the cache's back
    expect((await here.list("ws_1")).map((w) => w.id)).toEqual(["wh_1"]);
    await here.update("ws_1", "wh_1", { status: "PAUSED" }, new Date(2));
    expect((await here.list("ws_1")).map((w) => [w.id, w.status])).toEqual([
      ["wh_1", "PAUSED"],
      ["wh_2", "ACTIVE"],
    ]);
    expect(announced).toContainEqual({ workspaceId: "ws_1", webhookId: "wh_1" });
  });

  it("drops what another process announced", async () => {
    const { here, there } = await setup();
    await here.insert(hook("wh_1"));
    expect((await there.findById("wh_1"))!.status).toBe("ACTIVE");
    expect(await there.list("ws_1")).toHaveLength(1);
    await here.update("ws_1", "wh_1", { status: "PAUSED" }, new Date(2));
    await here.insert(hook("wh_2"));
    // Until told, the other process answers from its cache…
    expect((await there.findById("wh_1"))!.status).toBe("ACTIVE");
    // …a fresh read does not…
    expect((await there.findById("wh_1", true))!.status).toBe("PAUSED");
    // …and an announcement drops the entries it names.
    there.forget({ workspaceId: "ws_1", webhookId: "wh_1" });
    expect(await there.list("ws_1")).toHaveLength(2);
  });

  it("a pause, whose workspace may not be known, drops every list", async () => {
    const { here } = await setup();
    await here.insert(hook("wh_1"));
    await here.list("ws_1");
    expect(await here.pause("wh_1", "failing", new Date(3))).toBe(true);
    expect((await here.list("ws_1"))[0]).toMatchObject({ status: "PAUSED", pausedReason: "failing" });
  });
});
