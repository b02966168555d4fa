import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createClient, Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { AccountsService, ApiKeySchema } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { EmailService, EmailStatus } from "@mailroom/proto/email/v1/email_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { SECRET_PURPOSES, sealSecret } from "@mailroom/kit/secrets.js";
import { buildGateway } from "../../gateway/src/app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { SESSION_COOKIE } from "./session.js";
import { csrfOf, Jar } from "./sign-in-testing.js";

/**
 * The console's session cookie and CSRF checks through fastify inject, against an
 * in-memory accounts service with two workspaces.
 */
const SECRET = "console-session-test-secret-0123456789";
const KEYS: Record<string, { workspaceId: string; keyId: string; scopes: string[] }> = {
  mr_test_console_a: { workspaceId: "ws_a", keyId: "key_a", scopes: ["api_user"] },
  mr_test_console_view: { workspaceId: "ws_a", keyId: "key_v", scopes: ["api_read"] },
  mr_test_console_b: { workspaceId: "ws_b", keyId: "key_b", scopes: ["api_user"] },
};
const revoked = new Set<string>();

const accounts = createClient(AccountsService, memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const k = KEYS[req.apiKey];
      if (!k || revoked.has(k.keyId)) throw new ConnectError("unknown key", Code.Unauthenticated);
      return k;
    },
    getApiKey(req) {
      const k = Object.values(KEYS).find((x) => x.keyId === req.keyId && x.workspaceId === req.workspaceId);
      if (!k) throw new ConnectError("no such key", Code.NotFound);
      return {
        apiKey: create(ApiKeySchema, {
          id: k.keyId, workspaceId: k.workspaceId, name: `key ${k.keyId}`, scopes: k.scopes,
          revokedAt: revoked.has(k.keyId) ? timestampFromDate(new Date()) : undefined,
        }),
      };
    },
    getWorkspace(req) {
      return { workspace: { id: req.workspaceId, name: req.workspaceId === "ws_a" ? "Acme <A>" : "Bravo" } };
    },
  });
}));

/** One email, in ws_a; every other (workspace, id) is not found, as in the real service. */
const EMAIL_A = "trs_01jaaaaaaaaaaaaaaaaaaaaaaa";
const email = createClient(EmailService, memoryTransport(({ service }) => {
  service(EmailService, {
    getStats() {
      return { from: "2030-01-01", to: "2030-01-02", days: [{ date: "2030-01-01", counters: { sent: 3n, delivered: 2n } }, { date: "2030-01-02" }], groups: [{ groupBy: "welcome", counters: { sent: 3n } }] };
    },
    getEmail(req) {
      if (req.workspaceId !== "ws_a" || req.id !== EMAIL_A) throw new ConnectError(`Email ${req.id} not found`, Code.NotFound);
      return { email: { id: EMAIL_A, to: "ann@example.test", subject: "Hello <Ann>", status: EmailStatus.DELIVERED, createdAt: timestampFromDate(new Date()) } };
    },
    getEmailContent() {
      throw new ConnectError("gone", Code.NotFound);
    },
    listEmails(req) {
      return { emails: req.workspaceId === "ws_a" ? [{ id: EMAIL_A, to: "ann@example.test", subject: "Hello <Ann>", status: EmailStatus.DELIVERED }] : [] };
    },
  });
}));

