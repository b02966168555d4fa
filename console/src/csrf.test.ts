import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Fastify, { type FastifyInstance } from "fastify";
import fastifyCookie from "@fastify/cookie";
import fastifyFormbody from "@fastify/formbody";
import Tokens from "@fastify/csrf";
import { createHmac } from "node:crypto";
import type { GatewayDeps } from "@mailroom/http/deps.js";
import { SECRET_PURPOSES, deriveKey } from "@mailroom/kit/secrets.js";
import {
  CSRF_HEADER, PRESESSION_COOKIE, anonymousCsrfField, csrfField, doubleSubmitMatches, doubleSubmitToken, verifyCsrf, withCsrfToken,
} from "./csrf.js";
import { consoleErrorHandler } from "./pages/errors.js";
import { Jar, csrfOf } from "./sign-in-testing.js";
import type { ConsoleSession } from "./types.js";

/**
 * The CSRF hook on its own: a console-like scope where the header `x-test-nonce` stands for
 * the nonce a sealed session cookie carries (session.ts passes it to withCsrfToken).
 */
const SECRET = "csrf-test-secret-0123456789abcdef";
const ORIGIN = "http://console.test";
const deps = { config: { secret: SECRET, publicUrl: ORIGIN } } as unknown as Pick<GatewayDeps, "config">;

const sessionOf = (nonce: string) => withCsrfToken(SECRET, nonce, {
  kind: "key", workspaceId: "ws_1", workspaceName: "W", keyId: "key_1", keyName: "k", scopes: ["api_user"],
  role: "EDITOR", actor: "key:key_1", canEdit: true, expiresAt: new Date(0),
} satisfies Omit<ConsoleSession, "csrfToken">);

