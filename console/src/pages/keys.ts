/**
 * The API keys page (/console/keys): the workspace's keys (name, role and scopes, owner,
 * created, last used, revoked), a form to create one (name, role, owner member) whose answer shows the
 * secret once, and a revoke button (with a confirmation) per key.
 *
 *   GET  /keys                   the list, and the create form for those who manage keys
 *   POST /keys                   create: the answer (200, not a redirect) shows the secret once
 *   POST /keys/:keyId/revoke     revoke, 303 back to the list
 *
 * Who: everyone signed in sees the list (prefixes only, never a secret); owners and admins
 * (and an api_user key session, as through /v1) create and revoke (roles.ts). Nobody creates
 * a key above their own role (requireMayGrant) or revokes one above it. The accounts unit
 * decides the rest: an ADMIN key needs an owner who is OWNER or ADMIN, an owner must be an
 * active member; its refusals show on the form.
 *
 * "Last used" is the accounts unit's record of the key's last authentication, to the minute
 * (written at most once a minute per key, not per request). The markup is views/keys.ts; the
 * name is checked with the /v1 route's field (@mailroom/http/api-keys-schema.js).
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ApiKey } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { bodyFromError, invalid, refusal } from "@mailroom/http/errors.js";
import { rpcOptions } from "@mailroom/http/deps.js";
import { API_KEY_NAME_MAX, apiKeyNameSchema } from "@mailroom/http/api-keys-schema.js";
import { ROLES, atLeast, consolePrincipal, requireMayGrant, type Role } from "@mailroom/http/roles.js";
import type { ConsoleDeps } from "../deps.js";
import { csrfField } from "../csrf.js";
import { html, str } from "../form-values.js";
import { consolePage, consoleUrl, type Flash } from "../layout.js";
import { mayPost, roleOf, seeOther, sessionOf, setFlash } from "../session.js";
import type { ConsoleSession } from "../types.js";
import { render } from "../views/html.js";
import { keyCreatedView, keyListView, type KeyFormValues } from "../views/keys.js";

export type { KeyFormValues };

const KEY_ID = /^key_[0-9A-Za-z]{1,64}$/;
const MEMBER_ID = /^mbr_[0-9A-Za-z]{1,64}$/;

/** Key roles the accounts unit knows (OWNER is a member's only), the session's own and below. */
export const grantableKeyRoles = (session: Pick<ConsoleSession, "role">): Role[] =>
  ROLES.filter((r) => r !== "OWNER" && atLeast(session.role, r)).reverse();

/** A key's role as the accounts unit states it, else from its scopes. */
const keyRole = (k: ApiKey): Role => roleOf(k.role) ?? (k.scopes.includes("api_user") ? "EDITOR" : "VIEWER");

/** A refusal of the accounts unit as a message for the form; a 5xx is rethrown (the error page). */
function formMessage(err: unknown): { message: string; status: number } {
  const body = bodyFromError(err);
  if (body.statusCode >= 500) throw err;
  const messages: Record<string, string> = {
    member_not_found: "The owner is no active member of this workspace.",
    invalid_role: body.message,
  };
  return { message: messages[body.code ?? ""] ?? body.message, status: body.statusCode };
}

