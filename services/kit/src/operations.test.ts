import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { connectClient, startConnectServer, type ConnectServer } from "./connect.js";
import { badRequest } from "./errors.js";
import { checkReadiness, processReadyChecks } from "./health.js";
import { natsServers } from "./jetstream.js";
import { createLogger } from "./logger.js";
import { counter, metricsAuthorized, metricsRegistry } from "./metrics.js";
import { instrumentStore } from "@mailroom/store/instrumented.js";
import { openMemoryStore } from "@mailroom/store/open.js";
import { sampleSum } from "../../../test/ops/prometheus.js";

describe("a Connect server's operations endpoints", () => {
  let server: ConnectServer;
  let guarded: ConnectServer;
  let queueReady = true;
  beforeAll(async () => {
    const routes = (router: Parameters<Parameters<typeof startConnectServer>[0]["routes"]>[0]) =>
      router.service(RendererService, {
        detectVariables(req) {
          if (!req.html) throw badRequest("empty_html", "html is empty");
          return { detected: [], unknown: [] };
        },
      });
    const logger = createLogger("kit-operations-test", "silent");
    server = await startConnectServer({ logger, routes, metricsToken: "", ready: [{ name: "queue", check: () => queueReady }] });
    guarded = await startConnectServer({ logger, routes, metricsToken: "s3cret" });
  });
  afterAll(async () => Promise.all([server.close(), guarded.close()]));

  it("counts RPCs by service, method and Connect code, and times them", async () => {
    const client = connectClient(RendererService, server.url);
    await client.detectVariables({ html: "x" });
    await client.detectVariables({ html: "" }).catch(() => undefined);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const labels = { service: "mailroom.renderer.v1.RendererService", method: "DetectVariables" };
    expect(sampleSum(text, "mailroom_rpc_server_handled_total", { ...labels, code: "ok" })).toBe(1);
    expect(sampleSum(text, "mailroom_rpc_server_handled_total", { ...labels, code: "invalid_argument" })).toBe(1);
    expect(sampleSum(text, "mailroom_rpc_server_duration_seconds_count", labels)).toBe(2);
    expect(text).toContain("# TYPE nodejs_eventloop_lag_seconds gauge");
  });

  it("asks for the bearer token when MAILROOM_METRICS_TOKEN is set", async () => {
    expect((await fetch(`${guarded.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: "Bearer wrong!" } })).status).toBe(401);
    expect((await fetch(`${guarded.url}/metrics`, { headers: { authorization: "Bearer s3cret" } })).status).toBe(200);
    expect(metricsAuthorized(undefined, undefined)).toBe(true);
  });

  it("is ready only while every check passes, and alive regardless", async () => {
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    queueReady = false;
    const res = await fetch(`${server.url}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ ok: false, checks: { queue: "not ready" } });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    queueReady = true;
  });
});

describe("readiness checks", () => {
  it("bound each check by a timeout and say why one failed", async () => {
    const report = await checkReadiness(
      [
        { name: "fine", check: () => undefined },
        { name: "stuck", check: () => new Promise(() => undefined) },
        { name: "broken", check: () => Promise.reject(new Error("refused")) },
      ],
      100,
    );
    expect(report).toEqual({ ok: false, checks: { fine: "ok", stuck: "no answer within 100 ms", broken: "refused" } });
  });
});

describe("instrumentStore", () => {
  it("times every collection operation by collection and op, and registers the store's readiness until it closes", async () => {
    const store = instrumentStore(openMemoryStore(), "opstest");
    const things = store.collection<{ _id: string; n: number }>("things");
    await things.insertOne({ _id: "a", n: 1 });
    await things.insertOne({ _id: "a", n: 2 }).catch(() => undefined); // duplicate key
    expect(await things.findOne({ _id: "a" })).toEqual({ _id: "a", n: 1 });
    expect(store.kind).toBe("embedded");
    const text = await metricsRegistry.metrics();
    expect(sampleSum(text, "mailroom_store_operation_duration_seconds_count", { collection: "things", op: "insertOne" })).toBe(2);
    expect(sampleSum(text, "mailroom_store_operation_duration_seconds_count", { collection: "things", op: "findOne" })).toBe(1);
    expect(sampleSum(text, "mailroom_store_operation_errors_total", { collection: "things", op: "insertOne" })).toBe(1);

    const mine = () => processReadyChecks().filter((c) => c.name === "store:opstest");
    expect((await checkReadiness(mine())).ok).toBe(true);
    await store.close();
    expect(mine()).toEqual([]);
  });
});

describe("metric helpers", () => {
  it("return the metric already declared under a name", () => {
    const a = counter("mailroom_test_things_total", "Things.", ["kind"]);
    expect(counter("mailroom_test_things_total", "Things.", ["kind"])).toBe(a);
  });
});

describe("MAILROOM_NATS_URL", () => {
  it("names one server or a cluster's members, comma-separated", () => {
    expect(natsServers("nats://127.0.0.1:4222")).toEqual(["nats://127.0.0.1:4222"]);
    expect(natsServers("nats://n1:4222, nats://n2:4222,nats://n3:4222,")).toEqual(["nats://n1:4222", "nats://n2:4222", "nats://n3:4222"]);
  });
});
