import { generateKeyPairSync } from "node:crypto";
import { Writable } from "node:stream";
import type { Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Provider from "oidc-provider";
import * as oidcClient from "openid-client";
import { createClient } from "@connectrpc/connect";
import type { FastifyInstance } from "fastify";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { TeamService, type SignInWithOidcRequest } from "@mailroom/proto/accounts/v1/team_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { directoryRoutes, memoryDirectory, storeTeam } from "../../services/audience/src/testing.js";
import { teamService } from "../../services/accounts/src/team-routes.js";
import { createLogger, loadConfig } from "@mailroom/kit";
import { buildGateway } from "../../gateway/src/app.js";
import type { GatewayDeps, ServiceClients } from "@mailroom/http/deps.js";
import { freePort } from "../harness/ports.js";

/**
 * Console sign-in with OpenID Connect against a real OpenID provider (the `oidc-provider`
 * package on a free port, its development login and consent pages), driven by HTTP requests
 * with a cookie jar per site. The gateway listens on its own port and calls the accounts unit's own
 * TeamService (in memory) to map the verified email to a member. Checked: the code flow
 * with PKCE, state and nonce signs a member in; an ID token issued to another client (a
 * substituted token: right issuer, signature and nonce, wrong audience) is refused; a replayed
 * code is refused; an unverified email, a stranger, or another subject with a member's address is refused.
 */
const SECRET = "console-oidc-test-secret-0123456789abcdef";
const CLIENT_SECRET = "mailroom-client-secret-0123456789";
const OTHER_SECRET = "other-client-secret-0123456789";
const ACCOUNTS: Record<string, { email: string; verified: boolean }> = {
  ann: { email: "Ann@Team.test", verified: true },
  // Another account of the provider with Ann's address: the team remembers the first subject.
  "ann-again": { email: "ann@team.test", verified: true },
  eve: { email: "eve@team.test", verified: false },
  stranger: { email: "stranger@elsewhere.test", verified: true },
};

/** Cookies of one browser, per origin (provider and gateway are two sites). */
class Browser {
  private jars = new Map<string, Map<string, string>>();
  clone(): Browser {
    const b = new Browser();
    for (const [origin, jar] of this.jars) b.jars.set(origin, new Map(jar));
    return b;
  }
  has(origin: string, name: string) {
    return this.jars.get(origin)?.has(name) ?? false;
  }
  async fetch(url: string, init: { method?: string; form?: Record<string, string> } = {}) {
    const origin = new URL(url).origin;
    const jar = this.jars.get(origin) ?? new Map<string, string>();
    this.jars.set(origin, jar);
    const headers: Record<string, string> = { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") };
    if (init.form) headers["content-type"] = "application/x-www-form-urlencoded";
    const res = await fetch(url, { method: init.method ?? "GET", headers, body: init.form ? new URLSearchParams(init.form) : undefined, redirect: "manual" });
    for (const c of res.headers.getSetCookie()) {
      const [pair, ...attrs] = c.split(";");
      const i = pair.indexOf("=");
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1);
      const expired = attrs.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && new Date(a.split("=")[1]).getTime() < Date.now()));
      if (!value || expired) jar.delete(name);
      else jar.set(name, value);
    }
    const location = res.headers.get("location");
    return { res, status: res.status, location: location ? new URL(location, url).href : undefined, body: await res.text() };
  }
}

