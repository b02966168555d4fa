/**
 * Who may do what (DESIGN §9.9): the one table from every route the gateway registers to the
 * lowest role that may call it, or `public` with the reason it needs no sign-in. The auth
 * hook (API keys) and the console's session hook (members and key sessions) both ask
 * `requireRole`; nothing else decides.
 *
 * Roles, lowest first: VIEWER (reads) < EDITOR (content, audiences, sending) < ADMIN (the
 * workspace's set-up: webhooks, domains, members; the audit log) < OWNER (owners and
 * ownership, which the accounts unit checks per member: TeamService's acting_role).
 *
 * API keys keep the /v1 contract (spec/, sdk-wire-contract.md) exactly: a key's role is its
 * effective role from the accounts unit (the lower of its own and its owner member's), else its
 * scopes (`api_user` = EDITOR, `api_read` = VIEWER), and every /v1 route that existed before
 * roles keeps the minimum its scope gave it — which is why, through the API, an EDITOR key
 * still manages webhooks and keys (the published client does). A key refused where a scope
 * would have refused it gets today's 401; refused for a role above EDITOR, a 403
 * `insufficient_role`. In the console a member needs `role`; a session signed in with an API
 * key (development, bootstrap) needs `keys` when the rule has one: what such a key could do
 * in the console before members existed.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { refusal } from "./errors.js";

/** Lowest first. */
export const ROLES = ["VIEWER", "EDITOR", "ADMIN", "OWNER"] as const;
export type Role = (typeof ROLES)[number];

export const isRole = (value: unknown): value is Role => (ROLES as readonly unknown[]).includes(value);
export const roleRank = (role: Role): number => ROLES.indexOf(role);
/** Whether `role` is `min` or above; no role is never enough. */
export const atLeast = (role: Role | undefined, min: Role): boolean => role !== undefined && roleRank(role) >= roleRank(min);
/** The lower of two roles (a key is capped by its owner). */
export const lowerRole = (a: Role, b: Role): Role => (roleRank(a) <= roleRank(b) ? a : b);

/** The role a key's scopes gave it before roles: `api_user` = EDITOR, `api_read` = VIEWER, else none. */
export function roleFromScopes(scopes: readonly string[]): Role | undefined {
  if (scopes.includes("api_user")) return "EDITOR";
  if (scopes.includes("api_read")) return "VIEWER";
  return undefined;
}

/** The scope that stood for a role in the /v1 contract (the legacy 401's message names it). */
export const scopeOfRole = (role: Role): string => (role === "VIEWER" ? "api_read" : "api_user");

export type RoleRule =
  /** `role`: the lowest role that may call it; `keys`: the lowest for an API key when lower. */
  | { role: Role; keys?: Role; public?: undefined }
  | { public: string; role?: undefined; keys?: undefined };

export interface Principal {
  kind: "key" | "member";
  /** Undefined: a key without any role-bearing scope (refused everywhere but public routes). */
  role: Role | undefined;
  /** A console session (a member's, or one signed in with a key) rather than a Bearer key. */
  console?: boolean;
  /** Named in the legacy 401's hint (`npx mailroom -w <workspace> key create …`). */
  workspaceId?: string;
}

const VIEWER: RoleRule = { role: "VIEWER" };
const EDITOR: RoleRule = { role: "EDITOR" };
const ADMIN: RoleRule = { role: "ADMIN" };
/** Console changes to the workspace's set-up: ADMIN members; an api_user key session as before. */
const ADMIN_OR_EDITOR_KEY: RoleRule = { role: "ADMIN", keys: "EDITOR" };
const open = (reason: string): RoleRule => ({ public: reason });

const RECIPIENT = "recipient link from a sent email, authorised by its signed token";
const PROBE = "probe for load balancers and orchestrators";
const DOCS = "public documentation";
const PROVIDER = "relay provider's event webhook, authenticated by the provider's signature or secret";

