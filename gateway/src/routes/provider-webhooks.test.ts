import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { InboundService } from "@mailroom/proto/inbound/v1/inbound_pb.js";
import { ProviderWebhooks } from "../../../services/inbound/src/adapters/providers/index.js";
import { readFileSync } from "node:fs";
import { FixedSigningCertificate } from "../../../services/inbound/src/adapters/providers/sns.js";
import { inboundRoutes } from "../../../services/inbound/src/routes.js";
import { loadInboundSettings } from "../../../services/inbound/src/settings.js";
import {
  MAILGUN_TEST_SIGNING_KEY, SENDGRID_TEST_PUBLIC_KEY, SES_TEST_TOPIC, SNS_TEST_CERT_FILE,
  basicAuth, mailgunSigned, providerFixture, sendgridHeaders, sentDelivery, snsMessage, testInbound,
} from "../../../services/inbound/src/testing.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { documentedCalls, type DocumentedCalls } from "./documented-calls.testing.js";
import { PROVIDER_WEBHOOK_BODY_LIMIT_BYTES } from "./provider-webhooks.js";

/**
 * POST /webhooks/{provider} over the inbound unit's webhook reader in memory: no API key, the
 * body forwarded as the bytes received (the providers' signatures cover them), the inbound
 * unit's refusals answered 400/401/404 with the error envelope, every documented response
 * driven and checked against the OpenAPI document.
 */

const DELIVERY = sentDelivery();
const { deliveryId, messageId } = DELIVERY;
const POSTMARK_AUTH = { authorization: basicAuth("mailroom", "s3cret-pass") };

async function gateway(env: Record<string, string>) {
  const t = testInbound();
  await t.sent.remember(DELIVERY);
  const webhooks = new ProviderWebhooks({
    settings: loadInboundSettings(env).providers,
    certificates: new FixedSigningCertificate(readFileSync(SNS_TEST_CERT_FILE, "utf8")),
    confirmer: { confirm: async () => {} },
    now: () => new Date(),
  });
  // The gateway's log lines, parsed.
  const logged: Array<Record<string, unknown>> = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (logged.push(...String(chunk).trim().split("\n").map((l) => JSON.parse(l))), done()) });
  const deps: GatewayDeps = {
    config: { ...loadConfig({}), secret: "provider-webhooks-gateway-secret-1" },
    logger: createLogger("gateway-provider-webhooks-test", "info", sink),
    clients: { inbound: createClient(InboundService, memoryTransport(inboundRoutes(webhooks, t.inbound))) } as unknown as ServiceClients,
    rateLimitPerMinute: 0,
    authCacheMs: 60_000,
  };
  const app = await buildGateway(deps);
  return { app, t, logged, api: await documentedCalls(app, {}) };
}

