import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { DirectoryService, SuppressionReason } from "../../../gen/mailroom/directory/v1/directory_pb.js";
import { MailEventType, DeliverySource, type MailEvent } from "../../../gen/mailroom/events/v1/events_pb.js";
import { createLogger, loadConfig } from "../../../services/kit/src/index.js";
import { signLinkToken, signRecipientToken } from "../../../services/renderer/src/tokens.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "../deps.js";
import { registerTracking } from "./tracking.js";
import { registerUnsubscribe } from "./unsubscribe.js";

const SECRET = "tracking-test-secret-0123456789";

describe("tracking and unsubscribe endpoints", () => {
  let app: FastifyInstance;
  const events: MailEvent[] = [];
  const suppressed: { workspaceId: string; email: string; reason: SuppressionReason }[] = [];
  const recipient = { workspaceId: "ws_a", messageId: "m1@acme.test", email: "ann@example.test", contactId: "ctc_1", contentId: "cmp_1" };
  const rt = signRecipientToken(SECRET, recipient);
  const lt = signLinkToken(SECRET, { contentId: "cmp_1", index: 0, url: "https://acme.test/pricing?plan=pro#top" });

  beforeAll(async () => {
    const directory = createClient(DirectoryService, createRouterTransport(({ service }) => {
      service(DirectoryService, {
        addSuppression(req) { suppressed.push({ workspaceId: req.workspaceId, email: req.email, reason: req.reason }); return {}; },
        updateContact() { return {}; },
      });
    }));
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET },
      logger: createLogger("gateway-test", "silent"),
      clients: { directory } as unknown as ServiceClients,
      tracking: { publish: async (e) => { events.push(e); } },
      rateLimitPerMinute: 0,
      authCacheMs: 1000,
    };
    app = await buildGateway(deps, { api: [], public: [registerTracking, registerUnsubscribe] });
  });
  afterAll(async () => app?.close());

  it("serves the open pixel and records an opened event", async () => {
    const res = await app.inject({ method: "GET", url: `/t/o/${rt}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("image/gif");
    await new Promise((r) => setTimeout(r, 10));
    expect(events.at(-1)).toMatchObject({ type: MailEventType.OPENED, workspaceId: "ws_a", broadcastId: "cmp_1", source: DeliverySource.BROADCAST });
  });

  it("redirects a signed click to its original URL and records it", async () => {
    const res = await app.inject({ method: "GET", url: `/t/c/${lt}/${rt}` });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe("https://acme.test/pricing?plan=pro#top");
    await new Promise((r) => setTimeout(r, 10));
    expect(events.at(-1)).toMatchObject({ type: MailEventType.CLICKED, url: "https://acme.test/pricing?plan=pro#top" });
  });

  it("answers tampered or mismatched tokens with 404, never a redirect", async () => {
    const tampered = lt.slice(0, -2) + (lt.endsWith("A") ? "BB" : "AA");
    expect((await app.inject({ method: "GET", url: `/t/c/${tampered}/${rt}` })).statusCode).toBe(404);
    const forged = signLinkToken("another-secret-0123456789abc", { contentId: "cmp_1", index: 0, url: "https://evil.test" });
    expect((await app.inject({ method: "GET", url: `/t/c/${forged}/${rt}` })).statusCode).toBe(404);
    const otherContent = signLinkToken(SECRET, { contentId: "cmp_2", index: 0, url: "https://acme.test" });
    expect((await app.inject({ method: "GET", url: `/t/c/${otherContent}/${rt}` })).statusCode).toBe(404);
    expect((await app.inject({ method: "GET", url: `/t/o/garbage` })).statusCode).toBe(404);
    expect((await app.inject({ method: "POST", url: `/u/garbage` })).statusCode).toBe(404);
  });

  it("shows a confirmation page on GET without unsubscribing", async () => {
    const before = suppressed.length;
    const res = await app.inject({ method: "GET", url: `/u/${rt}` });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("ann@example.test");
    expect(res.body).toContain(`<form method="post"`);
    expect(suppressed.length).toBe(before);
  });

  it("unsubscribes at once on the RFC 8058 one-click POST", async () => {
    const res = await app.inject({
      method: "POST", url: `/u/${rt}`,
      headers: { "content-type": "application/x-www-form-urlencoded" }, payload: "List-Unsubscribe=One-Click",
    });
    expect(res.statusCode).toBe(200);
    expect(suppressed.at(-1)).toEqual({ workspaceId: "ws_a", email: "ann@example.test", reason: SuppressionReason.UNSUBSCRIBED });
    await new Promise((r) => setTimeout(r, 10));
    expect(events.at(-1)).toMatchObject({ type: MailEventType.UNSUBSCRIBED, recipient: "ann@example.test" });
  });
});