describe("console sign-in with OpenID Connect (a real provider)", () => {
  let providerServer: Server;
  let provider: Provider;
  let gateway: FastifyInstance;
  let issuer: string;
  let gatewayUrl: string;
  let redirectUri: string;
  /** When set, the provider's token response carries this ID token instead (a substitution attack). */
  let substituteIdToken: string | undefined;
  const oidcCalls: SignInWithOidcRequest[] = [];
  const refusals: Array<{ msg: string; err?: { claim?: string; error?: string } }> = [];
  const lastRefusal = () => refusals.filter((r) => r.msg === "OpenID Connect sign-in refused").at(-1)?.err;

  beforeAll(async () => {
    const [providerPort, gatewayPort] = [await freePort(), await freePort()];
    issuer = `http://127.0.0.1:${providerPort}`;
    gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
    redirectUri = `${gatewayUrl}/console/oidc/callback`;
    const jwk = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });
    provider = new Provider(issuer, {
      clients: [
        { client_id: "mailroom", client_secret: CLIENT_SECRET, redirect_uris: [redirectUri], grant_types: ["authorization_code"], response_types: ["code"] },
        { client_id: "other-app", client_secret: OTHER_SECRET, redirect_uris: [redirectUri], grant_types: ["authorization_code"], response_types: ["code"] },
      ],
      jwks: { keys: [{ ...jwk, kid: "test-key", use: "sig", alg: "RS256" } as never] },
      pkce: { required: () => true },
      claims: { openid: ["sub"], email: ["email", "email_verified"] },
      findAccount: async (_ctx, id) => ({
        accountId: id,
        claims: async () => ({ sub: id, email: ACCOUNTS[id]?.email ?? `${id}@unknown.test`, email_verified: ACCOUNTS[id]?.verified ?? false }),
      }),
      features: { devInteractions: { enabled: true } },
      cookies: { keys: ["provider-cookie-key-0123456789"] },
      ttl: { Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60, AccessToken: 600, IdToken: 600 },
    });
    provider.use(async (ctx, next) => {
      await next();
      if (substituteIdToken && ctx.path === "/token" && ctx.body && typeof ctx.body === "object" && "id_token" in ctx.body) {
        ctx.body = { ...(ctx.body as object), id_token: substituteIdToken };
      }
    });
    providerServer = provider.listen(providerPort, "127.0.0.1");

    // The accounts unit's own TeamService and AccountsService (in memory): SignInWithOidc maps the email to a member.
    const dir = await memoryDirectory();
    await dir.bootstrap.loadJson(JSON.stringify({ workspaces: [{ id: "ws_oidc", name: "OIDC Co", members: [{ email: "ann@team.test", role: "EDITOR" }] }] }));
    const { team, auditLog } = await storeTeam(dir);
    const teamImpl = teamService(team, auditLog);
    const transport = memoryTransport((router) => {
      router.service(TeamService, {
        ...teamImpl,
        signInWithOidc(req, ctx) {
          oidcCalls.push(req);
          return teamImpl.signInWithOidc(req, ctx);
        },
      });
      directoryRoutes(dir, undefined, team)(router);
    });
    const deps: GatewayDeps = {
      config: loadConfig({ MAILROOM_SECRET: SECRET, MAILROOM_PUBLIC_URL: gatewayUrl }),
      // The gateway's warnings say why a sign-in was refused (the page does not): the test reads them.
      logger: createLogger("console-oidc-test", "warn", new Writable({ write(chunk, _enc, done) { refusals.push(JSON.parse(String(chunk))); done(); } })),
      clients: {
        accounts: createClient(AccountsService, transport),
        contacts: createClient(ContactService, transport),
        templates: createClient(TemplateService, transport),
        team: createClient(TeamService, transport),
      } as unknown as ServiceClients,
      rateLimitPerMinute: 0,
      authFailuresPerMinute: 1000,
      authCacheMs: 0,
      consoleSignIn: { oidc: { issuer, clientId: "mailroom", clientSecret: CLIENT_SECRET, name: "Test IdP", insecure: true } },
    };
    gateway = await buildGateway(deps, { api: [], public: [] });
    await gateway.listen({ port: gatewayPort, host: "127.0.0.1" });
  }, 30_000);

  afterAll(async () => {
    await gateway?.close();
    await new Promise<void>((r) => (providerServer ? providerServer.close(() => r()) : r()));
  });

  /** Login and consent at the provider's development pages; resolves with the redirect back to `redirectUri`. */
  async function throughProvider(browser: Browser, authorizationUrl: string, login: string): Promise<string> {
    let step = await browser.fetch(authorizationUrl);
    for (let i = 0; i < 12; i++) {
      if (step.location?.startsWith(redirectUri)) return step.location;
      if (step.location) {
        step = await browser.fetch(step.location);
        continue;
      }
      const action = /<form[^>]*action="([^"]+)"/.exec(step.body)?.[1];
      if (!action) throw new Error(`no form at the provider (${step.status}): ${step.body.slice(0, 300)}`);
      const url = new URL(action, issuer).href;
      step = await browser.fetch(url, { method: "POST", form: /name="login"/.test(step.body) ? { prompt: "login", login, password: "any" } : { prompt: "consent" } });
    }
    throw new Error("the provider never redirected back");
  }

  /** Starts at the console's button; resolves with the provider's redirect to the callback (not yet followed). */
  async function startSignIn(browser: Browser, login: string) {
    const start = await browser.fetch(`${gatewayUrl}/console/oidc/start?next=${encodeURIComponent("/console/sessions")}`);
    expect(start.status).toBe(303);
    const authorizationUrl = start.location!;
    expect(authorizationUrl.startsWith(`${issuer}/auth?`)).toBe(true);
    const params = new URL(authorizationUrl).searchParams;
    expect(params.get("code_challenge_method")).toBe("S256");
    expect(params.get("state")).toBeTruthy();
    expect(params.get("nonce")).toBeTruthy();
    return { authorizationUrl, params, callback: () => throughProvider(browser, authorizationUrl, login) };
  }

  it("offers the provider on the sign-in page and signs a member in with the code flow (PKCE, state, nonce)", async () => {
    const browser = new Browser();
    const page = await browser.fetch(`${gatewayUrl}/console/sign-in`);
    expect(page.body).toContain("Sign in with Test IdP");
    const { callback } = await startSignIn(browser, "ann");
    const back = await browser.fetch(await callback());
    expect(back.status).toBe(303);
    expect(back.location).toBe(`${gatewayUrl}/console/sessions`);
    expect(browser.has(gatewayUrl, "mr_console")).toBe(true);
    expect(browser.has(gatewayUrl, "mr_console_oidc")).toBe(false);
    expect(oidcCalls.at(-1)).toMatchObject({ email: "ann@team.test", issuer, subject: "ann" });
    const sessions = await browser.fetch(`${gatewayUrl}/console/sessions`);
    expect(sessions.status).toBe(200);
    expect(sessions.body).toContain("ann@team.test");
  });

  it("refuses a replayed code, and a callback whose flow this browser did not start", async () => {
    const browser = new Browser();
    const { callback } = await startSignIn(browser, "ann");
    const url = await callback();
    const attacker = browser.clone(); // holds the same flow cookie: only the code's single use stops it
    const first = await browser.fetch(url);
    expect(first.status).toBe(303);
    const calls = oidcCalls.length;
    const replay = await attacker.fetch(url);
    expect(replay.status).toBe(401);
    expect(replay.body).toContain("could not be completed");
    expect(lastRefusal()).toMatchObject({ error: "invalid_grant" }); // the provider's answer to a second use
    expect(attacker.has(gatewayUrl, "mr_console")).toBe(false);
    expect(oidcCalls.length).toBe(calls);
    // The same URL again in the first browser: its flow cookie is spent.
    const again = new Browser();
    const stray = await again.fetch(url);
    expect(stray.status).toBe(401);
    expect(stray.body).toContain("not started here");
  });

  it("refuses an ID token issued to another client (wrong audience), even with the right issuer, signature and nonce", async () => {
    const browser = new Browser();
    const { params, callback } = await startSignIn(browser, "ann");
    // The other client's own flow, with the nonce of ours: a genuine token for audience other-app.
    const other = await oidcClient.discovery(new URL(issuer), "other-app", OTHER_SECRET, undefined, { execute: [oidcClient.allowInsecureRequests] });
    const verifier = oidcClient.randomPKCECodeVerifier();
    const state = oidcClient.randomState();
    const otherUrl = oidcClient.buildAuthorizationUrl(other, {
      redirect_uri: redirectUri, scope: "openid email", state, nonce: params.get("nonce")!,
      code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    });
    const otherBack = await throughProvider(new Browser(), otherUrl.href, "ann");
    const otherTokens = await oidcClient.authorizationCodeGrant(other, new URL(otherBack), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: params.get("nonce")! });
    expect(otherTokens.claims()?.aud).toBe("other-app");

    const url = await callback();
    substituteIdToken = otherTokens.id_token;
    const calls = oidcCalls.length;
    try {
      const res = await browser.fetch(url);
      expect(res.status).toBe(401);
      expect(res.body).toContain("could not be completed");
      expect(lastRefusal()).toMatchObject({ claim: "aud" });
      expect(browser.has(gatewayUrl, "mr_console")).toBe(false);
      expect(oidcCalls.length).toBe(calls);
    } finally {
      substituteIdToken = undefined;
    }
  });

  it("refuses an unverified email, and answers a verified stranger that they are no member", async () => {
    const eve = new Browser();
    const eveFlow = await startSignIn(eve, "eve");
    const eveRes = await eve.fetch(await eveFlow.callback());
    expect(eveRes.status).toBe(401);
    expect(eveRes.body).toContain("not verified");
    expect(eve.has(gatewayUrl, "mr_console")).toBe(false);

    const stranger = new Browser();
    const flow = await startSignIn(stranger, "stranger");
    const res = await stranger.fetch(await flow.callback());
    expect(res.status).toBe(403);
    expect(res.body).toContain("not a member");
    expect(stranger.has(gatewayUrl, "mr_console")).toBe(false);
  });

  it("refuses another account of the provider with the address of a member who signed in with a first one", async () => {
    const browser = new Browser();
    const flow = await startSignIn(browser, "ann-again");
    const res = await browser.fetch(await flow.callback());
    expect(res.status).toBe(401);
    expect(res.body).toContain("another account");
    expect(browser.has(gatewayUrl, "mr_console")).toBe(false);
  });

  it("answers a 503 page naming the provider when it cannot be reached", async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const down = await buildGateway({
      config: loadConfig({ MAILROOM_SECRET: SECRET, MAILROOM_PUBLIC_URL: gatewayUrl }),
      logger: createLogger("console-oidc-test", "silent"),
      clients: {} as ServiceClients,
      rateLimitPerMinute: 0,
      authCacheMs: 0,
      consoleSignIn: { oidc: { issuer: nowhere, clientId: "mailroom", clientSecret: CLIENT_SECRET, name: "Nowhere", insecure: true } },
    }, { api: [], public: [] });
    try {
      const res = await down.inject({ method: "GET", url: "/console/oidc/start" });
      expect(res.statusCode).toBe(503);
      expect(res.headers["content-type"]).toMatch(/text\/html/);
      expect(res.body).toContain("cannot be reached");
    } finally {
      await down.close();
    }
  });
});
