import { memoryTransport } from "@mailroom/kit/connect.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient} from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { ContactService, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { MailEventType, DeliverySource, type MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { signLinkToken, signRecipientToken, trackingUrls } from "@mailroom/content/tokens.js";
import { signToken } from "@mailroom/kit/tokens.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { registerTracking } from "./tracking.js";
import { registerUnsubscribe } from "./unsubscribe.js";

const SECRET = "tracking-test-secret-0123456789";
const PREVIOUS_SECRET = "tracking-old-secret-0123456789";

describe("tracking and unsubscribe endpoints", () => {
  let app: FastifyInstance;
  const events: MailEvent[] = [];
  const suppressed: { workspaceId: string; email: string; reason: SuppressionReason }[] = [];
  // A broadcast's own message: its Message-ID is `<contact>.<broadcast>@…` (a test send's is not).
  const recipient = { workspaceId: "ws_a", messageId: "ctc_1.cmp_1@acme.test", email: "ann@example.test", contactId: "ctc_1", contentId: "cmp_1" };
  const rt = signRecipientToken(SECRET, recipient);
  const lt = signLinkToken(SECRET, { contentId: "cmp_1", index: 0, url: "https://acme.test/pricing?plan=pro#top" });

  beforeAll(async () => {
    const contacts = createClient(ContactService, memoryTransport(({ service }) => {
      service(ContactService, {
        addSuppression(req) { suppressed.push({ workspaceId: req.workspaceId, email: req.email, reason: req.reason }); return {}; },
        updateContact() { return {}; },
      });
    }));
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET, previousSecret: PREVIOUS_SECRET },
      logger: createLogger("gateway-test", "silent"),
      clients: { contacts } as unknown as ServiceClients,
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

  it("records a broadcast test send's open as a test event (counted by no broadcast, no webhook)", async () => {
    const testSend = signRecipientToken(SECRET, { ...recipient, messageId: "01jd8v6ka0b1c2d3e4f5g6h7j8@acme.test" });
    expect((await app.inject({ method: "GET", url: `/t/o/${testSend}` })).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 10));
    expect(events.at(-1)).toMatchObject({ type: MailEventType.OPENED, broadcastId: "cmp_1", source: DeliverySource.BROADCAST_TEST });
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

  it("answers truncated, bit-flipped and other-workspace tokens with 404 on every route", async () => {
    const flipped = (token: string, at: number) => {
      const raw = Buffer.from(token, "base64url");
      raw[at] ^= 0x20;
      return raw.toString("base64url");
    };
    // The same link of another workspace's message: its own content, so not a pair with rt.
    const otherWorkspace = signRecipientToken(SECRET, { ...recipient, workspaceId: "ws_b", contentId: "cmp_b" });
    // Byte 30 is inside the encrypted fields of these (short, 48-byte) tokens.
    const bad = [rt.slice(0, -1), rt.slice(0, 40), flipped(rt, 5), flipped(rt, 30), flipped(rt, -1 + Buffer.from(rt, "base64url").length), `${rt}x`];
    expect(new Set([rt, ...bad]).size, "every bad token differs from rt").toBe(bad.length + 1);
    for (const token of bad) {
      for (const [method, url] of [["GET", `/t/o/${token}`], ["GET", `/t/c/${lt}/${token}`], ["GET", `/u/${token}`], ["POST", `/u/${token}`]] as const) {
        const res = await app.inject({ method, url });
        expect(res.statusCode, `${method} ${url}`).toBe(404);
        expect(res.headers.location).toBeUndefined();
      }
    }
    for (const link of [lt.slice(0, -3), flipped(lt, 20), flipped(lt, 1)]) {
      const res = await app.inject({ method: "GET", url: `/t/c/${link}/${rt}` });
      expect(res.statusCode).toBe(404);
      expect(res.headers.location).toBeUndefined();
    }
    const crossed = await app.inject({ method: "GET", url: `/t/c/${lt}/${otherWorkspace}` });
    expect(crossed.statusCode).toBe(404);
    expect(crossed.headers.location).toBeUndefined();
  });

  it("still honours format-1 links in mail already sent, and tokens of the previous secret", async () => {
    const legacyRt = signToken(SECRET, { w: "ws_a", m: "m1@acme.test", e: "ann@example.test", k: "ctc_1", c: "cmp_1" });
    const legacyLt = signToken(SECRET, { c: "cmp_1", i: 0, u: "https://acme.test/old" });
    expect((await app.inject({ method: "GET", url: `/t/c/${legacyLt}/${legacyRt}` })).headers.location).toBe("https://acme.test/old");
    expect((await app.inject({ method: "GET", url: `/u/${legacyRt}` })).body).toContain("ann@example.test");
    const forgedLegacy = signToken("not-our-secret-0123456789", { c: "cmp_1", i: 0, u: "https://evil.test" });
    expect((await app.inject({ method: "GET", url: `/t/c/${forgedLegacy}/${legacyRt}` })).statusCode).toBe(404);

    const oldRt = signRecipientToken(PREVIOUS_SECRET, recipient);
    const oldLt = signLinkToken(PREVIOUS_SECRET, { contentId: "cmp_1", index: 0, url: "https://acme.test/rotated" });
    expect((await app.inject({ method: "GET", url: `/t/c/${oldLt}/${oldRt}` })).headers.location).toBe("https://acme.test/rotated");
  });

  it("serves every URL the merge engine builds (one table of URL shapes for both)", async () => {
    const urls = trackingUrls("https://mail.example.test/", rt);
    const path = (url: string) => { const u = new URL(url); return u.pathname + u.search; };
    expect((await app.inject({ method: "GET", url: path(urls.open) })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: path(urls.click(lt)) })).statusCode).toBe(302);
    expect((await app.inject({ method: "GET", url: path(urls.unsubscribe) })).body).toContain("<h1>Unsubscribe</h1>");
    const manage = await app.inject({ method: "GET", url: path(urls.manage) });
    expect(manage.body).toContain("<h1>Manage your subscription</h1>");
    expect(manage.body).toContain(`action="${path(urls.unsubscribe)}"`);
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
