import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * The role rules over the real accounts, audience and gateway units (issue 32): keys from
 * before roles keep exactly their access (api_user = EDITOR, api_read = VIEWER, the same 401
 * when under-scoped); a key with an owner acts with the lower of its role and the owner's,
 * follows the owner's role changes and stops with the owner's removal; the audit log needs
 * ADMIN (403 insufficient_role); in the console a member acts with their role.
 */
const WS = "ws_roles";
const USER_KEY = "mr_test_roles_user_0123456789";
const READ_KEY = "mr_test_roles_read_0123456789";
const OWNER = "owner@roles.test";
const EDITOR = "editor@roles.test";
const VIEWER = "viewer@roles.test";
const WRITER = "writer@roles.test";

describe("role rules over the real system", () => {
  let sys: TestSystem;
  const team = () => connectClient(TeamService, `http://127.0.0.1:${sys.ports.accounts}`);
  const accounts = () => connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`);
  const memberId = async (email: string) => (await team().listMembers({ workspaceId: WS })).members.find((m) => m.email === email)!.id;
  let n = 0;
  const newContact = (key: string) => sys.api("POST", "/v1/contacts", { key, body: { properties: { email: `c${++n}@example.test` } } });

  /** A browser signed in as a member through a magic link: cookies kept, forms posted with the page's CSRF token. */
  async function memberBrowser(email: string) {
    const jar = new Map<string, string>();
    const keep = (res: Response) => {
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(";");
        const i = pair!.indexOf("=");
        jar.set(pair!.slice(0, i), pair!.slice(i + 1));
      }
      return res;
    };
    const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    const csrfOf = (html: string) => html.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const get = async (path: string) => {
      const res = keep(await fetch(`${sys.gatewayUrl}${path}`, { headers: { cookie: cookie() }, redirect: "manual" }));
      return { status: res.status, html: await res.text() };
    };
    const post = async (path: string, form: Record<string, string>) => {
      const res = keep(await fetch(`${sys.gatewayUrl}${path}`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie(), origin: sys.gatewayUrl },
        body: new URLSearchParams(form).toString(),
      }));
      return { status: res.status, html: await res.text() };
    };
    const { token } = await team().startMagicLink({ email, workspaceId: WS });
    const landing = await get(`/console/magic/${encodeURIComponent(token)}`);
    const signedIn = await post(`/console/magic/${encodeURIComponent(token)}`, { _csrf: csrfOf(landing.html) });
    expect(signedIn.status, signedIn.html).toBe(303);
    return { get, post, csrfOf };
  }

  beforeAll(async () => {
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      // Role changes take effect on the next request (no cached key answers).
      bootstrap: {
        workspaces: [{
          id: WS, name: "Roles Co", timezone: "UTC", verifiedDomains: ["roles.test"], monthlyLimit: 1000,
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          apiKeys: [{ key: USER_KEY, scopes: ["api_user"], name: "user" }, { key: READ_KEY, scopes: ["api_read"], name: "read" }],
          members: [{ email: OWNER, role: "OWNER" }, { email: EDITOR, role: "EDITOR" }, { email: VIEWER, role: "VIEWER" }, { email: WRITER, role: "EDITOR" }],
        }],
      },
    });
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("keys from before roles keep their access: api_user changes, api_read reads and gets today's 401 for a change", async () => {
    expect((await newContact(USER_KEY)).status).toBe(201);
    expect((await sys.api("GET", "/v1/contacts", { key: READ_KEY })).status).toBe(200);
    const refused = await newContact(READ_KEY);
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ code: "unauthorized", message: expect.stringMatching(/^Insufficient scope: this endpoint requires the api_user scope\. A key with it: npx mailroom -w ws_roles key create --scopes api_user/) });
  });

  it("the audit log needs ADMIN: an EDITOR or VIEWER key gets 403 insufficient_role naming the role", async () => {
    for (const [key, role] of [[USER_KEY, "EDITOR"], [READ_KEY, "VIEWER"]] as const) {
      const res = await sys.api("GET", "/v1/audit-log", { key });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: "insufficient_role", message: expect.stringContaining(`This needs the ADMIN role or higher; this API key's role is ${role}.`) });
    }
  });

  it("a key with an owner acts with the lower of its role and the owner's, and stops when the owner is removed", async () => {
    const owner = await memberId(EDITOR);
    const { plainKey } = await accounts().createApiKey({ workspaceId: WS, name: "editor's key", role: "EDITOR", ownerMemberId: owner });
    expect((await newContact(plainKey)).status).toBe(201);

    await team().updateMemberRole({ workspaceId: WS, memberId: owner, role: "VIEWER" });
    expect((await sys.api("GET", "/v1/contacts", { key: plainKey })).status).toBe(200);
    expect((await newContact(plainKey)).status).toBe(401);

    // Promoted above the key's own role: still the key's EDITOR, never the owner's ADMIN.
    await team().updateMemberRole({ workspaceId: WS, memberId: owner, role: "ADMIN" });
    expect((await newContact(plainKey)).status).toBe(201);
    expect((await sys.api("GET", "/v1/audit-log", { key: plainKey })).status).toBe(403);

    await team().removeTeamMember({ workspaceId: WS, memberId: owner });
    const gone = await sys.api("GET", "/v1/contacts", { key: plainKey });
    expect(gone.status).toBe(401);
    expect(gone.body.message).toBe("Invalid API key");
  });

  it("in the console a member acts with their role: a VIEWER reads but changes nothing, an EDITOR changes content but not webhooks or domains, the owner reads the audit log", async () => {
    const viewer = await memberBrowser(VIEWER);
    const topics = await viewer.get("/console/topics");
    expect(topics.status).toBe(200);
    const refused = await viewer.post("/console/topics", { _csrf: viewer.csrfOf(topics.html), name: "Nope", description: "", defaultSubscription: "OPT_IN" });
    expect(refused.status).toBe(403);
    expect(refused.html).toContain("This needs the EDITOR role or higher; your role is VIEWER.");
    expect((await viewer.get("/console/audit")).status).toBe(403);

    // An EDITOR member changes content but not the workspace's set-up (webhooks, domains: ADMIN).
    const writer = await memberBrowser(WRITER);
    // (The webhooks unit is not running: the refusal comes before any call to it.)
    const hooks = await writer.get("/console/topics");
    const hook = await writer.post("/console/webhooks", { _csrf: writer.csrfOf(hooks.html), url: "https://hooks.example.test/in" });
    expect(hook.status).toBe(403);
    expect(hook.html).toContain("This needs the ADMIN role or higher; your role is EDITOR.");
    const domain = await writer.post("/console/domains", { _csrf: writer.csrfOf(hooks.html), domain: "other.test" });
    expect(domain.status).toBe(403);
    // …and its pages do not offer what it would be refused (no form leads to a 403 page).
    const writerDomains = await writer.get("/console/domains");
    expect(writerDomains.status).toBe(200);
    expect(writerDomains.html).not.toContain('action="/console/domains"');
    const writerTopics = await writer.get("/console/topics");
    expect((await writer.post("/console/topics", { _csrf: writer.csrfOf(writerTopics.html), name: "Writers", description: "", defaultSubscription: "OPT_IN" })).status).toBe(303);

    const owner = await memberBrowser(OWNER);
    expect((await owner.get("/console/audit")).status).toBe(200);
    expect((await owner.get("/console/domains")).html).toContain('action="/console/domains"');
    const page = await owner.get("/console/topics");
    const created = await owner.post("/console/topics", { _csrf: owner.csrfOf(page.html), name: "News", description: "", defaultSubscription: "OPT_IN" });
    expect(created.status, created.html).toBe(303);
  });
});
