import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountsService, ApiKeySchema, type ApiKey, type CreateApiKeyRequest } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { mayPost } from "./session.js";
import { grantableKeyRoles } from "./pages/keys.js";
import type { ConsoleSession } from "./types.js";

/**
 * The API keys page over an in-memory AccountsService keeping the key RPCs' contract: the list
 * (owner by address, role and scopes, revoked ones), creation with the secret shown once,
 * the accounts unit's refusals on the form, revocation, and who sees the forms.
 */
const WS = "ws_keys";
const OWNER = { id: "mbr_owner", workspaceId: WS, email: "owner@acme.test", role: "OWNER", status: "ACTIVE" };
const EDITOR_MEMBER = { id: "mbr_editor", workspaceId: WS, email: "ed<i>tor@acme.test", role: "EDITOR", status: "ACTIVE" };

/** Plain key → key id, as authenticate finds them. */
const PLAIN: Record<string, string> = { mr_test_keys_admin: "key_admin", mr_test_keys_editor: "key_editor", mr_test_keys_viewer: "key_viewer" };
let keys: Map<string, ApiKey>;
let created: CreateApiKeyRequest[];
let serial = 0;

const key = (id: string, name: string, role: string, owner = "", minute = 0) => create(ApiKeySchema, {
  id, workspaceId: WS, name, prefix: `mr_live_${id.slice(4, 8)}`, role, ownerMemberId: owner,
  scopes: role === "ADMIN" ? ["api_user", "admin"] : role === "EDITOR" ? ["api_user"] : ["api_read"],
  createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1, 12, minute))),
});

function reset() {
  created = [];
  keys = new Map([
    ["key_admin", key("key_admin", "Admin <ops>", "ADMIN", OWNER.id, 1)],
    ["key_editor", create(ApiKeySchema, { ...key("key_editor", "Server", "EDITOR", "", 2), lastUsedAt: timestampFromDate(new Date(Date.UTC(2030, 0, 5, 9, 30))) })],
    ["key_viewer", key("key_viewer", "Dashboard", "VIEWER", EDITOR_MEMBER.id, 3)],
    ["key_old", create(ApiKeySchema, { ...key("key_old", "Old", "EDITOR", "", 0), revokedAt: timestampFromDate(new Date(Date.UTC(2030, 0, 2))) })],
  ]);
}

const notFound = () => appError({ code: "api_key_not_found", httpStatus: 404, message: "API key not found" });

const transport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const id = PLAIN[req.apiKey];
      const k = id ? keys.get(id) : undefined;
      if (!k || k.revokedAt) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: WS, keyId: k.id, scopes: k.scopes };
    },
    getWorkspace: (req) => ({ workspace: { id: req.workspaceId, name: "Acme" } }),
    getApiKey(req) {
      const k = keys.get(req.keyId);
      if (!k || k.revokedAt || req.workspaceId !== WS) throw notFound();
      return { apiKey: k };
    },
    listApiKeys: (req) => ({ apiKeys: req.workspaceId === WS ? [...keys.values()] : [] }),
    createApiKey(req) {
      created.push(req);
      if (req.ownerMemberId && ![OWNER.id, EDITOR_MEMBER.id].includes(req.ownerMemberId)) {
        throw appError({ code: "member_not_found", httpStatus: 404, message: `Member ${req.ownerMemberId} is no active member of this workspace` });
      }
      if (req.role === "ADMIN" && req.ownerMemberId !== OWNER.id) {
        throw appError({ code: "invalid_role", httpStatus: 400, message: "role ADMIN needs an owner who is OWNER or ADMIN" });
      }
      const k = key(`key_new${++serial}`, req.name, req.role, req.ownerMemberId, 9);
      keys.set(k.id, k);
      return { apiKey: k, plainKey: `mr_live_SECRET${serial}<x>` };
    },
    revokeApiKey(req) {
      const k = keys.get(req.keyId);
      if (!k) throw notFound();
      const revoked = create(ApiKeySchema, { ...k, revokedAt: timestampFromDate(new Date()) });
      keys.set(k.id, revoked);
      return { apiKey: revoked };
    },
  });
  service(TeamService, { listMembers: () => ({ members: [OWNER, EDITOR_MEMBER] }) });
});


