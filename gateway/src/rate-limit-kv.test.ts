import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/transport-node";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { startNats, type NatsHandle } from "../../test/harness/nats.js";
import { connectNats } from "@mailroom/kit/jetstream.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "./app.js";
import type { ServiceClients } from "@mailroom/http/deps.js";
import { KvTokenBuckets } from "@mailroom/kit/kv-token-buckets.js";
import { Kvm } from "@nats-io/kv";

const accounts = createClient(AccountsService, memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      if (req.apiKey === "mr_test_shared_key") return { workspaceId: "ws_a", keyId: "key_shared", scopes: ["api_user"] };
      if (req.apiKey === "mr_test_other_key") return { workspaceId: "ws_a", keyId: "key_other", scopes: ["api_user"] };
      if (req.apiKey === "mr_test_third_key") return { workspaceId: "ws_a", keyId: "key_third", scopes: ["api_user"] };
      throw new ConnectError("unknown key", Code.Unauthenticated);
    },
  });
}));

describe("the per-key token bucket shared through NATS KV", () => {
  let nats: NatsHandle;
  const connections: NatsConnection[] = [];
  const gateways: FastifyInstance[] = [];

  beforeAll(async () => {
    nats = await startNats();
  }, 60_000);
  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.close()));
    await Promise.all(connections.map((c) => c.close()));
    await nats?.stop();
  });

  /** A gateway process of its own: its own NATS connection, the shared bucket. */
  async function gateway(perMinute: number, burst: number): Promise<FastifyInstance> {
    const nc = await connectNats(nats.url, `gateway-${gateways.length}`);
    connections.push(nc);
    const app = await buildGateway({
      config: loadConfig({}),
      logger: createLogger("gateway-kv-test", "silent"),
      clients: { accounts } as unknown as ServiceClients,
      rateLimitPerMinute: perMinute,
      rateLimitBurst: burst,
      rateLimitBuckets: await KvTokenBuckets.open(nc, { bucket: "test_rate_limit", idleMs: 60_000 }),
      authCacheMs: 60_000,
    }, { api: [(scope) => scope.get("/v1/ping", async () => ({ ok: true }))], public: [] });
    gateways.push(app);
    return app;
  }
  const ping = (app: FastifyInstance, key = "mr_test_shared_key") =>
    app.inject({ method: "GET", url: "/v1/ping", headers: { authorization: `Bearer ${key}` } });

  it("two gateways share one budget per key", async () => {
    // One token a minute after a burst of 10: no refill during the test.
    const [a, b] = [await gateway(1, 10), await gateway(1, 10)];
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await ping(i % 2 ? a : b)).statusCode);
    // Concurrent requests on both race for the last tokens: compare-and-set keeps the count exact.
    const raced = await Promise.all(Array.from({ length: 6 }, (_, i) => ping(i % 2 ? a : b)));
    statuses.push(...raced.map((r) => r.statusCode));
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(4);
    const limited = await ping(a);
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(limited.headers).toMatchObject({ "ratelimit-limit": "10", "ratelimit-remaining": "0" });
    expect(limited.json()).toMatchObject({ statusCode: 429, code: "rate_limited" });
    // Another key has its own bucket.
    expect((await ping(b, "mr_test_other_key")).statusCode).toBe(200);
  }, 30_000);

  it("never refuses a busy key for contention while its bucket holds tokens, and stays exact", async () => {
    // Requests of one key in one process share compare-and-sets instead of racing each other.
    const [roomy, tight] = [await gateway(600_000, 100_000), await gateway(1, 50)];
    const busy = await Promise.all(Array.from({ length: 300 }, () => ping(roomy, "mr_test_other_key")));
    expect(busy.filter((r) => r.statusCode !== 200).map((r) => r.statusCode)).toEqual([]);
    // A burst of 50 under 120 concurrent requests: exactly 50 through (the shared key's bucket
    // is already empty from the test above, so use a fresh bucket name through another key).
    const raced = await Promise.all(Array.from({ length: 120 }, () => ping(tight, "mr_test_third_key")));
    expect(raced.filter((r) => r.statusCode === 200)).toHaveLength(50);
    expect(raced.filter((r) => r.statusCode === 429)).toHaveLength(70);
  }, 60_000);
  it("takes tokens ahead for a busy key far from its limit, and never admits more than the budget", async () => {
    const nc = await connectNats(nats.url, "lease-test");
    connections.push(nc);
    // A clock that stands still: no refill, so the budget is exactly the burst.
    const buckets = await KvTokenBuckets.open(nc, { bucket: "test_rate_lease", idleMs: 60_000, now: () => 1_000_000 });
    const rate = 1_000; // tokens a second: up to 200 taken ahead
    let granted = 0;
    const take = async (n: number) => {
      for (let i = 0; i < n; i++) if ((await buckets.take("key_busy", rate, 2_000)).granted) granted++;
    };
    const kv = await new Kvm(nc).open("test_rate_lease");
    /** Compare-and-sets so far: the KV entry's revision counts them. */
    const writes = async () => {
      const keys: string[] = [];
      for await (const k of await kv.keys()) keys.push(k);
      return (await kv.get(keys[0]!))!.revision;
    };
    await take(1_000);
    expect(await writes()).toBeLessThanOrEqual(10);
    // The last quarter of the bucket is counted one by one: exactly the budget gets through.
    await take(1_100);
    expect(granted).toBe(2_000);
  });
});
