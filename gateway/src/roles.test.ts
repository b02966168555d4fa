/**
 * Role rules route by route (issue 32): every route the gateway registers has a rule in
 * roles.ts; every rule is checked with a key or a console session of each role; and API keys
 * keep today's access on every /v1 operation of the OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyInstance, FastifyRequest } from "fastify";

/** Every route any gateway instance registers: method, url, declared scope. */
const registered: { method: string; url: string; scope?: string }[] = [];

// buildGateway makes its own Fastify instance: wrap the factory so every instance reports
// its routes as they register (the console's and app.ts's own included).
vi.mock("fastify", async (original) => {
  const real = (await original()) as typeof import("fastify");
  const factory = real.default as unknown as (opts: unknown) => FastifyInstance;
  const wrapped = (opts: unknown) => {
    const app = factory(opts);
    app.addHook("onRoute", (route) => {
      for (const method of [route.method].flat()) registered.push({ method, url: route.url, scope: (route.config as { scope?: string } | undefined)?.scope });
    });
    return app;
  };
  return { ...real, default: wrapped, fastify: wrapped };
});

const { buildGateway } = await import("./app.js");
const { loadConfig, createLogger } = await import("@mailroom/kit");
const { ROLES, ROUTE_RULES, allows, atLeast, installRoleRules, requiredRole, routeKey, ruleFor, unruledRoutes } = await import("@mailroom/http/roles.js");
const { requireSession } = await import("@mailroom/console/session.js");
type Role = (typeof ROLES)[number];

