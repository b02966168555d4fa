import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSystem, type TestSystem } from "../harness/system.js";
import { KIND, otlpEnv, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from "../harness/otlp-receiver.js";

const KEY = "mr_test_traces_key_1";
const RECIPIENT = "ann.traced@example.test";
const SUBJECT = "Your receipt 4711";

/**
 * Issue 33: one POST /v1/emails is one trace, from the gateway through the email service, the
 * JetStream publish and delivery's handling to the SMTP attempt, as an OTLP/HTTP endpoint
 * (a collector, Jaeger, Tempo) receives it from the real processes.
 */
describe("traces across every hop", () => {
  let receiver: OtlpReceiver;
  let sys: TestSystem;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    sys = await startSystem({
      // Debug: delivery's "delivery job handled" line is the one the log test reads.
      env: { ...otlpEnv(receiver), MAILROOM_LOG_LEVEL: "debug" },
      bootstrap: {
        workspaces: [{
          id: "ws_traces", name: "Traces", timezone: "UTC",
          apiKeys: [{ key: KEY, scopes: ["api_user"] }],
          verifiedEmails: [], verifiedDomains: ["acme.test"], members: [],
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          monthlyLimit: 1000, sendingAccountNew: false,
        }],
      },
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
    });
  }, 120_000);
  afterAll(async () => {
    await sys?.stop();
    await receiver?.close();
  });

  /** Every span of the trace, with a readable tree for failure messages. */
  const describeTrace = (spans: ReceivedSpan[]) => spans.map((s) => `  ${s.service} ${s.name} ${s.spanId}<-${s.parentSpanId ?? "root"}`).join("\n");

  it("one POST /v1/emails yields one trace: gateway → email → JetStream publish → delivery → SMTP attempt", async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme <team@acme.test>", to: RECIPIENT, subject: SUBJECT, html: "<p>Thanks for your order.</p>" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const requestId = res.headers.get("x-request-id")!;
    const emailId = res.body.email.id as string;
    await sys.sink!.waitFor(1, 20_000);

    // The gateway's span for this request is the trace's root.
    const spans = await receiver.waitFor((all) => {
      const root = all.find((s) => s.service === "mailroom-gateway" && s.kind === KIND.SERVER && s.attributes["mailroom.request_id"] === requestId);
      return !!root && all.some((s) => s.traceId === root.traceId && s.name === "smtp send");
    }, 30_000);
    const root = spans.find((s) => s.service === "mailroom-gateway" && s.kind === KIND.SERVER && s.attributes["mailroom.request_id"] === requestId)!;
    const trace = spans.filter((s) => s.traceId === root.traceId);
    const tree = describeTrace(trace);

    expect(root.parentSpanId, tree).toBeUndefined();
    expect(root.name).toBe("POST /v1/emails");
    expect(root.attributes).toMatchObject({ "http.request.method": "POST", "http.route": "/v1/emails", "http.response.status_code": 200 });

    const byId = new Map(trace.map((s) => [s.spanId, s]));
    /** The chain of spans from `span` up to the root. */
    const ancestry = (span: ReceivedSpan) => {
      const chain: ReceivedSpan[] = [];
      for (let s: ReceivedSpan | undefined = span; s; s = s.parentSpanId ? byId.get(s.parentSpanId) : undefined) chain.push(s);
      return chain;
    };
    const find = (what: string, match: (s: ReceivedSpan) => boolean) => {
      const span = trace.find(match);
      expect(span, `${what} not in the trace:\n${tree}`).toBeDefined();
      // Every span hangs off the request's root: no orphan whose parent never arrived.
      expect(ancestry(span!).at(-1), `${what} is not under the root:\n${tree}`).toBe(root);
      return span!;
    };

    const sendEmail = find("the email service's SendEmail", (s) => s.service === "mailroom-email" && s.kind === KIND.SERVER && s.name.endsWith("/SendEmail"));
    const publish = find("the delivery job's publish", (s) => s.kind === KIND.PRODUCER && s.attributes["messaging.destination.name"] === "mail.delivery.transactional");
    const handling = find("delivery's handling", (s) => s.service === "mailroom-delivery" && s.kind === KIND.CONSUMER);
    const smtp = find("the SMTP attempt", (s) => s.name === "smtp send");

    expect(ancestry(sendEmail).some((s) => s.service === "mailroom-gateway" && s.kind === KIND.CLIENT)).toBe(true);
    expect(ancestry(publish)).toContain(sendEmail);
    expect(handling.parentSpanId).toBe(publish.spanId);
    expect(ancestry(smtp)).toContain(handling);
    expect(smtp.service).toBe("mailroom-delivery");
    expect(smtp.kind).toBe(KIND.CLIENT);
    expect(smtp.attributes).toMatchObject({ "server.address": "127.0.0.1", "smtp.reply_code": 250 });
    expect(smtp.statusCode).not.toBe(2);

    // The request id is on the spans of every hop: gateway, email, JetStream, delivery.
    for (const span of [root, sendEmail, publish, handling, smtp]) expect(span.attributes["mailroom.request_id"], span.name).toBe(requestId);
    expect(trace.some((s) => Object.values(s.attributes).includes(emailId))).toBe(true);

    // Spans name things by id: no address, subject, content or key anywhere in a trace.
    const everything = JSON.stringify(spans, (_k, v) => (typeof v === "bigint" ? String(v) : v));
    for (const secret of [RECIPIENT, "team@acme.test", SUBJECT, "Thanks for your order", KEY]) expect(everything).not.toContain(secret);
  }, 90_000);

  it("a log line written while delivering names the trace next to the request id", async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      body: { from: "Acme <team@acme.test>", to: "bo.traced@example.test", subject: "Second", html: "<p>Again.</p>" },
    });
    expect(res.status).toBe(200);
    const requestId = res.headers.get("x-request-id")!;
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === "smtp send" && s.attributes["mailroom.request_id"] === requestId), 30_000);
    const traceId = spans.find((s) => s.attributes["mailroom.request_id"] === requestId)!.traceId;
    for (const unit of ["email", "delivery"] as const) {
      const lines = (await sys.log(unit)).split("\n").filter((l) => l.includes(requestId));
      expect(lines.length, `the ${unit} unit logged nothing for the request`).toBeGreaterThan(0);
      expect(lines.some((l) => (JSON.parse(l) as { trace_id?: string }).trace_id === traceId), lines.join("\n")).toBe(true);
    }
  }, 60_000);
});
