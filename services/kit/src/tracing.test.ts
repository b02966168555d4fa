import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { jetstream, jetstreamManager, RetentionPolicy } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { ConnectError, Code } from "@connectrpc/connect";
import { pino } from "pino";
import { startNats, type NatsHandle } from "../../../test/harness/nats.js";
import { KIND, otlpEnv, startOtlpReceiver, withEnv, type OtlpReceiver, type ReceivedSpan } from "../../../test/harness/otlp-receiver.js";
import { RendererService } from "@mailroom/proto/renderer/v1/renderer_pb.js";
import { connectClient, startConnectServer, type ConnectServer } from "./connect.js";
import { connectNats } from "./jetstream.js";
import { ack, consume } from "./jetstream/consume.js";
import { publishTraced } from "./jetstream/publish.js";
import { ensureStream } from "./jetstream/streams.js";
import { createLogger } from "./logger.js";
import { runWithRequestContext } from "./request-context.js";
import {
  currentTraceparent,
  inSpan,
  linksTo,
  loadTracingSettings,
  REQUEST_ID_ATTRIBUTE,
  startTracing,
  stopTracing,
  tracingOn,
} from "./tracing.js";

const silent = pino({ level: "silent" });

/** Kit's logger writing its lines, parsed, into `lines`. */
const capturingLogger = (lines: Record<string, unknown>[]) =>
  createLogger(
    "kit-test",
    "info",
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(JSON.parse(String(chunk)));
        cb();
      },
    }),
  );

describe("tracing settings (the standard OTEL_* variables)", () => {
  it.each([
    [{}, [], "http/protobuf"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }, ["otlp"], "http/protobuf"],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" }, ["otlp"], "http/json"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc", OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json" }, ["otlp"], "http/json"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, [], "http/protobuf"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" }, [], "http/protobuf"],
    [{ OTEL_TRACES_EXPORTER: "console" }, ["console"], "http/protobuf"],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_PROTOCOL: "" }, [], "http/protobuf"],
  ])("%j → exporters %j over %s", (env, exporters, protocol) => {
    const settings = loadTracingSettings(env);
    expect(settings.exporters).toEqual(exporters);
    expect(settings.protocol).toBe(protocol);
  });

  it.each([
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported/],
    [{ OTEL_TRACES_EXPORTER: "zipkin" }, /OTEL_TRACES_EXPORTER: "zipkin" is not one of otlp, console, none/],
    [{ OTEL_TRACES_EXPORTER: "otlp" }, /OTEL_TRACES_EXPORTER: otlp needs OTEL_EXPORTER_OTLP_ENDPOINT/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" }, /OTEL_EXPORTER_OTLP_ENDPOINT/],
    [{ MAILROOM_TRACE_STORE_THRESHOLD_MS: "-1" }, /MAILROOM_TRACE_STORE_THRESHOLD_MS/],
  ])("%j is refused at start, naming the variable", (env, message) => {
    expect(() => loadTracingSettings(env)).toThrow(message);
  });
});

describe("with no exporter configured, tracing is off", () => {
  it("loads nothing and the helpers call straight through", async () => {
    expect(await withEnv({}, () => startTracing("test"))).toBe(false);
    expect(tracingOn()).toBe(false);
    let seen: unknown = "not called";
    expect(await inSpan("x", {}, async (span) => ((seen = span), 7))).toBe(7);
    expect(seen).toBeUndefined();
    expect(currentTraceparent()).toBe("");
    // A publish is js.publish with the caller's options as given: no headers made.
    const calls: unknown[][] = [];
    const js = { publish: async (...args: unknown[]) => (calls.push(args), { seq: 1 }) };
    const options = { msgID: "m1" };
    await publishTraced(js as never, "mail.delivery.transactional", new Uint8Array([1]), options);
    expect(calls[0]![2]).toBe(options);
    expect(options).toEqual({ msgID: "m1" });
  });
});