/**
 * Every route, "METHOD /url" as registered (HEAD answers as its GET). The table-driven test
 * (roles.test.ts) fails when the gateway registers a route missing here.
 */
export const ROUTE_RULES: Readonly<Record<string, RoleRule>> = {
  // Operations and documentation
  "GET /healthz": open(PROBE),
  "GET /readyz": open(PROBE),
  "GET /metrics": open("Prometheus scrape; MAILROOM_METRICS_TOKEN guards it when set"),
  "GET /openapi.json": open(DOCS),
  "GET /docs": open(DOCS),
  "GET /docs/:page": open(DOCS),
  "GET /docs/errors": open(DOCS),
  "GET /docs/errors/:code": open(DOCS),
  "GET /dev/mail": open("development mail viewer: only with captured mail, only from loopback"),
  "GET /dev/mail/:id": open("development mail viewer: only with captured mail, only from loopback"),
  "GET /dev/mail/:id/raw": open("development mail viewer: only with captured mail, only from loopback"),
  "POST /dev/mail/clear": open("development mail viewer's Clear (double-submit token): only with captured mail, only from loopback"),
  "GET /dev/webhooks": open("development webhook receiver: only with captured mail, only from loopback"),
  "POST /dev/webhooks/:name": open("development webhook receiver: only with captured mail, only from loopback"),

  // Recipients: tracking, unsubscribe, signup forms (DESIGN §9.4)
  "GET /t/o/:token": open(RECIPIENT),
  "GET /t/c/:link/:token": open(RECIPIENT),
  "GET /u/:token": open(RECIPIENT),
  "POST /u/:token": open(RECIPIENT),
  "POST /u/:token/resubscribe": open(RECIPIENT),
  "POST /u/:token/topics": open(RECIPIENT),
  "GET /f/:formId": open("hosted signup form, for anyone"),
  "OPTIONS /f/:formId": open("CORS preflight of a signup form embedded on another site"),
  "POST /f/:formId": open("signup form submission, for anyone (double opt-in confirms it)"),
  "GET /c/:token": open("signup confirmation link, authorised by its signed token"),

  // Relay providers' event webhooks (DESIGN §9.7)
  "POST /webhooks/ses": open(PROVIDER),
  "POST /webhooks/postmark": open(PROVIDER),
  "POST /webhooks/sendgrid": open(PROVIDER),
  "POST /webhooks/mailgun": open(PROVIDER),

  // /v1 with an API key: each keeps the scope it had (api_read = VIEWER, api_user = EDITOR).
  // Emails
  "POST /v1/emails": EDITOR,
  "POST /v1/emails/batch": EDITOR,
  "GET /v1/emails/:id": EDITOR,
  "POST /v1/emails/:id/cancel": EDITOR,
  "GET /v1/emails": VIEWER,
  "GET /v1/emails/export": VIEWER,
  // Contacts, properties, events
  "GET /v1/contacts": VIEWER,
  "POST /v1/contacts": EDITOR,
  "POST /v1/contacts/batch": EDITOR,
  "GET /v1/contacts/search": VIEWER,
  "GET /v1/contacts/export": VIEWER,
  "GET /v1/contacts/:id": VIEWER,
  "PUT /v1/contacts/:id": EDITOR,
  "DELETE /v1/contacts/:id": EDITOR,
  "DELETE /v1/contacts/by-email/:email": EDITOR,
  "GET /v1/contacts/:id/events": VIEWER,
  "GET /v1/contacts/:id/activity": VIEWER,
  "GET /v1/contacts/:id/export": VIEWER,
  "GET /v1/contacts/properties": VIEWER,
  "POST /v1/contact-properties": EDITOR,
  "PUT /v1/contact-properties/:id": EDITOR,
  "POST /v1/events": EDITOR,
  "POST /v1/events/batch": EDITOR,
  // Templates
  "GET /v1/templates": EDITOR,
  "POST /v1/templates": EDITOR,
  "GET /v1/templates/:name": EDITOR,
  "PUT /v1/templates/:name": EDITOR,
  "DELETE /v1/templates/:name": EDITOR,
  "POST /v1/templates/:name/render": EDITOR,
  "POST /v1/templates/:name/check": EDITOR,
  "POST /v1/templates/render": EDITOR,
  "GET /v1/templates/:name/versions": EDITOR,
  "POST /v1/templates/:name/versions/:version/restore": EDITOR,
  "GET /v1/transactional": VIEWER,
  "GET /v1/transactional/:id": VIEWER,
  // Senders and keys (the published client manages keys with an EDITOR key)
  "GET /v1/identities": VIEWER,
  "GET /v1/domains/:id/dmarc": VIEWER,
  "GET /v1/api-keys/check": VIEWER,
  "GET /v1/api-keys/current": VIEWER,
  "GET /v1/workspaces/:workspaceId/api-keys": VIEWER,
  "POST /v1/workspaces/:workspaceId/api-keys": EDITOR,
  "POST /v1/workspaces/:workspaceId/api-keys/:apiKeyId": EDITOR,
  "DELETE /v1/workspaces/:workspaceId/api-keys/:apiKeyId": EDITOR,
  // Outcomes: stats and webhooks
  "GET /v1/stats/emails": EDITOR,
  "GET /v1/broadcasts/:id/stats": EDITOR,
  "POST /v1/webhooks": EDITOR,
  "GET /v1/webhooks": EDITOR,
  "GET /v1/webhooks/:id": EDITOR,
  "POST /v1/webhooks/:id": EDITOR,
  "DELETE /v1/webhooks/:id": EDITOR,
  "POST /v1/webhooks/:id/test": EDITOR,
  "GET /v1/webhooks/:id/deliveries": EDITOR,
  "POST /v1/webhooks/:id/deliveries/:deliveryId/redeliver": EDITOR,
  // Signup forms
  "GET /v1/forms": EDITOR,
  "POST /v1/forms": EDITOR,
  "GET /v1/forms/:id": EDITOR,
  "PATCH /v1/forms/:id": EDITOR,
  "DELETE /v1/forms/:id": EDITOR,
  // Segments
  "POST /v1/segments": EDITOR,
  "GET /v1/segments": VIEWER,
  "GET /v1/segments/:id": VIEWER,
  "PATCH /v1/segments/:id": EDITOR,
  "DELETE /v1/segments/:id": EDITOR,
  "GET /v1/segments/:id/count": VIEWER,
  "GET /v1/segments/:id/contacts": VIEWER,
  // Groups
  "POST /v1/groups": EDITOR,
  "GET /v1/groups": VIEWER,
  "GET /v1/groups/:id": VIEWER,
  "PATCH /v1/groups/:id": EDITOR,
  "DELETE /v1/groups/:id": EDITOR,
  "POST /v1/groups/:id/contacts": EDITOR,
  "DELETE /v1/groups/:id/contacts/:contactId": EDITOR,
  "GET /v1/groups/:id/contacts": VIEWER,
  // Topics
  "GET /v1/topics": VIEWER,
  "POST /v1/topics": EDITOR,
  "GET /v1/topics/:id": VIEWER,
  "PATCH /v1/topics/:id": EDITOR,
  "DELETE /v1/topics/:id": EDITOR,
  "GET /v1/contacts/:id/topics": VIEWER,
  "PUT /v1/contacts/:id/topics": EDITOR,
  // Suppressions (DESIGN §10.3)
  "GET /v1/suppressions": VIEWER,
  "POST /v1/suppressions": EDITOR,
  "DELETE /v1/suppressions/:emailOrDomain": EDITOR,
  "POST /v1/suppressions/import": EDITOR,
  "GET /v1/suppressions/export": VIEWER,
  // Automations
  "POST /v1/automations": EDITOR,
  "GET /v1/automations": VIEWER,
  "GET /v1/automations/:id": VIEWER,
  "PATCH /v1/automations/:id": EDITOR,
  "DELETE /v1/automations/:id": EDITOR,
  "POST /v1/automations/:id/activate": EDITOR,
  "POST /v1/automations/:id/pause": EDITOR,
  "GET /v1/automations/:id/runs": VIEWER,
  "GET /v1/automations/:id/stats": VIEWER,
  "GET /v1/contacts/:id/automation-runs": VIEWER,
  // Broadcasts
  "POST /v1/broadcasts": EDITOR,
  "GET /v1/broadcasts": EDITOR,
  "GET /v1/broadcasts/:id": EDITOR,
  "POST /v1/broadcasts/:id/test": EDITOR,
  "POST /v1/broadcasts/:id/schedule": EDITOR,
  "POST /v1/broadcasts/:id/check": EDITOR,
  "POST /v1/broadcasts/:id/cancel": EDITOR,
  "POST /v1/broadcasts/:id/ab/winner": EDITOR,
  "PATCH /v1/broadcasts/:id": EDITOR,
  // Team (DESIGN §9.9): new routes, so the role rules apply in full.
  "GET /v1/audit-log": ADMIN,
  // Receiving email (DESIGN §10.4): inbound domains and rules are changed by the keys that
  // manage webhooks (api_user, as the console's domains with a key); received mail is read with
  // the key that reads an email (api_user).
  "POST /v1/inbound/domains": EDITOR,
  "GET /v1/inbound/domains": VIEWER,
  "GET /v1/inbound/domains/:id": VIEWER,
  "POST /v1/inbound/domains/:id/verify": EDITOR,
  "DELETE /v1/inbound/domains/:id": EDITOR,
  "POST /v1/inbound/domains/:id/rules": EDITOR,
  "GET /v1/inbound/domains/:id/rules": VIEWER,
  "DELETE /v1/inbound/domains/:id/rules/:ruleId": EDITOR,
  "GET /v1/received-emails": EDITOR,
  "GET /v1/received-emails/:id": EDITOR,
  "GET /v1/received-emails/:id/attachments/:attachmentId": EDITOR,
  "GET /v1/received-emails/:id/raw": EDITOR,

  // The console (/console). Sign-in pages are open; every page behind them needs a session.
  "GET /console/sign-in": open("console sign-in page"),
  "POST /console/sign-in": open("console sign-in (the API key, limited per address)"),
  "POST /console/sign-out": open("ends the caller's own session, if any"),
  "POST /console/sign-in/email": open("asks for a magic link; answers the same whether or not the address is a member"),
  "GET /console/magic/:token": open("magic sign-in link, authorised by its signed single-use token"),
  "POST /console/magic/:token": open("magic sign-in link, authorised by its signed single-use token"),
  "GET /console/oidc/start": open("starts OpenID Connect sign-in at the provider"),
  "GET /console/oidc/callback": open("OpenID Connect redirect back, checked by state, PKCE and the ID token"),
  "GET /console/invite/:token": open("invitation link, authorised by its signed single-use token"),
  "POST /console/invite/:token": open("invitation link, authorised by its signed single-use token"),
  "GET /console": VIEWER,
  "GET /console/": VIEWER,
  // Team (DESIGN §9.9): who may invite, change a role or remove decides ADMIN; changing an
  // OWNER or making one needs OWNER (the accounts unit checks the caller's role, acting_role).
  "GET /console/team": VIEWER,
  "POST /console/team/invite": ADMIN,
  "POST /console/team/:memberId/role": ADMIN,
  "POST /console/team/:memberId/remove": ADMIN,
  "GET /console/audit": ADMIN,
  // Workspace settings: everyone reads them; owners and admins change the name and timezone
  // (the monthly limit stays the operator's).
  "GET /console/settings": VIEWER,
  "POST /console/settings": ADMIN,
  // API keys: everyone sees the list (prefixes only); owners and admins create and revoke,
  // and an api_user key session as through /v1 (the published client manages keys with one).
  "GET /console/keys": VIEWER,
  "POST /console/keys": ADMIN_OR_EDITOR_KEY,
  "POST /console/keys/:keyId/revoke": ADMIN_OR_EDITOR_KEY,
  // One's own sessions ("sign out everywhere")
  "GET /console/sessions": VIEWER,
  "POST /console/sessions/:sessionId/revoke": VIEWER,
  "POST /console/sessions/revoke-all": VIEWER,
  "GET /console/stats": VIEWER,
  // Domains: the workspace's set-up
  "GET /console/domains": VIEWER,
  "POST /console/domains": ADMIN_OR_EDITOR_KEY,
  "GET /console/domains/:domain": VIEWER,
  "POST /console/domains/:domain/verify": ADMIN_OR_EDITOR_KEY,
  // Emails
  "GET /console/emails": VIEWER,
  "GET /console/emails/:id": VIEWER,
  "GET /console/emails/:id/attachments/:index": VIEWER,
  // Receiving email: inbound domains and rules are set-up (as domains); received mail reads as emails do
  "GET /console/inbound": VIEWER,
  "POST /console/inbound": ADMIN_OR_EDITOR_KEY,
  "GET /console/inbound/:id": VIEWER,
  "POST /console/inbound/:id/verify": ADMIN_OR_EDITOR_KEY,
  "POST /console/inbound/:id/delete": ADMIN_OR_EDITOR_KEY,
  "POST /console/inbound/:id/rules": ADMIN_OR_EDITOR_KEY,
  "POST /console/inbound/:id/rules/:ruleId/delete": ADMIN_OR_EDITOR_KEY,
  "GET /console/received": VIEWER,
  "GET /console/received/:id": VIEWER,
  "GET /console/received/:id/attachments/:attachmentId": VIEWER,
  "GET /console/received/:id/raw": VIEWER,
  // Templates, layouts and snippets (DESIGN §10.2)
  "GET /console/templates": VIEWER,
  "POST /console/templates": EDITOR,
  "GET /console/templates/:name": VIEWER,
  "POST /console/templates/:name": EDITOR,
  "POST /console/templates/:name/test": EDITOR,
  "POST /console/templates/:name/preview": EDITOR,
  "POST /console/templates/:name/versions/:version/restore": EDITOR,
  // Broadcasts
  "GET /console/broadcasts": VIEWER,
  "GET /console/broadcasts/new": EDITOR,
  "POST /console/broadcasts": EDITOR,
  "GET /console/broadcasts/:id": VIEWER,
  "POST /console/broadcasts/:id": EDITOR,
  "POST /console/broadcasts/:id/test": EDITOR,
  "POST /console/broadcasts/:id/schedule": EDITOR,
  "POST /console/broadcasts/:id/cancel": EDITOR,
  "POST /console/broadcasts/:id/ab/winner": EDITOR,
  "GET /console/broadcasts/:id/progress.json": VIEWER,
  "GET /console/broadcasts/audience-count.json": VIEWER,
  // Contacts
  "GET /console/contacts": VIEWER,
  "GET /console/contacts/new": EDITOR,
  "POST /console/contacts": EDITOR,
  "GET /console/contacts/import": EDITOR,
  "POST /console/contacts/import": EDITOR,
  "GET /console/contacts/import/:job": VIEWER,
  "POST /console/contacts/import/preview": EDITOR,
  "GET /console/contacts/import/preview/:upload": EDITOR,
  "POST /console/contacts/import/preview/:upload": EDITOR,
  "GET /console/contacts/suppressions": VIEWER,
  "POST /console/contacts/suppressions": EDITOR,
  "GET /console/suppressions": VIEWER,
  "POST /console/suppressions": EDITOR,
  "POST /console/suppressions/remove": EDITOR,
  "GET /console/suppressions/export": VIEWER,
  "GET /console/suppressions/import": EDITOR,
  "POST /console/suppressions/import": EDITOR,
  "GET /console/suppressions/import/:upload": EDITOR,
  "POST /console/suppressions/import/:upload": EDITOR,
  "GET /console/contacts/:id": VIEWER,
  "POST /console/contacts/:id": EDITOR,
  "POST /console/contacts/:id/unsubscribe": EDITOR,
  "POST /console/contacts/:id/resubscribe": EDITOR,
  "POST /console/contacts/:id/delete": EDITOR,
  // Groups
  "GET /console/groups": VIEWER,
  "POST /console/groups": EDITOR,
  "GET /console/groups/:id": VIEWER,
  "POST /console/groups/:id": EDITOR,
  "POST /console/groups/:id/contacts": EDITOR,
  "POST /console/groups/:id/contacts/:contactId/remove": EDITOR,
  "POST /console/groups/:id/delete": EDITOR,
  // Segments
  "GET /console/segments": VIEWER,
  "GET /console/segments/new": EDITOR,
  "GET /console/segments/count.json": VIEWER,
  "POST /console/segments": EDITOR,
  "GET /console/segments/:id": VIEWER,
  "GET /console/segments/:id/edit": EDITOR,
  "POST /console/segments/:id": EDITOR,
  "POST /console/segments/:id/delete": EDITOR,
  // Topics
  "GET /console/topics": VIEWER,
  "POST /console/topics": EDITOR,
  "GET /console/topics/:id": VIEWER,
  "POST /console/topics/:id": EDITOR,
  "POST /console/topics/:id/delete": EDITOR,
  // Signup forms
  "GET /console/forms": VIEWER,
  "GET /console/forms/new": EDITOR,
  "POST /console/forms": EDITOR,
  "GET /console/forms/:id": VIEWER,
  "POST /console/forms/:id": EDITOR,
  "POST /console/forms/:id/delete": EDITOR,
  // Automations
  "GET /console/automations": VIEWER,
  "GET /console/automations/new": EDITOR,
  "POST /console/automations": EDITOR,
  "GET /console/automations/:id/edit": EDITOR,
  "POST /console/automations/:id": EDITOR,
  "GET /console/automations/:id/stats.json": VIEWER,
  "GET /console/automations/:id": VIEWER,
  "POST /console/automations/:id/activate": EDITOR,
  "POST /console/automations/:id/pause": EDITOR,
  "POST /console/automations/:id/delete": EDITOR,
  // Webhooks: the workspace's set-up
  "GET /console/webhooks": VIEWER,
  "POST /console/webhooks": ADMIN_OR_EDITOR_KEY,
  "GET /console/webhooks/:id": VIEWER,
  "POST /console/webhooks/:id/test": ADMIN_OR_EDITOR_KEY,
  "POST /console/webhooks/:id/deliveries/:delivery/redeliver": ADMIN_OR_EDITOR_KEY,
  "POST /console/webhooks/:id/status": ADMIN_OR_EDITOR_KEY,
  "POST /console/webhooks/:id/delete": ADMIN_OR_EDITOR_KEY,
  // Delivery: the delivery process's relays, routes, health and counters across every
  // workspace. That is the operator's, not a tenant's: owners and admins (and keys as high).
  "GET /console/delivery": ADMIN,
};

