import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { ContactService, ContactStatus, SuppressionReason } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { signRecipientToken } from "@mailroom/content/tokens.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { registerUnsubscribe } from "./unsubscribe.js";

const SECRET = "unsubscribe-test-secret-0123456789";
const PUBLIC_URL = "https://mail.acme.test";

describe("manage page and resubscribe", () => {
  let app: FastifyInstance;
  let suppression: SuppressionReason | undefined;
  const calls: string[] = [];
  const rt = signRecipientToken(SECRET, { workspaceId: "ws_a", messageId: "", email: "ann@example.test", contactId: "ctc_1", contentId: "cmp_1" });
  const resubscribe = (headers: Record<string, string> = {}) =>
    app.inject({ method: "POST", url: `/u/${rt}/resubscribe`, headers: { accept: "text/html", ...headers } });

  beforeAll(async () => {
    const contacts = createClient(ContactService, memoryTransport(({ service }) => {
      service(ContactService, {
        checkSuppression: () => ({ suppressed: suppression ? [{ email: "ann@example.test", reason: suppression }] : [] }),
        removeSuppression(req) { calls.push(`remove ${req.email}`); suppression = undefined; return {}; },
        addSuppression(req) { calls.push(`add ${req.email}`); suppression = req.reason; return {}; },
        updateContact(req) { calls.push(`contact ${ContactStatus[req.contact!.status!]}`); return {}; },
      });
    }));
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET, publicUrl: PUBLIC_URL },
      logger: createLogger("gateway-test", "silent"),
      clients: { contacts } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 1000,
    };
    app = await buildGateway(deps, { api: [], public: [registerUnsubscribe] });
  });
  afterAll(async () => app?.close());
  beforeEach(() => {
    calls.length = 0;
    suppression = SuppressionReason.UNSUBSCRIBED;
  });

  it("shows the subscription on the manage page and offers what changes it", async () => {
    const unsubscribed = await app.inject({ method: "GET", url: `/u/${rt}?manage=1` });
    expect(unsubscribed.body).toContain("is unsubscribed");
    expect(unsubscribed.body).toContain(`action="/u/${rt}/resubscribe"`);
    suppression = undefined;
    const subscribed = await app.inject({ method: "GET", url: `/u/${rt}?manage=1` });
    expect(subscribed.body).toContain("is subscribed");
    expect(subscribed.body).toContain(`action="/u/${rt}"`);
    expect(subscribed.body).not.toContain("/resubscribe");
  });

  it("lifts the recipient's unsubscribe and marks the contact subscribed, from our own page or without Origin", async () => {
    const res = await resubscribe({ origin: PUBLIC_URL });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("You are subscribed again");
    expect(calls).toEqual(["remove ann@example.test", "contact SUBSCRIBED"]);
    suppression = SuppressionReason.UNSUBSCRIBED;
    expect((await app.inject({ method: "POST", url: `/u/${rt}/resubscribe` })).json()).toEqual({ subscribed: true });
  });

  it("refuses a form posted from another site", async () => {
    for (const headers of <Record<string, string>[]>[{ origin: "https://evil.test" }, { referer: "https://evil.test/page" }, { origin: "null" }, { "sec-fetch-site": "cross-site" }]) {
      expect((await resubscribe(headers)).statusCode, JSON.stringify(headers)).toBe(403);
    }
    expect(calls).toEqual([]);
  });

  it("never lifts a bounce or complaint", async () => {
    suppression = SuppressionReason.HARD_BOUNCE;
    const res = await resubscribe();
    expect(res.statusCode).toBe(409);
    expect(res.body).toContain("Cannot resubscribe here");
    expect(calls).toEqual([]);
  });

  it("answers 404 for a forged token", async () => {
    expect((await app.inject({ method: "POST", url: "/u/forged/resubscribe" })).statusCode).toBe(404);
  });
});