describe("links to stored trace context", () => {
  it("reads a traceparent and refuses malformed or all-zero ones", () => {
    const [link] = linksTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", { "mailroom.link": "scheduled" });
    expect(link!.context).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1 });
    expect(link!.attributes).toEqual({ "mailroom.link": "scheduled" });
    expect(linksTo("")).toEqual([]);
    expect(linksTo(undefined)).toEqual([]);
    expect(linksTo("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331")).toEqual([]);
    expect(linksTo("00-00000000000000000000000000000000-b7ad6b7169203331-01")).toEqual([]);
  });
});

describe("with an OTLP/HTTP endpoint, one trace crosses Connect calls and JetStream", () => {
  let receiver: OtlpReceiver;
  let nats: NatsHandle;
  let nc: NatsConnection;
  let server: ConnectServer;
  const logLines: Record<string, unknown>[] = [];

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    expect(await withEnv(otlpEnv(receiver), () => startTracing("kit-test"))).toBe(true);
    nats = await startNats();
    nc = await connectNats(nats.url, "tracing-test");
    const logger = capturingLogger(logLines);
    server = await startConnectServer({
      logger: silent,
      routes: (router) =>
        router.service(RendererService, {
          // The handler logs and publishes: both must carry the RPC's trace.
          detectVariables: async (req) => {
            logger.info("detecting");
            if (req.html === "fail") throw new ConnectError("boom", Code.Internal);
            if (req.html === "refuse") throw new ConnectError("bad input", Code.InvalidArgument);
            await publishTraced(jetstream(nc), "trace.test.job", new TextEncoder().encode(currentTraceparent()), { msgID: `job-${req.subject}` });
            return { detected: [currentTraceparent()] };
          },
        }),
    });
    await ensureStream(await jetstreamManager(nc), { name: "TRACE_TEST", subjects: ["trace.test.>"], retention: RetentionPolicy.Workqueue });
  }, 30_000);

  afterAll(async () => {
    await stopTracing();
    await server?.close();
    await nc?.close();
    await nats?.stop();
    await receiver?.close();
  });

  afterEach(() => {
    logLines.length = 0;
  });

  const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);

  it("client span → server span → publish → consumer span, all one trace, request id on each", async () => {
    const handled: { traceparent: string; payload: string }[] = [];
    const loop = await consume(
      nc,
      { stream: "TRACE_TEST", durable: "trace_worker", filterSubjects: ["trace.test.job"] },
      (data) => new TextDecoder().decode(data),
      async (payload) => {
        handled.push({ traceparent: currentTraceparent(), payload });
        return ack();
      },
      { logger: silent },
    );
    try {
      const client = connectClient(RendererService, server.url);
      const res = await runWithRequestContext("req-trace-1", () => inSpan("caller", {}, () => client.detectVariables({ html: "<p>hi</p>", subject: "one" })));
      const spans = await receiver.waitFor((all) => all.some((s) => s.name === "process trace_worker"));

      const caller = byName(spans, "caller")[0]!;
      const clientSpan = spans.find((s) => s.name === "mailroom.renderer.v1.RendererService/DetectVariables" && s.kind === KIND.CLIENT)!;
      const serverSpan = spans.find((s) => s.name === "mailroom.renderer.v1.RendererService/DetectVariables" && s.kind === KIND.SERVER)!;
      const publish = byName(spans, "publish trace.test")[0]!;
      const processing = byName(spans, "process trace_worker")[0]!;
      for (const s of [clientSpan, serverSpan, publish, processing]) expect(s.traceId).toBe(caller.traceId);
      expect(clientSpan.parentSpanId).toBe(caller.spanId);
      expect(serverSpan.parentSpanId).toBe(clientSpan.spanId);
      expect(publish.parentSpanId).toBe(serverSpan.spanId);
      expect(processing.parentSpanId).toBe(publish.spanId);
      expect(publish.kind).toBe(KIND.PRODUCER);
      expect(processing.kind).toBe(KIND.CONSUMER);
      expect(serverSpan.attributes).toMatchObject({ "rpc.system": "connect_rpc", "rpc.method": "DetectVariables", [REQUEST_ID_ATTRIBUTE]: "req-trace-1" });
      expect(clientSpan.attributes[REQUEST_ID_ATTRIBUTE]).toBe("req-trace-1");
      expect(publish.attributes).toMatchObject({ "messaging.system": "nats", "messaging.destination.name": "trace.test.job", [REQUEST_ID_ATTRIBUTE]: "req-trace-1" });
      expect(processing.attributes).toMatchObject({ "messaging.consumer.group.name": "trace_worker", "mailroom.outcome": "ack", [REQUEST_ID_ATTRIBUTE]: "req-trace-1" });
      expect(processing.service).toBe("mailroom-kit-test");

      // The handler saw its own span as the active one, and the server handler its own.
      expect(res.detected[0]).toBe(`00-${caller.traceId}-${serverSpan.spanId}-01`);
      expect(handled[0]!.traceparent).toBe(`00-${caller.traceId}-${processing.spanId}-01`);
      expect(handled[0]!.payload).toBe(res.detected[0]);

      // The handler's log line names the request and the span it ran in.
      const line = logLines.find((l) => l.msg === "detecting")!;
      expect(line).toMatchObject({ requestId: "req-trace-1", trace_id: caller.traceId, span_id: serverSpan.spanId });
    } finally {
      await loop.stop();
    }
  }, 40_000);

  it("an incoming traceparent continues the caller's trace; failures mark the span by whose they are", async () => {
    const client = connectClient(RendererService, server.url);
    await expect(client.detectVariables({ html: "fail" })).rejects.toThrow(/boom/);
    await expect(client.detectVariables({ html: "refuse" })).rejects.toThrow(/bad input/);
    const spans = await receiver.waitFor((all) => all.filter((s) => s.kind === KIND.SERVER && s.attributes["rpc.connect_rpc.error_code"]).length >= 2);
    const failed = spans.filter((s) => s.kind === KIND.SERVER && s.attributes["rpc.connect_rpc.error_code"]);
    const internal = failed.find((s) => s.attributes["rpc.connect_rpc.error_code"] === "internal")!;
    const refused = failed.find((s) => s.attributes["rpc.connect_rpc.error_code"] === "invalid_argument")!;
    // OTLP status codes: 2 = ERROR, 0 = UNSET. A refusal is the caller's mistake, not the server's.
    expect(internal.statusCode).toBe(2);
    expect(refused.statusCode).toBe(0);
    // No caller span here: the client span is the trace's root and the server continues it.
    const clientOfInternal = spans.find((s) => s.kind === KIND.CLIENT && s.spanId === internal.parentSpanId)!;
    expect(clientOfInternal.parentSpanId).toBeUndefined();
    expect(clientOfInternal.traceId).toBe(internal.traceId);
  }, 30_000);

  it("outside any span a log line has no trace fields", async () => {
    const logger = capturingLogger(logLines);
    logger.info("idle");
    await inSpan("work", {}, async () => logger.info("busy"));
    expect(logLines.find((l) => l.msg === "idle")).not.toHaveProperty("trace_id");
    expect(logLines.find((l) => l.msg === "busy")).toHaveProperty("trace_id");
  });

});

describe("the default protocol is OTLP/HTTP protobuf", () => {
  it("exports application/x-protobuf to <endpoint>/v1/traces", async () => {
    const receiver = await startOtlpReceiver();
    try {
      expect(await withEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }, () => startTracing("kit-proto"))).toBe(true);
      await inSpan("protobuf span", {}, async () => undefined);
      await stopTracing(); // flushes
      expect(receiver.requests.some((r) => r.path === "/v1/traces" && r.contentType === "application/x-protobuf" && r.bytes > 0)).toBe(true);
    } finally {
      await stopTracing();
      await receiver.close();
    }
  });
});
