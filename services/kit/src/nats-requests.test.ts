import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { RequestOne } from "@nats-io/nats-core/internal";
import { startNats, type NatsHandle } from "../../../test/harness/nats.js";
import { connectNats } from "./jetstream.js";

describe("NATS requests with the shared cancel error", () => {
  let nats: NatsHandle;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNats();
    nc = await connectNats(nats.url, "requests-test", { noAsyncTraces: true });
    nc.subscribe("echo", { callback: (_err, msg) => void msg.respond(msg.data) });
    await nc.flush();
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it("ends answered requests with one shared cancel error instead of a new Error each", async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => nc.request("echo", `m${i}`, { timeout: 2_000 })));
    expect(answers.map((m) => m.string())).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
    // What cancel() hands the request's (settled) promise, seen through a stand-in request.
    const rejected: unknown[] = [];
    const left: unknown[] = [];
    const request = () => ({ mux: { cancel: (r: unknown) => left.push(r) }, deferred: { reject: (e: unknown) => rejected.push(e) } });
    const cancel = (RequestOne.prototype as unknown as { cancel(this: unknown, err?: Error): void }).cancel;
    const [a, b] = [request(), request()];
    cancel.call(a);
    cancel.call(b);
    expect(left).toEqual([a, b]);
    expect(rejected[0]).toBe(rejected[1]);
    expect((rejected[0] as Error).message).toBe("cancelled");
    const own = new Error("closing");
    cancel.call(request(), own);
    expect(rejected[2]).toBe(own);
  });

  it("still fails a request nobody answers, and one that times out", async () => {
    await expect(nc.request("nobody.listens", "x", { timeout: 1_000 })).rejects.toThrow(/no responders/i);
    nc.subscribe("slow", { callback: () => undefined });
    await nc.flush();
    await expect(nc.request("slow", "x", { timeout: 200 })).rejects.toThrow(/timeout/i);
    // The connection keeps working after both.
    expect((await nc.request("echo", "after", { timeout: 2_000 })).string()).toBe("after");
  });
});