describe("console CSRF (@fastify/csrf tokens, per-session secret)", () => {
  let app: FastifyInstance;

  beforeAll(async () => {
    app = Fastify();
    await app.register(fastifyCookie);
    await app.register(fastifyFormbody);
    app.setErrorHandler(consoleErrorHandler);
    app.addHook("onRequest", async (request) => {
      const nonce = request.headers["x-test-nonce"];
      if (typeof nonce === "string") request.consoleSession = sessionOf(nonce);
    });
    app.addHook("preHandler", verifyCsrf(deps));
    app.get("/page", async (request, reply) => reply.type("text/html").send(request.consoleSession ? csrfField(request.consoleSession) : anonymousCsrfField(request, reply, deps)));
    app.post("/change", async () => "done");
    await app.ready();
  });
  afterAll(async () => app?.close());

  const page = (jar: Jar, nonce?: string) =>
    app.inject({ method: "GET", url: "/page", headers: { cookie: jar.header(), ...(nonce ? { "x-test-nonce": nonce } : {}) } }).then((r) => jar.take(r));
  const post = (jar: Jar, form: Record<string, string>, headers: Record<string, string> = {}) =>
    app.inject({
      method: "POST", url: "/change", payload: new URLSearchParams(form).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", cookie: jar.header(), origin: ORIGIN, "sec-fetch-site": "same-origin", ...headers },
    });
  const expectRefused = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
    expect(res.statusCode).toBe(403);
    expect(String(res.headers["content-type"])).toMatch(/text\/html/);
    expect(res.body).toContain("Not allowed");
    expect(res.body).toContain("The form expired or did not come from this console.");
  };

  it("passes a session's own token, in the form field or the header; a new page's token differs but passes too", async () => {
    const jar = new Jar();
    const first = csrfOf((await page(jar, "nonce-a")).body);
    const second = csrfOf((await page(jar, "nonce-a")).body);
    expect(first).not.toBe("");
    expect(second).not.toBe(first); // salted per page (no fixed value for BREACH to recover)
    for (const token of [first, second]) {
      const res = await post(jar, { _csrf: token }, { "x-test-nonce": "nonce-a" });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe("done");
    }
    expect((await post(jar, {}, { "x-test-nonce": "nonce-a", [CSRF_HEADER]: first })).statusCode).toBe(200);
  });

  it("refuses a missing, forged, tampered or other session's token with the 403 page", async () => {
    const jar = new Jar();
    const good = csrfOf((await page(jar, "nonce-a")).body);
    const other = csrfOf((await page(new Jar(), "nonce-b")).body);
    const tampered = good.slice(0, -1) + (good.endsWith("A") ? "B" : "A");
    const forms: Array<Record<string, string>> = [{}, { _csrf: "" }, { _csrf: "forged" }, { _csrf: "abc-def" }, { _csrf: tampered }, { _csrf: other }];
    for (const form of forms) {
      expectRefused(await post(jar, form, { "x-test-nonce": "nonce-a" }));
    }
    // The secret is the server's: a token made from the nonce with another key (or none) does not pass.
    const guessedSecret = createHmac("sha256", "not-the-key").update("session:nonce-a").digest("base64url");
    expectRefused(await post(jar, { _csrf: Tokens({ hmacKey: "not-the-key" }).create(guessedSecret) }, { "x-test-nonce": "nonce-a" }));
    expectRefused(await post(jar, { _csrf: Tokens().create("nonce-a") }, { "x-test-nonce": "nonce-a" }));
  });

  it("keeps the secret on the server: the session's token is the library's token of an HMAC of its nonce", async () => {
    const session = sessionOf("nonce-c");
    const key = deriveKey(SECRET, SECRET_PURPOSES.consoleCsrf);
    const secret = createHmac("sha256", key).update("session:nonce-c").digest("base64url");
    expect(Tokens({ hmacKey: key }).verify(secret, session.csrfToken)).toBe(true);
    expect(session.csrfToken).not.toContain(secret);
    expect(session.csrfToken).not.toContain("nonce-c");
    expect(csrfField(session)).toBe(`<input type="hidden" name="_csrf" value="${session.csrfToken}">`);
  });

  it("before sign-in: the token is bound to this browser's pre-session cookie", async () => {
    const jar = new Jar();
    const token = csrfOf((await page(jar)).body);
    const cookie = jar.cookies.get(PRESESSION_COOKIE);
    expect(cookie).toMatch(/^[A-Za-z0-9_-]{22,64}$/);
    expect(token).not.toContain(cookie!);
    expect((await post(jar, { _csrf: token })).statusCode).toBe(200);
    // The same cookie is kept, so an earlier page's token still passes.
    const again = csrfOf((await page(jar)).body);
    expect(jar.cookies.get(PRESESSION_COOKIE)).toBe(cookie);
    expect((await post(jar, { _csrf: token })).statusCode).toBe(200);
    expect((await post(jar, { _csrf: again })).statusCode).toBe(200);

    const stranger = new Jar();
    const theirs = csrfOf((await page(stranger)).body);
    expectRefused(await post(jar, { _csrf: theirs })); // another browser's token
    expectRefused(await post(new Jar(), { _csrf: token })); // no cookie at all
    // A pre-session token is not a session's token, nor the other way round.
    expectRefused(await post(jar, { _csrf: token }, { "x-test-nonce": cookie! }));
    const sessionToken = csrfOf((await page(new Jar(), cookie!)).body);
    expectRefused(await post(jar, { _csrf: sessionToken }));
  });

  it("still refuses a good token sent from another site", async () => {
    const jar = new Jar();
    const token = csrfOf((await page(jar, "nonce-a")).body);
    const sites: Array<Record<string, string>> = [{ "sec-fetch-site": "cross-site" }, { origin: "https://evil.test" }, { origin: "null" }];
    for (const headers of sites) {
      const res = await post(jar, { _csrf: token }, { "x-test-nonce": "nonce-a", ...headers });
      expect(res.statusCode).toBe(403);
      expect(res.body).toContain("This form was sent from another site.");
    }
  });

  it("double submit for forms outside the console (the development inbox)", () => {
    const token = doubleSubmitToken(SECRET, "dev-mail-clear", "cookie-value-0123456789ab");
    expect(doubleSubmitMatches(SECRET, "dev-mail-clear", "cookie-value-0123456789ab", token)).toBe(true);
    expect(doubleSubmitMatches(SECRET, "dev-mail-clear", "another-cookie-0123456789", token)).toBe(false);
    expect(doubleSubmitMatches(SECRET, "other-purpose", "cookie-value-0123456789ab", token)).toBe(false);
    expect(doubleSubmitMatches("another-secret-0123456789abcdef", "dev-mail-clear", "cookie-value-0123456789ab", token)).toBe(false);
    expect(doubleSubmitMatches(SECRET, "dev-mail-clear", undefined, token)).toBe(false);
    expect(doubleSubmitMatches(SECRET, "dev-mail-clear", "cookie-value-0123456789ab", undefined)).toBe(false);
  });
});