describe("console: API keys", () => {
  let browser: ConsoleBrowser;

  beforeAll(async () => {
    browser = await consoleGateway(transport, { secret: "console-keys-test-secret-0123456789abcdef", name: "console-keys-test", authCacheMs: 0 });
  });
  beforeEach(reset);

  async function signIn(apiKey: string): Promise<Jar> {
    const jar = new Jar();
    const page = await browser.get("/console/sign-in", jar);
    const res = await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey, next: "/console/keys" });
    expect(res.statusCode).toBe(303);
    return jar;
  }
  const keyRow = (html: string, id: string) => new RegExp(`<tr data-key="${id}">[\\s\\S]*?</tr>`).exec(html)?.[0] ?? "";

  it("lists every key with its role, scopes, owner, creation and status, linked from the nav", async () => {
    const jar = await signIn("mr_test_keys_admin");
    const res = await browser.get("/console/keys", jar);
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/<a href="\/console\/keys" aria-current="page">API keys<\/a>/);
    const admin = keyRow(res.body, "key_admin");
    expect(admin).toContain("Admin &lt;ops&gt;");
    expect(admin).not.toContain("<ops>");
    expect(admin).toMatch(/ADMIN<br><span class="muted">api_user, admin/);
    expect(admin).toContain("owner@acme.test");
    expect(admin).toContain("2030-01-01T12:01:00.000Z");
    expect(admin).toContain("This session");
    expect(keyRow(res.body, "key_viewer")).toContain("ed&lt;i&gt;tor@acme.test");
    expect(keyRow(res.body, "key_editor")).toMatch(/Owner">\s*<span class="muted">none/);
    // When each key was last used, as the accounts unit recorded it; "Never" for one it has no use of.
    expect(res.body).toContain("<th>Last used</th>");
    expect(res.body).not.toContain("does not record when a key was last used");
    expect(keyRow(res.body, "key_editor")).toContain(`data-label="Last used" data-last-used><time datetime="2030-01-05T09:30:00.000Z">`);
    expect(keyRow(res.body, "key_viewer")).toMatch(/data-label="Last used" data-last-used><span class="muted">Never/);
    const old = keyRow(res.body, "key_old");
    expect(old).toContain("Revoked");
    expect(old).not.toContain("/revoke");
    // Active keys first, the revoked one last; never a secret.
    expect(res.body.indexOf('data-key="key_old"')).toBeGreaterThan(res.body.indexOf('data-key="key_admin"'));
    expect(res.body).not.toContain("SECRET");
  });

  it("creates a key and shows its secret once, on the answer only", async () => {
    const jar = await signIn("mr_test_keys_admin");
    const page = await browser.get("/console/keys", jar);
    expect(page.body).toContain('id="create-key"');
    // An ADMIN session may grant up to ADMIN, never OWNER; the members are the owners offered.
    expect([...page.body.matchAll(/<option value="(ADMIN|EDITOR|VIEWER|OWNER)"/g)].map((m) => m[1])).toEqual(["ADMIN", "EDITOR", "VIEWER"]);
    expect(page.body).toContain('<option value="mbr_owner"');
    const res = await browser.post("/console/keys", jar, { _csrf: csrfOf(page.body), name: " CI <runner> ", role: "EDITOR", owner: "mbr_owner" });
    expect(res.statusCode).toBe(200);
    expect(created).toEqual([expect.objectContaining({ workspaceId: WS, name: "CI <runner>", role: "EDITOR", ownerMemberId: "mbr_owner" })]);
    expect(res.body).toContain('<code class="value" id="key-secret">mr_live_SECRET');
    expect(res.body).toContain("&lt;x&gt;");
    expect(res.body).not.toContain("SECRET1<x>");
    expect(res.body).toContain("CI &lt;runner&gt;");
    expect(res.headers["cache-control"]).toBe("no-store");
    // Never again: the list shows the key without its secret.
    const after = await browser.get("/console/keys", jar);
    expect(after.body).toContain("CI &lt;runner&gt;");
    expect(after.body).not.toContain("SECRET");
  });

  it("shows a refused creation on the form with what was typed, never a 500", async () => {
    const jar = await signIn("mr_test_keys_admin");
    const csrf = csrfOf((await browser.get("/console/keys", jar)).body);
    const refused = await browser.post("/console/keys", jar, { _csrf: csrf, name: "Audit reader", role: "ADMIN", owner: "" });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toMatch(/class="flash error" role="alert">role ADMIN needs an owner/);
    expect(refused.body).toContain('value="Audit reader"');
    expect(refused.body).toContain('<option value="ADMIN" selected');
    const noName = await browser.post("/console/keys", jar, { _csrf: csrf, name: "  ", role: "EDITOR", owner: "" });
    expect(noName.statusCode).toBe(400);
    // The name is checked as POST /v1/…/api-keys checks displayName, with its message.
    expect(noName.body).toMatch(/class="flash error" role="alert">Give the key a name\./);
    const goneOwner = await browser.post("/console/keys", jar, { _csrf: csrf, name: "x", role: "EDITOR", owner: "mbr_gone" });
    expect(goneOwner.statusCode).toBe(404);
    expect(goneOwner.body).toContain("The owner is no active member of this workspace.");
    expect(created).toHaveLength(2);
  });

  it("revokes a key after a confirmation, and refuses a form without the CSRF token", async () => {
    const jar = await signIn("mr_test_keys_admin");
    const page = await browser.get("/console/keys", jar);
    expect(keyRow(page.body, "key_editor")).toMatch(/<form method="post" action="\/console\/keys\/key_editor\/revoke" data-confirm="Revoke the key Server\?/);
    const forged = await browser.post("/console/keys/key_editor/revoke", jar, {});
    expect(forged.statusCode).toBe(403);
    expect(keys.get("key_editor")!.revokedAt).toBeUndefined();
    const res = await browser.post("/console/keys/key_editor/revoke", jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/keys");
    expect(keys.get("key_editor")!.revokedAt).toBeDefined();
    const after = await browser.get("/console/keys", jar);
    expect(after.body).toContain("The key Server is revoked");
    expect(keyRow(after.body, "key_editor")).toContain("Revoked");
    const again = await browser.post("/console/keys/key_editor/revoke", jar, { _csrf: csrfOf(page.body) });
    expect(again.statusCode).toBe(404);
  });

  it("lets an api_user key session manage keys up to EDITOR only, and shows a read-only session no form", async () => {
    const editor = await signIn("mr_test_keys_editor");
    const page = await browser.get("/console/keys", editor);
    expect([...page.body.matchAll(/<option value="(ADMIN|EDITOR|VIEWER)"/g)].map((m) => m[1])).toEqual(["EDITOR", "VIEWER"]);
    // The ADMIN key is above this session: no revoke button, and a forged post is refused.
    expect(keyRow(page.body, "key_admin")).not.toContain("/revoke");
    const above = await browser.post("/console/keys/key_admin/revoke", editor, { _csrf: csrfOf(page.body) });
    expect(above.statusCode).toBe(403);
    const grant = await browser.post("/console/keys", editor, { _csrf: csrfOf(page.body), name: "x", role: "ADMIN", owner: "mbr_owner" });
    expect(grant.statusCode).toBe(403);
    expect(created).toHaveLength(0);
    expect(keys.get("key_admin")!.revokedAt).toBeUndefined();

    const viewer = await signIn("mr_test_keys_viewer");
    const seen = await browser.get("/console/keys", viewer);
    expect(seen.statusCode).toBe(200);
    expect(seen.body).toContain('data-key="key_admin"');
    expect(seen.body).not.toContain('id="create-key"');
    expect(seen.body).not.toContain("/revoke");
    expect(seen.body).toContain("Only owners and admins create and revoke keys.");
    const posted = await browser.post("/console/keys", viewer, { _csrf: csrfOf(seen.body), name: "x", role: "VIEWER", owner: "" });
    expect(posted.statusCode).toBe(403);
  });

  it("ends the session of the key it revokes", async () => {
    const jar = await signIn("mr_test_keys_editor");
    const page = await browser.get("/console/keys", jar);
    const res = await browser.post("/console/keys/key_editor/revoke", jar, { _csrf: csrfOf(page.body) });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/sign-in");
    expect(jar.signedIn).toBe(false);
  });

  it("offers the forms to owner and admin members only (roles.ts)", () => {
    const member = (role: ConsoleSession["role"]) => ({ kind: "member", role, scopes: role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"], canEdit: role !== "VIEWER" }) as ConsoleSession;
    for (const route of ["/console/keys", "/console/keys/:keyId/revoke"]) {
      expect(mayPost(member("OWNER"), route)).toBe(true);
      expect(mayPost(member("ADMIN"), route)).toBe(true);
      expect(mayPost(member("EDITOR"), route)).toBe(false);
      expect(mayPost(member("VIEWER"), route)).toBe(false);
    }
    expect(grantableKeyRoles(member("OWNER"))).toEqual(["ADMIN", "EDITOR", "VIEWER"]);
    expect(grantableKeyRoles(member("EDITOR"))).toEqual(["EDITOR", "VIEWER"]);
  });
});