/** The table's key of a route: HEAD answers as its GET. */
export function routeKey(method: string, url: string): string {
  return `${method === "HEAD" ? "GET" : method} ${url}`;
}

export function ruleFor(method: string, url: string | undefined): RoleRule | undefined {
  return url === undefined ? undefined : ROUTE_RULES[routeKey(method, url)];
}

/** The role a principal must have under a rule; undefined for a public route. */
export function requiredRole(rule: RoleRule, principal: Pick<Principal, "kind">): Role | undefined {
  if (rule.public !== undefined) return undefined;
  return principal.kind === "key" && rule.keys ? rule.keys : rule.role;
}

export function allows(rule: RoleRule, principal: Principal): boolean {
  const needed = requiredRole(rule, principal);
  return needed === undefined || atLeast(principal.role, needed);
}

/**
 * Refuses the request unless its principal may call its route (the one check; see the file's
 * comment). `fallbackScope`: a route missing from the table (only test apps register such:
 * the startup check refuses them elsewhere) keeps its declared scope.
 */
export function requireRole(request: FastifyRequest, principal: Principal, fallbackScope?: string): void {
  const rule = ruleFor(request.method, request.routeOptions.url) ?? { role: fallbackScope === "api_read" ? "VIEWER" : "EDITOR" };
  if (allows(rule, principal)) return;
  const needed = requiredRole(rule, principal)!;
  // A key with no role at all (no api scope) is no key of the public API: a 401 on every /v1 route, as before roles.
  if (principal.kind === "key" && !principal.console && (roleRank(needed) <= roleRank("EDITOR") || principal.role === undefined)) {
    // The /v1 contract: an under-scoped key is a 401, with the message it always had.
    const scope = scopeOfRole(roleRank(needed) <= roleRank("EDITOR") ? needed : "EDITOR");
    const hint = principal.workspaceId ? ` A key with it: npx mailroom -w ${principal.workspaceId} key create --scopes ${scope}` : "";
    throw refusal({ code: "unauthorized", message: `Insufficient scope: this endpoint requires the ${scope} scope.${hint}` });
  }
  throw refusal({
    code: "insufficient_role",
    message: `This needs the ${needed} role or higher; ${principal.kind === "key" ? "this API key's" : "your"} role is ${principal.role ?? "none"}.`,
  });
}

