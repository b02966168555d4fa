import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import { StoreDeliveries } from "./store.js";

const fresh = async () => {
  const d = new StoreDeliveries(openMemoryStore());
  await d.init();
  return d;
};
const sent = { type: "sent" as const, detail: "250 ok", smtpCode: 250, attempt: 1 };

describe("StoreDeliveries", () => {
  it("lets exactly one of many concurrent claims of a delivery win, even inside one batch", async () => {
    const d = await fresh();
    const now = new Date();
    const stale = new Date(now.getTime() - 60_000);
    const results = await Promise.all(
      ["w1", "w2", "w3", "w1", "w2"].map((w) => d.claim("dlv_x", "ws", w, now, stale)),
    );
    expect(results.filter((r) => r.claimed)).toHaveLength(1);
    // Other deliveries in the same batch are unaffected by the duplicate.
    const others = await Promise.all(["a", "b", "c"].map((id) => d.claim(id, "ws", "w1", now, stale)));
    expect(others.every((r) => r.claimed)).toBe(true);
  });

  it("never hands out a delivery that ended, and takes over only stale claims", async () => {
    const d = await fresh();
    const t0 = Date.now();
    expect(await d.claim("dlv_1", "ws", "w1", new Date(t0), new Date(t0 - 30_000))).toEqual({ claimed: true, attempts: 1 });
    const busy = await d.claim("dlv_1", "ws", "w2", new Date(t0 + 1_000), new Date(t0 - 29_000));
    expect(busy).toMatchObject({ claimed: false, record: { state: "sending", claimedBy: "w1" } });
    expect(await d.claim("dlv_1", "ws", "w2", new Date(t0 + 31_000), new Date(t0 + 1_000))).toEqual({ claimed: true, attempts: 2 });
    await d.markFinal("dlv_1", "ws", { ...sent, attempt: 2 }, new Date());
    const after = await d.claim("dlv_1", "ws", "w3", new Date(t0 + 99_000), new Date(t0 + 98_000));
    expect(after).toMatchObject({ claimed: false, record: { state: "sent", attempts: 2, outcome: { attempt: 2 } } });
    expect(await d.get("dlv_1")).toMatchObject({ state: "sent" });
  });

  it("makes a deferred delivery claimable again, only by the claim holder's deferral", async () => {
    const d = await fresh();
    const now = new Date();
    await d.claim("dlv_2", "ws", "w1", now, new Date(0));
    const deferred = { type: "deferred" as const, detail: "451", smtpCode: 451, attempt: 1 };
    await d.markDeferred("dlv_2", "w2", deferred, now); // not the holder: ignored
    expect((await d.get("dlv_2"))?.state).toBe("sending");
    await d.markDeferred("dlv_2", "w1", deferred, now);
    expect(await d.claim("dlv_2", "ws", "w2", now, new Date(0))).toEqual({ claimed: true, attempts: 2 });
  });

  it("keeps sent as the final word and blocks jobs failed before any SMTP transaction", async () => {
    const d = await fresh();
    const now = new Date();
    await d.claim("dlv_3", "ws", "w1", now, new Date(0));
    await d.markFinal("dlv_3", "ws", { type: "failed", detail: "x", smtpCode: 0, attempt: 1 }, now);
    await d.markFinal("dlv_3", "ws", sent, now);
    expect((await d.get("dlv_3"))?.state).toBe("sent");
    await d.markFinal("dlv_3", "ws", { type: "bounced", detail: "550", smtpCode: 550, attempt: 1 }, now);
    expect((await d.get("dlv_3"))?.state).toBe("sent");

    await d.markFinal("dlv_4", "ws", { type: "failed", detail: "content gone", smtpCode: 0, attempt: 0 }, now);
    expect(await d.claim("dlv_4", "ws", "w1", now, new Date(0))).toMatchObject({ claimed: false, record: { state: "failed" } });
  });
});
