/**
 * The SMTP attempt span against real SMTP servers (smtp-server on loopback): the relay
 * transport behind the routing transport, and direct delivery trying two MX hosts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inSpan, startTracing, stopTracing } from "@mailroom/kit/tracing.js";
import { KIND, otlpEnv, startOtlpReceiver, withEnv, type OtlpReceiver, type ReceivedSpan } from "../../../../test/harness/otlp-receiver.js";
import { startSmtpSink, type SmtpSink } from "../../../../test/harness/smtp-sink.js";
import { SmtpFailure, type MailTransport, type OutgoingMail } from "../domain/ports.js";
import { silentLogger } from "../testing.js";
import { DirectTransport } from "./direct/transport.js";
import { loadDirectSettings } from "./direct/settings.js";
import { MessageBytes } from "./message-bytes.js";
import { RoutedTransport } from "./routes/routed-transport.js";
import { smtpAttempt } from "./smtp-span.js";
import { SmtpPoolTransport } from "./smtp-transport.js";

const RECIPIENT = "alice.recipient@example.test";

let serial = 0;
function mail(): OutgoingMail {
  serial += 1;
  return {
    lane: "transactional",
    envelope: { from: "bounces@acme.test", to: RECIPIENT },
    from: { name: "Acme", address: "news@acme.test" },
    to: RECIPIENT,
    subject: "Hello",
    html: "<p>Hello</p>",
    text: "Hello",
    messageId: `<m${serial}@acme.test>`,
    headers: [],
    meta: { deliveryId: `dlv_span_${serial}`, workspaceId: "ws_acme" },
  };
}

/** Runs `send` under a parent span (as delivery's job span is) and returns the parent's id. */
async function underJobSpan(send: () => Promise<unknown>): Promise<{ jobSpanId: string; outcome: unknown }> {
  let jobSpanId = "";
  const outcome = await inSpan("job", {}, async (span) => {
    jobSpanId = span!.spanContext().spanId;
    return send().catch((err: unknown) => err);
  });
  return { jobSpanId, outcome };
}

describe("with tracing off", () => {
  it("an SMTP attempt is the send itself: no span, no wrapper promise", () => {
    const sent = Promise.resolve({ code: 250 });
    expect(smtpAttempt({ host: "relay.test", port: 25 }, { deliveryId: "d", workspaceId: "w" }, () => sent)).toBe(sent);
  });
});