/**
 * Watches routes as they register: a route without a rule is an error at startup (`strict`:
 * development and tests) or a warning logged once (production keeps serving; such a route
 * falls back to its declared scope). Install on the root instance before any route.
 */
export function installRoleRules(app: FastifyInstance, opts: { strict: boolean }): void {
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      if (ruleFor(method, route.url)) continue;
      const message = `route ${method} ${route.url} has no rule in services/http/src/roles.ts (ROUTE_RULES): add the lowest role that may call it, or public with the reason`;
      if (opts.strict) throw new Error(message);
      app.log.warn({ method, url: route.url }, message);
    }
  });
}

/** Routes (as "METHOD /url" keys) that have no rule, for the startup check and the test. */
export function unruledRoutes(routes: Iterable<{ method: string; url: string }>): string[] {
  return [...new Set([...routes].filter((r) => !ruleFor(r.method, r.url)).map((r) => routeKey(r.method, r.url)))];
}

/**
 * For a handler that grants a role (an API key's, a member's): nobody grants above their own
 * role (a key created ADMIN or OWNER needs an ADMIN or OWNER caller).
 */
export function requireMayGrant(principal: Principal, granted: Role): void {
  if (atLeast(principal.role, granted)) return;
  throw refusal({ code: "insufficient_role", message: `Granting the ${granted} role needs the ${granted} role or higher; ${principal.kind === "key" ? "this API key's" : "your"} role is ${principal.role ?? "none"}.` });
}

/** The principal of a console session: a member with their role, or a key session with the key's. */
export function consolePrincipal(session: { kind?: "member" | "key"; role?: string; scopes: readonly string[] }): Principal {
  return { kind: session.kind ?? "key", role: isRole(session.role) ? session.role : roleFromScopes(session.scopes), console: true };
}

/**
 * Whether a principal may call a route (its pattern as registered, e.g. "/console/webhooks"):
 * for pages that show a form or a button only to those who may use it.
 */
export function mayCall(principal: Principal, method: string, url: string): boolean {
  const rule = ruleFor(method, url);
  return rule !== undefined && allows(rule, principal);
}