describe("console sessions and CSRF", () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    const deps: GatewayDeps = {
      config: loadConfig({ MAILROOM_SECRET: SECRET, MAILROOM_PUBLIC_URL: "http://console.test" }),
      logger: createLogger("console-test", "silent"),
      clients: { accounts, email } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 5,
      // Revocation must show at once in these tests.
      authCacheMs: 0,
    };
    app = await buildGateway(deps, { api: [], public: [] });
  });
  afterAll(async () => app?.close());

  const get = (url: string, jar: Jar, headers: Record<string, string> = {}) =>
    app.inject({ method: "GET", url, headers: { cookie: jar.header(), ...headers } }).then((r) => jar.take(r));
  const post = (url: string, jar: Jar, form: Record<string, string>, headers: Record<string, string> = {}) =>
    app.inject({
      method: "POST", url, payload: new URLSearchParams(form).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), ...headers },
    }).then((r) => jar.take(r));

  async function signIn(key: string, remoteAddress?: string): Promise<Jar & { last: LightMyRequestResponse }> {
    const jar = new Jar();
    const page = await get("/console/sign-in", jar);
    const res = await app.inject({
      method: "POST", url: "/console/sign-in", remoteAddress,
      payload: new URLSearchParams({ _csrf: csrfOf(page.body), apiKey: key, next: "/console/emails" }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: "http://console.test", "sec-fetch-site": "same-origin" },
    });
    jar.take(res);
    return Object.assign(jar, { last: res });
  }

  it("sends a visitor without a session to the sign-in page, remembering where they were", async () => {
    const res = await get("/console/emails?status=sent", new Jar());
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/sign-in?next=${encodeURIComponent("/console/emails?status=sent")}`);
    const page = await get("/console/sign-in", new Jar());
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/text\/html/);
    expect(page.body).toMatch(/<label for="apiKey">API key<\/label>/);
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
  });

  it("signs in with a valid key: sealed HttpOnly SameSite cookie that does not contain the key", async () => {
    const jar = await signIn("mr_test_console_a");
    const res = jar.last;
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/emails");
    const setCookie = [res.headers["set-cookie"]].flat().find((c) => c?.startsWith(`${SESSION_COOKIE}=`))!;
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).toMatch(/Path=\/console/);
    expect(setCookie).not.toContain("mr_test_console_a");
    expect(setCookie).not.toContain("ws_a");
    const home = await get("/console", jar);
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain("Acme &lt;A&gt;");
    expect(home.body).toContain('aria-current="page"');
  });

  it("refuses a wrong key with a 401 page and limits failed attempts per address", async () => {
    const wrong = await signIn("mr_test_not_a_key", "10.0.0.7");
    expect(wrong.last.statusCode).toBe(401);
    expect(wrong.last.body).toContain("not valid");
    expect(wrong.cookies.has(SESSION_COOKIE)).toBe(false);
    let last = wrong.last;
    for (let i = 0; i < 6 && last.statusCode !== 429; i++) last = (await signIn("mr_test_not_a_key", "10.0.0.7")).last;
    expect(last.statusCode).toBe(429);
    expect(last.headers["content-type"]).toMatch(/text\/html/);
    expect(last.body).toContain("Too many");
  });

  it("treats a forged, altered or foreign-sealed cookie as no session", async () => {
    const jar = await signIn("mr_test_console_a");
    const sealed = jar.cookies.get(SESSION_COOKIE)!;
    const tampered = sealed.slice(0, -4) + (sealed.endsWith("AAAA") ? "BBBB" : "AAAA");
    const forged = sealSecret({ current: "another-secret-entirely-0123456789" }, SECRET_PURPOSES.consoleSession,
      JSON.stringify({ v: 1, w: "ws_b", k: "key_b", n: "x", exp: Date.now() + 60_000 }));
    // Sealed with the right secret but for another purpose: must not open either.
    const crossPurpose = sealSecret({ current: SECRET }, SECRET_PURPOSES.webhookToken,
      JSON.stringify({ v: 1, w: "ws_b", k: "key_b", n: "x", exp: Date.now() + 60_000 }));
    for (const value of [tampered, forged, crossPurpose, "garbage", JSON.stringify({ w: "ws_b" })]) {
      const res = await app.inject({ method: "GET", url: "/console", headers: { cookie: `${SESSION_COOKIE}=${encodeURIComponent(value)}` } });
      expect(res.statusCode, value).toBe(303);
      expect(res.headers.location).toMatch(/^\/console\/sign-in/);
    }
  });

  it("refuses POSTs without the session's CSRF token, or from another site, with a 403 page", async () => {
    const jar = await signIn("mr_test_console_a");
    const other = await signIn("mr_test_console_b");
    const home = await get("/console", other);
    const otherToken = csrfOf(home.body);
    for (const [form, headers] of [
      [{}, {}],
      [{ _csrf: "wrong" }, {}],
      [{ _csrf: otherToken }, {}], // another session's token
    ] as Array<[Record<string, string>, Record<string, string>]>) {
      const res = await post("/console/sign-out", jar, form, headers);
      expect(res.statusCode).toBe(403);
      expect(res.headers["content-type"]).toMatch(/text\/html/);
      expect(res.body).toContain("Not allowed");
    }
    const token = csrfOf((await get("/console", jar)).body);
    for (const headers of [{ "sec-fetch-site": "cross-site" }, { origin: "https://evil.test" }, { origin: "null" }] as Array<Record<string, string>>) {
      const res = await post("/console/sign-out", jar, { _csrf: token }, headers);
      expect(res.statusCode).toBe(403);
    }
    // The sign-in form needs its pre-session token too (no login CSRF).
    const login = await post("/console/sign-in", new Jar(), { apiKey: "mr_test_console_a" });
    expect(login.statusCode).toBe(403);
    expect(jar.cookies.has(SESSION_COOKIE)).toBe(true);
  });

  it("signs out with the token: the cookie is cleared and the next page asks to sign in", async () => {
    const jar = await signIn("mr_test_console_a");
    const token = csrfOf((await get("/console", jar)).body);
    const res = await post("/console/sign-out", jar, { _csrf: token }, { origin: "http://console.test" });
    expect(res.statusCode).toBe(303);
    expect(jar.cookies.has(SESSION_COOKIE)).toBe(false);
    const page = await get(res.headers.location as string, jar);
    expect(page.body).toContain("You are signed out.");
    expect((await get("/console", jar)).statusCode).toBe(303);
  });

  it("ends the session when its key is revoked", async () => {
    KEYS.mr_test_console_revoke = { workspaceId: "ws_a", keyId: "key_r", scopes: ["api_user"] };
    const jar = await signIn("mr_test_console_revoke");
    expect((await get("/console", jar)).statusCode).toBe(200);
    revoked.add("key_r");
    expect((await get("/console", jar)).statusCode).toBe(303);
  });

  it("answers unknown console paths and bad forms with HTML pages, and leaves /v1 JSON", async () => {
    const jar = await signIn("mr_test_console_a");
    const missing = await get("/console/no-such-page", jar);
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toMatch(/text\/html/);
    const api = await app.inject({ method: "GET", url: "/v1/nope" });
    expect(api.statusCode).toBe(404);
    expect(api.json()).toMatchObject({ statusCode: 404 });
    const odd = await app.inject({ method: "POST", url: "/console/sign-out", headers: { "content-type": "text/plain", cookie: jar.header() }, payload: "x" });
    expect(odd.statusCode).toBe(415);
    expect(odd.headers["content-type"]).toMatch(/text\/html/);
  });

  it("shows a workspace its own email and a 404 page for another workspace's email id", async () => {
    const a = await signIn("mr_test_console_a");
    const b = await signIn("mr_test_console_b");
    const mine = await get(`/console/emails/${EMAIL_A}`, a);
    expect(mine.statusCode).toBe(200);
    expect(mine.body).toContain("Hello &lt;Ann&gt;");
    expect(mine.body).not.toContain("<Ann>");
    const theirs = await get(`/console/emails/${EMAIL_A}`, b);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.headers["content-type"]).toMatch(/text\/html/);
    expect(theirs.body).not.toContain("Hello");
    expect((await get("/console/emails/not-an-id", b)).statusCode).toBe(404);
    expect((await get("/console/emails", b)).body).not.toContain(EMAIL_A);
    expect((await get("/console/emails", a)).body).toContain(EMAIL_A);
  });

  it("answers bad filters with a 400 page, never a 500", async () => {
    const a = await signIn("mr_test_console_a");
    for (const url of ["/console/emails?from=yesterday", "/console/emails?status=lost", "/console/?to=2030-13-45", `/console/emails?recipient=${"x".repeat(400)}`]) {
      const res = await get(url, a);
      expect(res.statusCode, url).toBe(400);
      expect(res.headers["content-type"]).toMatch(/text\/html/);
    }
    const home = await get("/console", a);
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain("<svg");
    expect(home.body).toContain("welcome");
  });

  it("keeps the console out of the public API document", async () => {
    const doc = app.openapiDocument() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/console"))).toEqual([]);
  });
});