/** A key per role, as the accounts unit answers for it (role capped, scopes to match). */
const KEYS: Record<Role, string> = { VIEWER: "mr_test_role_viewer", EDITOR: "mr_test_role_editor", ADMIN: "mr_test_role_admin", OWNER: "mr_test_role_owner" };
const scopesOf = (role: Role) => (role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"]);
/** The keys of before roles: the accounts unit sends only scopes. */
const LEGACY = { api_user: "mr_test_legacy_user", api_read: "mr_test_legacy_read" };

/** Every call but authenticate: a service that is down (503), so an allowed request ends quickly. */
const down = () => { throw new ConnectError("down in this test", Code.Unavailable); };
const service = (impl: Record<string, unknown> = {}) => new Proxy(impl, { get: (target, prop) => (prop in target ? target[prop as string] : prop === "then" ? undefined : down) });
const accounts = service({
  async authenticate({ apiKey }: { apiKey: string }) {
    const role = (Object.keys(KEYS) as Role[]).find((r) => KEYS[r] === apiKey);
    if (role) return { workspaceId: "ws_roles", keyId: `key_${role.toLowerCase()}`, scopes: scopesOf(role), role, memberId: "mbr_1" };
    if (apiKey === LEGACY.api_user) return { workspaceId: "ws_roles", keyId: "key_legacy_user", scopes: ["api_user", "api_read"] };
    if (apiKey === LEGACY.api_read) return { workspaceId: "ws_roles", keyId: "key_legacy_read", scopes: ["api_read"] };
    throw new ConnectError("unknown key", Code.Unauthenticated);
  },
});

let app: FastifyInstance;
/** The routes of the gateway built here (other instances in this file register too). */
let gatewayRoutes: typeof registered = [];
beforeAll(async () => {
  app = await buildGateway({
    config: loadConfig({}),
    logger: createLogger("gateway-roles-test", "silent"),
    clients: new Proxy({ accounts }, { get: (target, prop) => (prop in target ? target[prop as "accounts"] : service()) }) as never,
    rateLimitPerMinute: 0,
    authCacheMs: 60_000,
  });
  await app.ready();
  gatewayRoutes = [...registered];
});
afterAll(async () => app?.close());

/** A request path for a route pattern: each parameter gets a plain value. */
const pathOf = (url: string) => url.replace(/:(\w+)/g, (_m, name: string) => `x_${name}`);
const isApi = (url: string) => url.startsWith("/v1/");
const isConsole = (url: string) => url === "/console" || url.startsWith("/console/");

/** Whether the answer is the role check's refusal (today's 401 for an under-scoped key, or 403 insufficient_role). */
async function refusedByRole(method: string, url: string, key: string): Promise<boolean> {
  const res = await app.inject({ method: method as "GET", url: pathOf(url), headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, payload: method === "GET" || method === "HEAD" || method === "DELETE" ? undefined : "{}" });
  if (res.statusCode === 401) {
    expect(res.json().message, `${method} ${url}`).toMatch(/^Insufficient scope: this endpoint requires the api_(user|read) scope\./);
    return true;
  }
  if (res.statusCode === 403 && method !== "HEAD" && res.json().code === "insufficient_role") return true;
  return false;
}

describe("role rules (services/http/src/roles.ts)", () => {
  it("has a rule for every route the gateway registers, and none for a route it does not", () => {
    expect(gatewayRoutes.length).toBeGreaterThan(200);
    expect(unruledRoutes(gatewayRoutes), "add these routes to ROUTE_RULES in services/http/src/roles.ts").toEqual([]);
    const known = new Set(gatewayRoutes.map((r) => routeKey(r.method, r.url)));
    // Registered only under conditions this test's gateway does not meet.
    const conditional = new Set(["GET /dev/mail", "GET /dev/mail/:id", "GET /dev/mail/:id/raw", "POST /dev/mail/clear", "GET /dev/webhooks", "POST /dev/webhooks/:name", "GET /v1/audit-log"]);
    expect(Object.keys(ROUTE_RULES).filter((k) => !known.has(k) && !conditional.has(k)), "rules for routes nobody registers").toEqual([]);
  });

  it("fails at startup (strict) on a route without a rule, and only warns otherwise", async () => {
    const { default: Fastify } = await import("fastify");
    const strict = Fastify();
    installRoleRules(strict, { strict: true });
    strict.get("/v1/contacts", async () => ({}));
    expect(() => strict.get("/v1/no-rule-here", async () => ({}))).toThrow(/route GET \/v1\/no-rule-here has no rule in services\/http\/src\/roles\.ts/);
    const lax = Fastify();
    installRoleRules(lax, { strict: false });
    lax.get("/v1/no-rule-here", async () => ({}));
    await expect(lax.ready()).resolves.toBeDefined();
    await Promise.all([strict.close(), lax.close()]);
  });

  it("checks every /v1 rule with a key of each role: allowed from the rule's role up, refused below", async () => {
    const api = gatewayRoutes.filter((r) => isApi(r.url) && r.method !== "HEAD");
    expect(api.length).toBeGreaterThan(80);
    const wrong: string[] = [];
    for (const route of api) {
      const rule = ruleFor(route.method, route.url) ?? { role: "OWNER" as const };
      for (const role of ROLES) {
        const expected = !atLeast(role, requiredRole(rule, { kind: "key" })!);
        if ((await refusedByRole(route.method, route.url, KEYS[role])) !== expected) wrong.push(`${route.method} ${route.url} as ${role}: expected ${expected ? "refused" : "allowed"}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("keeps today's access for API keys on every /v1 operation of the OpenAPI document (api_user = EDITOR, api_read = VIEWER)", async () => {
    const doc = app.openapiDocument() as { paths: Record<string, Record<string, unknown>> };
    const scopeOf = new Map(gatewayRoutes.map((r) => [routeKey(r.method, r.url), r.scope ?? "api_user"]));
    const ops = Object.entries(doc.paths).filter(([p]) => p.startsWith("/v1/")).flatMap(([p, item]) => Object.keys(item).map((m) => ({ method: m.toUpperCase(), url: p.replace(/\{(\w+)\}/g, ":$1") })));
    expect(ops.length).toBeGreaterThan(80);
    // Routes new with roles (issue 32) are above EDITOR; every other /v1 route existed before and keeps its access.
    const isNew = (op: { method: string; url: string }) => { const r = ruleFor(op.method, op.url); return r?.role !== undefined && !atLeast("EDITOR", r.role); };
    expect(ops.filter(isNew).map((op) => routeKey(op.method, op.url))).toEqual(["GET /v1/audit-log"]);
    const wrong: string[] = [];
    for (const op of ops.filter((o) => !isNew(o))) {
      const today = scopeOf.get(routeKey(op.method, op.url));
      expect(today, `${op.method} ${op.url} is registered`).toBeDefined();
      // Before roles: an api_user key (its scopes api_user and api_read) passes every scope; an api_read key only api_read.
      for (const [keyScope, key, effective] of [["api_user", LEGACY.api_user, KEYS.EDITOR], ["api_read", LEGACY.api_read, KEYS.VIEWER]] as const) {
        const refusedToday = !(keyScope === "api_user" || today === "api_read");
        for (const k of [key, effective]) {
          if ((await refusedByRole(op.method, op.url, k)) !== refusedToday) wrong.push(`${op.method} ${op.url} with an ${keyScope} key: today ${refusedToday ? "refused" : "allowed"}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("checks every console rule with a member session and a key session of each role, through the console's session hook", async () => {
    const pages = gatewayRoutes.filter((r) => isConsole(r.url) && r.method !== "HEAD" && ruleFor(r.method, r.url)?.public === undefined);
    expect(pages.length).toBeGreaterThan(80);
    const wrong: string[] = [];
    for (const route of pages) {
      const rule = ruleFor(route.method, route.url)!;
      for (const kind of ["member", "key"] as const) {
        for (const role of ROLES) {
          const request = { method: route.method, url: pathOf(route.url), routeOptions: { url: route.url, config: {} }, consoleSession: { kind, role, scopes: scopesOf(role) } } as unknown as FastifyRequest;
          const err = await requireSession(request, {} as never).then(() => undefined, (e: unknown) => e as { code?: string; httpStatus?: number });
          const refused = err !== undefined;
          if (refused) expect(err).toMatchObject({ code: "insufficient_role", httpStatus: 403 });
          if (refused !== !allows(rule, { kind, role })) wrong.push(`${route.method} ${route.url} as a ${kind} ${role}: ${refused ? "refused" : "allowed"}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("puts every console page with a rule behind the session hook that applies it (no session: sign in)", async () => {
    const pages = gatewayRoutes.filter((r) => isConsole(r.url) && r.method !== "HEAD" && ruleFor(r.method, r.url)?.public === undefined);
    const open: string[] = [];
    for (const route of pages) {
      const res = await app.inject({ method: route.method as "GET", url: pathOf(route.url) });
      const signIn = route.method === "GET" ? res.statusCode === 303 && String(res.headers.location).startsWith("/console/sign-in") : res.statusCode === 401;
      if (!signIn) open.push(`${route.method} ${route.url}: ${res.statusCode}`);
    }
    expect(open).toEqual([]);
  });

  it("refuses a VIEWER member on a console change and an EDITOR member on the workspace's set-up, naming the role needed", async () => {
    const check = (kind: "member" | "key", role: Role, method: string, url: string) =>
      requireSession({ method, routeOptions: { url, config: {} }, consoleSession: { kind, role, scopes: scopesOf(role) } } as unknown as FastifyRequest, {} as never)
        .then(() => "allowed", (e: Error) => e.message);
    expect(await check("member", "VIEWER", "POST", "/console/contacts/:id")).toBe("This needs the EDITOR role or higher; your role is VIEWER.");
    expect(await check("member", "EDITOR", "POST", "/console/webhooks")).toBe("This needs the ADMIN role or higher; your role is EDITOR.");
    expect(await check("member", "ADMIN", "POST", "/console/webhooks")).toBe("allowed");
    // A session signed in with an api_user key keeps what such a key could do before members.
    expect(await check("key", "EDITOR", "POST", "/console/webhooks")).toBe("allowed");
  });

  it("answers 403 insufficient_role (not the legacy 401) for a key below a role above EDITOR, and the page names the code", async () => {
    const res = await app.inject({ method: "GET", url: "/docs/errors/insufficient_role" });
    expect(res.statusCode).toBe(200);
    const { requireRole } = await import("@mailroom/http/roles.js");
    const request = { method: "GET", routeOptions: { url: "/v1/audit-log", config: {} } } as unknown as FastifyRequest;
    expect(() => requireRole(request, { kind: "key", role: "EDITOR" })).toThrow(expect.objectContaining({ code: "insufficient_role", httpStatus: 403, message: "This needs the ADMIN role or higher; this API key's role is EDITOR." }));
    expect(() => requireRole(request, { kind: "key", role: "ADMIN" })).not.toThrow();
  });
});

describe("a key's role (authContextOf)", async () => {
  const { authContextOf } = await import("./auth.js");
  const of = (scopes: string[], role?: string) => authContextOf({ workspaceId: "ws", keyId: "key", scopes, ...(role === undefined ? {} : { role }) }).role;

  it("is the accounts unit's effective role (capped by the key's owner)", () => {
    expect(of(["api_user", "api_read"], "ADMIN")).toBe("ADMIN");
    expect(of(["api_user", "api_read"], "OWNER")).toBe("OWNER");
    expect(of(["api_read"], "VIEWER")).toBe("VIEWER");
  });

  it("is the role the scopes stood for when the accounts unit sends none (keys before roles)", () => {
    expect(of(["api_user", "api_read"])).toBe("EDITOR");
    expect(of(["api_user"], "")).toBe("EDITOR");
    expect(of(["api_read"])).toBe("VIEWER");
  });

  it("never exceeds what the scopes allowed before roles: api_read alone is VIEWER, no scope is no role", () => {
    expect(of(["api_read"], "EDITOR")).toBe("VIEWER");
    expect(of([], "VIEWER")).toBeUndefined();
    expect(of(["admin"], "VIEWER")).toBeUndefined();
    expect(of(["read_only"])).toBeUndefined();
  });
});
