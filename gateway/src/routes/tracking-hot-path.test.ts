import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import type { MailEvent } from "@mailroom/proto/events/v1/events_pb.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { signLinkToken, signRecipientToken } from "@mailroom/content/tokens.js";
import { buildGateway } from "../app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { registerTracking } from "./tracking.js";

const SECRET = "tracking-hot-path-secret-0123456789";

/** Opens and clicks answer with every service unreachable and the event publisher never settling. */
describe("the tracking hot path", () => {
  let app: FastifyInstance;
  const touched: string[] = [];
  const published: MailEvent[] = [];
  const recipient = { workspaceId: "ws_a", messageId: "m1@acme.test", email: "ann@example.test", contactId: "", contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0ye" };
  const rt = signRecipientToken(SECRET, recipient);
  const lt = signLinkToken(SECRET, { contentId: recipient.contentId, index: 0, url: "https://acme.test/a" });

  beforeAll(async () => {
    // Any service client use is recorded (and would throw).
    const clients = new Proxy({}, { get: (_t, name) => { touched.push(String(name)); throw new Error(`${String(name)} called`); } }) as ServiceClients;
    const deps: GatewayDeps = {
      config: { ...loadConfig({}), secret: SECRET },
      logger: createLogger("gateway-test", "silent"),
      clients,
      // Never acknowledged: the answer must not wait for it.
      tracking: { publish: (e) => { published.push(e); return new Promise<void>(() => undefined); } },
      rateLimitPerMinute: 1,
      authCacheMs: 1000,
    };
    app = await buildGateway(deps, { api: [], public: [registerTracking] });
  });
  afterAll(async () => app?.close());

  it("answers opens and clicks without any service and without waiting for the event", async () => {
    for (let i = 0; i < 3; i++) {
      const click = await app.inject({ method: "GET", url: `/t/c/${lt}/${rt}` });
      expect(click.statusCode).toBe(302);
      expect(click.headers.location).toBe("https://acme.test/a");
      expect(click.headers["x-request-id"]).toBeTruthy();
      const open = await app.inject({ method: "GET", url: `/t/o/${rt}` });
      expect(open.statusCode).toBe(200);
      expect(open.headers["content-type"]).toBe("image/gif");
    }
    expect(touched).toEqual([]);
    expect(published).toHaveLength(6);
  });

  it("still refuses a cached link token paired with another content's recipient", async () => {
    const other = signRecipientToken(SECRET, { ...recipient, contentId: "trs_01jqz8k4m2x7v9c3n5b6t1w0yf" });
    expect((await app.inject({ method: "GET", url: `/t/c/${lt}/${other}` })).statusCode).toBe(404);
    const tampered = lt.slice(0, -2) + (lt.endsWith("A") ? "BB" : "AA");
    expect((await app.inject({ method: "GET", url: `/t/c/${tampered}/${rt}` })).statusCode).toBe(404);
    expect((await app.inject({ method: "GET", url: `/t/c/${tampered}/${rt}` })).statusCode).toBe(404);
  });
});