export function registerKeyPages(scope: FastifyInstance, deps: ConsoleDeps): void {
  const accounts = () => deps.clients.accounts;
  const manages = (session: ConsoleSession) => mayPost(session, "/console/keys");
  const requireManager = (session: ConsoleSession) => {
    if (!manages(session)) throw refusal({ code: "forbidden", status: 403, message: "Only owners and admins manage API keys." });
  };

  const listPage = async (request: FastifyRequest, flash?: Flash, values?: KeyFormValues) => {
    const session = sessionOf(request);
    const opts = rpcOptions(request);
    const [{ apiKeys }, { members }] = await Promise.all([
      accounts().listApiKeys({ workspaceId: session.workspaceId }, opts),
      deps.clients.team.listMembers({ workspaceId: session.workspaceId }, opts),
    ]);
    const owners = new Map(members.map((m) => [m.id, m]));
    const manage = manages(session);
    // Active keys first, each group newest first.
    const sorted = [...apiKeys].sort((a, b) => Number(!!a.revokedAt) - Number(!!b.revokedAt) || Number((b.createdAt?.seconds ?? 0n) - (a.createdAt?.seconds ?? 0n)));
    const roles = grantableKeyRoles(session);
    const body = keyListView({
      rows: sorted.map((k) => ({
        key: k, role: keyRole(k), owner: k.ownerMemberId ? owners.get(k.ownerMemberId) : undefined,
        current: session.kind === "key" && session.keyId === k.id,
        revocable: !k.revokedAt && atLeast(session.role, keyRole(k)),
      })),
      members, manage, roles, csrf: csrfField(session),
      values: values ?? { name: "", role: roles.includes("EDITOR") ? "EDITOR" : "VIEWER", owner: session.memberId ?? "" },
    });
    return consolePage({ title: "API keys", session, active: "keys", flash, body: render(body) });
  };

  scope.get("/keys", async (request, reply) => html(reply, await listPage(request, request.consoleFlash)));

  scope.post("/keys", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const name = str(request.body, "name").trim();
    const role = roleOf(str(request.body, "role"));
    const owner = str(request.body, "owner").trim();
    const values: KeyFormValues = { name: name.slice(0, API_KEY_NAME_MAX), role: role ?? "VIEWER", owner };
    const refuse = async (message: string, status = 400) => html(reply, await listPage(request, { kind: "error", message }, values), status);
    // The name as POST /v1/…/api-keys checks its displayName; the roles are the console's (it also offers ADMIN).
    // (An empty name in the console's words: the form's field is "Name", not /v1's displayName.)
    if (!name) return refuse("Give the key a name.");
    const parsed = apiKeyNameSchema.safeParse(name);
    if (!parsed.success) return refuse(invalid(parsed.error).message);
    if (!role || role === "OWNER") return refuse("Choose one of the roles.");
    if (owner && !MEMBER_ID.test(owner)) return refuse("Choose an owner from the list.");
    // Nobody grants above their own role (a 403 page, as the form never offers it).
    requireMayGrant(consolePrincipal(session), role);
    let created;
    try {
      created = await accounts().createApiKey({ workspaceId: session.workspaceId, name: parsed.data, role, ownerMemberId: owner }, rpcOptions(request));
    } catch (err) {
      const { message, status } = formMessage(err);
      return refuse(message, status);
    }
    const body = keyCreatedView(created.apiKey!, keyRole(created.apiKey!), created.plainKey);
    return html(reply, consolePage({ title: "API key created", session, active: "keys", body: render(body) }));
  });

  scope.post<{ Params: { keyId: string } }>("/keys/:keyId/revoke", async (request, reply) => {
    const session = sessionOf(request);
    requireManager(session);
    const { keyId } = request.params;
    const notFound = () => refusal({ code: "api_key_not_found", status: 404, message: "This workspace has no active key with this id." });
    if (!KEY_ID.test(keyId)) throw notFound();
    let key: ApiKey | undefined;
    try {
      key = (await accounts().getApiKey({ workspaceId: session.workspaceId, keyId }, rpcOptions(request))).apiKey;
    } catch (err) {
      if (bodyFromError(err).statusCode === 404) throw notFound();
      throw err;
    }
    if (!key || key.workspaceId !== session.workspaceId) throw notFound();
    if (!atLeast(session.role, keyRole(key))) {
      throw refusal({ code: "insufficient_role", status: 403, message: `Revoking an ${keyRole(key)} key needs the ${keyRole(key)} role or higher; your role is ${session.role}.` });
    }
    await accounts().revokeApiKey({ workspaceId: session.workspaceId, keyId }, rpcOptions(request));
    setFlash(reply, { kind: "ok", message: `The key ${key.name || key.prefix} is revoked: it no longer works.` });
    // A session signed in with this very key ends with it.
    if (session.kind === "key" && session.keyId === keyId) {
      deps.sessions.end(reply);
      return seeOther(reply, consoleUrl("/sign-in"));
    }
    return seeOther(reply, consoleUrl("/keys"));
  });
}