describe("gateway /webhooks/{provider}", () => {
  let configured: { app: FastifyInstance; t: ReturnType<typeof testInbound>; logged: Array<Record<string, unknown>>; api: DocumentedCalls };
  let bare: typeof configured;

  beforeAll(async () => {
    configured = await gateway({
      MAILROOM_SES_TOPIC_ARNS: SES_TEST_TOPIC,
      MAILROOM_POSTMARK_WEBHOOK_AUTH: "mailroom:s3cret-pass",
      MAILROOM_SENDGRID_WEBHOOK_PUBLIC_KEY: SENDGRID_TEST_PUBLIC_KEY,
      MAILROOM_MAILGUN_WEBHOOK_SIGNING_KEY: MAILGUN_TEST_SIGNING_KEY,
    });
    bare = await gateway({});
  });
  afterAll(async () => {
    await configured?.app.close();
    await bare?.app.close();
  });

  it("takes SNS's text/plain body as bytes and records the bounce it reports", async () => {
    const res = await configured.app.inject({
      method: "POST", url: "/webhooks/ses",
      headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": "Notification" },
      payload: snsMessage(providerFixture("ses-bounce.json", { deliveryId, messageId })),
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ accepted: 1, ignored: 0, subscriptionConfirmed: false });
    expect(configured.t.suppressions.suppressed).toContainEqual(expect.objectContaining({ email: "ann@example.test", reason: "hard_bounce" }));
  });

  it("answers every provider as documented: 200 taken, 400 malformed, 401 forged, 404 not configured", async () => {
    const { api } = configured;
    const sesBody = snsMessage(providerFixture("ses-complaint.json", { messageId }));
    expect((await api.call("POST /webhooks/ses", "/webhooks/ses", sesBody)).data).toMatchObject({ accepted: 1 });
    expect((await api.call("POST /webhooks/ses", "/webhooks/ses", "{not json")).data).toMatchObject({ code: "invalid_provider_webhook" });
    const forged = await api.call("POST /webhooks/ses", "/webhooks/ses", sesBody.replace("abuse", "not-spam"));
    expect(forged.statusCode).toBe(401);
    expect(forged.data).toMatchObject({ code: "provider_webhook_unauthenticated", docsUrl: expect.stringMatching(/\/docs\/errors\/provider_webhook_unauthenticated$/) });

    const postmark = providerFixture("postmark-delivery.json", { deliveryId });
    expect((await api.call("POST /webhooks/postmark", "/webhooks/postmark", postmark, POSTMARK_AUTH)).data).toMatchObject({ accepted: 1 });
    expect((await api.call("POST /webhooks/postmark", "/webhooks/postmark", "[", POSTMARK_AUTH)).statusCode).toBe(400);
    expect((await api.call("POST /webhooks/postmark", "/webhooks/postmark", postmark, { authorization: basicAuth("mailroom", "nope") })).statusCode).toBe(401);

    const batch = providerFixture("sendgrid-events.json", { deliveryId, messageId });
    expect((await api.call("POST /webhooks/sendgrid", "/webhooks/sendgrid", batch, sendgridHeaders(batch))).data).toMatchObject({ accepted: 4, ignored: 1 });
    expect((await api.call("POST /webhooks/sendgrid", "/webhooks/sendgrid", "{}", sendgridHeaders("{}"))).statusCode).toBe(400);
    expect((await api.call("POST /webhooks/sendgrid", "/webhooks/sendgrid", batch, sendgridHeaders(batch.replace("spamreport", "open")))).statusCode).toBe(401);

    const mailgun = mailgunSigned(providerFixture("mailgun-delivered.json", { messageId }));
    expect((await api.call("POST /webhooks/mailgun", "/webhooks/mailgun", mailgun)).data).toMatchObject({ accepted: 1 });
    expect((await api.call("POST /webhooks/mailgun", "/webhooks/mailgun", "[]")).statusCode).toBe(400);
    expect((await api.call("POST /webhooks/mailgun", "/webhooks/mailgun", mailgunSigned(providerFixture("mailgun-delivered.json"), "key-other"))).statusCode).toBe(401);

    for (const provider of ["ses", "postmark", "sendgrid", "mailgun"]) {
      const res = await bare.api.call(`POST /webhooks/${provider}`, `/webhooks/${provider}`, "{}");
      expect(res.statusCode, provider).toBe(404);
      expect(res.data).toMatchObject({ code: "provider_webhook_not_configured" });
    }
    const ours = (p: string) => p.startsWith("/webhooks/");
    const undriven = new Set(bare.api.undriven(ours));
    expect(api.undriven(ours).filter((r) => undriven.has(r))).toEqual([]);
  });

  it("answers 503 for a fresh report about a message the inbound unit has not recorded yet (the provider retries)", async () => {
    // The inbound test clock reads 2026-11-22T12:00:00Z: a minute-old bounce naming a delivery it never saw.
    const batch = JSON.stringify([{ email: "zoe@example.test", timestamp: Date.parse("2026-11-22T11:59:00Z") / 1000, event: "bounce", type: "bounce", reason: "550 no such user", mailroom_delivery_id: "trs_not_yet" }]);
    const res = await configured.api.call("POST /webhooks/sendgrid", "/webhooks/sendgrid", batch, sendgridHeaders(batch));
    expect(res.statusCode).toBe(503);
    expect(res.data).toMatchObject({ code: "service_unavailable", message: expect.stringMatching(/trs_not_yet/) });
    // An expected answer (the provider retries): logged at info, without a stack; no error line.
    const lines = configured.logged.filter((l) => JSON.stringify(l).includes("trs_not_yet"));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => (l.level as number) < 40 && !JSON.stringify(l).includes("stack"))).toBe(true);
  });

  it("refuses a body over the limit with 413 and needs no API key", async () => {
    const res = await configured.api.call("POST /webhooks/mailgun", "/webhooks/mailgun", "x".repeat(PROVIDER_WEBHOOK_BODY_LIMIT_BYTES + 1));
    expect(res.statusCode).toBe(413);
    expect(res.data).toMatchObject({ code: "payload_too_large", message: "Request body too large: a provider webhook takes at most 1 MB (1,048,576 bytes)" });
    expect((await configured.app.inject({ method: "POST", url: "/webhooks/azure", payload: "{}" })).statusCode).toBe(404);
  });
});