describe("the SMTP attempt span", () => {
  let receiver: OtlpReceiver;
  let sink: SmtpSink;
  let routed: MailTransport;
  let direct: MailTransport;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    sink = await startSmtpSink();
    expect(await withEnv(otlpEnv(receiver), () => startTracing("delivery-test"))).toBe(true);
    const relay = new SmtpPoolTransport(
      { url: sink.url, poolSize: 1, maxMessagesPerConnection: 100, timeoutMs: 5_000, tlsRejectUnauthorized: false, requireTls: false, ignoreTls: true },
      sink.url,
    );
    routed = new RoutedTransport([{ name: "primary", kind: "relay", target: sink.url, weight: 1, lanes: [], workspaces: [], transport: relay }], {
      downMs: 60_000,
      downMaxMs: 300_000,
      downAfter: 100,
    });
    // Two MX hosts at the sink's port: nothing listens on 127.0.0.4 (refused), the sink on 127.0.0.1.
    direct = new DirectTransport(loadDirectSettings({ MAILROOM_DELIVERY_MX_PORT: String(sink.port), MAILROOM_DELIVERY_EHLO_NAME: "mta.mailroom.test" }), {
      logger: silentLogger,
      mx: {
        targets: async () => [
          { host: "mx-down.example.test", address: "127.0.0.4", preference: 10 },
          { host: "mx-up.example.test", address: "127.0.0.1", preference: 20 },
        ],
      },
      policies: { policyFor: async () => undefined },
      bytes: new MessageBytes(0),
      timeoutMs: 5_000,
    });
  }, 30_000);

  afterAll(async () => {
    await routed?.close();
    await direct?.close();
    await stopTracing();
    await sink?.stop();
    await receiver?.close();
  });

  const attemptsOf = async (deliveryId: string, count = 1): Promise<ReceivedSpan[]> => {
    const mine = (all: ReceivedSpan[]) => all.filter((s) => s.name === "smtp send" && s.attributes["mailroom.delivery_id"] === deliveryId);
    return mine(await receiver.waitFor((all) => mine(all).length >= count));
  };

  it("a relay's 250: a CLIENT child of the job's span naming the relay, its port, the route and the delivery", async () => {
    sink.setBehaviour(() => ({ kind: "accept" }));
    const m = mail();
    const { jobSpanId, outcome } = await underJobSpan(() => routed.send(m));
    expect(outcome).toMatchObject({ code: 250, route: "primary" });
    const [span] = await attemptsOf(m.meta.deliveryId);
    expect(span!.kind).toBe(KIND.CLIENT);
    expect(span!.parentSpanId).toBe(jobSpanId);
    expect(span!.statusCode).toBe(0);
    expect(span!.attributes).toEqual({
      "server.address": "127.0.0.1",
      "server.port": sink.port,
      "smtp.reply_code": 250,
      "mailroom.route": "primary",
      "mailroom.delivery_id": m.meta.deliveryId,
      "mailroom.workspace_id": "ws_acme",
    });
  });

  it("a relay's 5xx after DATA: the code, and the span failed", async () => {
    sink.setBehaviour(() => ({ kind: "reject", code: 554, message: `rejected for ${RECIPIENT}` }));
    const m = mail();
    const { outcome } = await underJobSpan(() => routed.send(m));
    expect(outcome).toBeInstanceOf(SmtpFailure);
    expect((outcome as SmtpFailure).code).toBe(554);
    const [span] = await attemptsOf(m.meta.deliveryId);
    expect(span!.statusCode).toBe(2);
    expect(span!.attributes).toMatchObject({ "smtp.reply_code": 554, "server.address": "127.0.0.1", "mailroom.route": "primary" });
  });

  it("a recipient refused at RCPT TO: 550 and ERROR, the address nowhere in the span", async () => {
    sink.setBehaviour(() => ({ kind: "accept" }));
    sink.setRecipientFault((address) => ({ code: 550, message: `5.1.1 <${address}> unknown user` }));
    const m = mail();
    try {
      const { outcome } = await underJobSpan(() => routed.send(m));
      expect((outcome as SmtpFailure).code).toBe(550);
    } finally {
      sink.setRecipientFault(undefined);
    }
    const [span] = await attemptsOf(m.meta.deliveryId);
    expect(span!.statusCode).toBe(2);
    expect(span!.attributes["smtp.reply_code"]).toBe(550);
  });

  it("direct delivery: one span per MX host tried, the refused one failed without a code, the one that took it with 250", async () => {
    sink.setBehaviour(() => ({ kind: "accept" }));
    const m = mail();
    const { jobSpanId, outcome } = await underJobSpan(() => direct.send(m));
    expect(outcome).toMatchObject({ code: 250, route: "direct" });
    const spans = await attemptsOf(m.meta.deliveryId, 2);
    const [down, up] = [...spans].sort((a, b) => Number(a.startNs - b.startNs));
    expect(down!.attributes).toMatchObject({ "server.address": "mx-down.example.test", "network.peer.address": "127.0.0.4", "server.port": sink.port });
    expect(down!.attributes["smtp.reply_code"]).toBeUndefined();
    expect(down!.statusCode).toBe(2);
    expect(up!.attributes).toMatchObject({ "server.address": "mx-up.example.test", "network.peer.address": "127.0.0.1", "smtp.reply_code": 250 });
    expect(up!.statusCode).toBe(0);
    expect(spans.every((s) => s.parentSpanId === jobSpanId && s.kind === KIND.CLIENT)).toBe(true);
  });

  it("puts no envelope address in any span", async () => {
    const spans = await receiver.waitFor((all) => all.filter((s) => s.name === "smtp send").length >= 5);
    for (const span of spans) {
      const text = JSON.stringify([span.name, span.attributes]);
      expect(text).not.toMatch(/@|alice|acme\.test/);
    }
  });
});
