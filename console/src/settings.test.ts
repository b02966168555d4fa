import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { AccountsService, ApiKeySchema, WorkspaceSchema, type UpdateWorkspaceRequest, type Workspace } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService } from "@mailroom/proto/accounts/v1/team_pb.js";
import { memoryTransport } from "@mailroom/kit/connect.js";
import { appError } from "@mailroom/kit/errors.js";
import { consoleGateway, csrfOf, Jar, type ConsoleBrowser } from "./sign-in-testing.js";
import { mayPost } from "./session.js";
import { checkSettings } from "./pages/settings.js";
import type { ConsoleSession } from "./types.js";

/**
 * The workspace settings page over an in-memory AccountsService keeping UpdateWorkspace's contract
 * (name at most 200 characters, an IANA timezone): the form for owners and admins, the
 * refusals on the form, the limit and usage read only, and no form for other roles.
 */
const WS = "ws_settings";
const PLAIN: Record<string, { id: string; role: string; scopes: string[] }> = {
  mr_test_settings_admin: { id: "key_admin", role: "ADMIN", scopes: ["api_user", "admin"] },
  mr_test_settings_editor: { id: "key_editor", role: "EDITOR", scopes: ["api_user"] },
  mr_test_settings_viewer: { id: "key_viewer", role: "VIEWER", scopes: ["api_read"] },
};
let workspace: Workspace;
let updates: UpdateWorkspaceRequest[];

function reset() {
  updates = [];
  workspace = create(WorkspaceSchema, {
    id: WS, name: "Acme <Ops>", timezone: "Europe/Paris", monthlyLimit: 100_000n,
    createdAt: timestampFromDate(new Date(Date.UTC(2030, 0, 1))),
  });
}

const transport = memoryTransport(({ service }) => {
  service(AccountsService, {
    authenticate(req) {
      const k = PLAIN[req.apiKey];
      if (!k) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: WS, keyId: k.id, scopes: k.scopes };
    },
    getApiKey(req) {
      const k = Object.values(PLAIN).find((p) => p.id === req.keyId);
      if (!k) throw appError({ code: "api_key_not_found", httpStatus: 404, message: "API key not found" });
      return { apiKey: create(ApiKeySchema, { id: k.id, workspaceId: WS, name: k.id, role: k.role, scopes: k.scopes }) };
    },
    getWorkspace: () => ({ workspace }),
    getUsage: () => ({ used: 81_234n, limit: workspace.monthlyLimit, period: "2030-01" }),
    updateWorkspace(req) {
      updates.push(req);
      if (req.monthlyLimit !== undefined) throw new Error("the console must never send the limit");
      if (req.name !== undefined && (!req.name.trim() || req.name.length > 200)) {
        throw appError({ code: "invalid_request", httpStatus: 400, message: "workspace name is required (at most 200 characters)" });
      }
      // A zone this runtime knows but the accounts unit's (an older tz database, say) would not.
      if (req.timezone === "Antarctica/Troll") throw appError({ code: "invalid_timezone", httpStatus: 400, message: 'timezone "Antarctica/Troll" is not an IANA time zone (e.g. "Europe/Paris")' });
      workspace = create(WorkspaceSchema, { ...workspace, name: req.name ?? workspace.name, timezone: req.timezone ?? workspace.timezone });
      return { workspace };
    },
  });
  service(TeamService, { listMembers: () => ({ members: [] }) });
});

describe("console: workspace settings", () => {
  let browser: ConsoleBrowser;

  beforeAll(async () => {
    browser = await consoleGateway(transport, { secret: "console-settings-test-secret-0123456789ab", name: "console-settings-test", authCacheMs: 0 });
  });
  beforeEach(reset);

  async function signIn(apiKey: string): Promise<Jar> {
    const jar = new Jar();
    const page = await browser.get("/console/sign-in", jar);
    const res = await browser.post("/console/sign-in", jar, { _csrf: csrfOf(page.body), apiKey, next: "/console/settings" });
    expect(res.statusCode).toBe(303);
    return jar;
  }

  it("shows the name, timezone, limit, usage, tracking and system sender, linked from the nav", async () => {
    const jar = await signIn("mr_test_settings_admin");
    const res = await browser.get("/console/settings", jar);
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(/<a href="\/console\/settings" aria-current="page">Settings<\/a>/);
    expect(res.body).toContain('id="settings-form"');
    expect(res.body).toContain('value="Acme &lt;Ops&gt;"');
    expect(res.body).not.toContain("Acme <Ops>");
    expect(res.body).toContain('value="Europe/Paris"');
    expect(res.body).toContain('<option value="America/New_York">');
    expect(res.body).toContain("81,234 of <strong>100,000</strong> emails sent in 2030-01");
    expect(res.body).toContain("81% used");
    // The limit is shown, never a field of the form.
    expect(res.body).not.toMatch(/name="monthlyLimit"|name="limit"/);
    expect(res.body).toContain("Mailroom &lt;signin@mailroom.test&gt;");
    expect(res.body).toContain("Opens</dt>");
  });

  it("saves the name and timezone through UpdateWorkspace, and the header shows the new name", async () => {
    const jar = await signIn("mr_test_settings_admin");
    const page = await browser.get("/console/settings", jar);
    const res = await browser.post("/console/settings", jar, { _csrf: csrfOf(page.body), name: "  Acme EU  ", timezone: "America/New_York" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/console/settings");
    expect(updates).toEqual([expect.objectContaining({ workspaceId: WS, name: "Acme EU", timezone: "America/New_York" })]);
    expect(updates[0].monthlyLimit).toBeUndefined();
    const after = await browser.get("/console/settings", jar);
    expect(after.body).toContain("Settings saved.");
    expect(after.body).toContain('value="America/New_York"');
    expect(after.body).toContain("Workspace: <strong>Acme EU</strong>");
  });

  it("shows a bad timezone or name on the form with what was typed, never a 500", async () => {
    const jar = await signIn("mr_test_settings_admin");
    const csrf = csrfOf((await browser.get("/console/settings", jar)).body);
    const zone = await browser.post("/console/settings", jar, { _csrf: csrf, name: "Acme", timezone: "Europe/Atlantis<b>" });
    expect(zone.statusCode).toBe(400);
    expect(zone.body).toMatch(/class="flash error" role="alert" id="settings-error">&quot;Europe\/Atlantis&lt;b&gt;&quot; is not an IANA time zone/);
    expect(zone.body).toMatch(/id="ws-tz"[^>]*value="Europe\/Atlantis&lt;b&gt;"[^>]*aria-invalid="true"/);
    const empty = await browser.post("/console/settings", jar, { _csrf: csrf, name: "  ", timezone: "UTC" });
    expect(empty.statusCode).toBe(400);
    expect(empty.body).toContain("Give the workspace a name.");
    expect(updates).toHaveLength(0);
    // The accounts unit's own refusal is on the form too, against its field.
    const refused = await browser.post("/console/settings", jar, { _csrf: csrf, name: "Acme", timezone: "Antarctica/Troll" });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("is not an IANA time zone (e.g. &quot;Europe/Paris&quot;)");
    expect(refused.body).toMatch(/id="ws-tz"[^>]*value="Antarctica\/Troll"[^>]*aria-invalid="true"/);
  });

  it("refuses a post without the CSRF token", async () => {
    const jar = await signIn("mr_test_settings_admin");
    const res = await browser.post("/console/settings", jar, { name: "Evil", timezone: "UTC" });
    expect(res.statusCode).toBe(403);
    expect(updates).toHaveLength(0);
  });

  it("shows editors and viewers the settings without a form, and refuses their posts", async () => {
    for (const apiKey of ["mr_test_settings_editor", "mr_test_settings_viewer"]) {
      const jar = await signIn(apiKey);
      const page = await browser.get("/console/settings", jar);
      expect(page.statusCode).toBe(200);
      expect(page.body).not.toContain('id="settings-form"');
      expect(page.body).toContain("Only owners and admins change the workspace's settings.");
      expect(page.body).toContain("Europe/Paris");
      const posted = await browser.post("/console/settings", jar, { _csrf: csrfOf(page.body), name: "x", timezone: "UTC" });
      expect(posted.statusCode).toBe(403);
    }
    expect(updates).toHaveLength(0);
  });

  it("offers the form to owner and admin members only (roles.ts), and checks as the accounts unit does", () => {
    const member = (role: ConsoleSession["role"]) => ({ kind: "member", role, scopes: role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"], canEdit: role !== "VIEWER" }) as ConsoleSession;
    expect(mayPost(member("OWNER"), "/console/settings")).toBe(true);
    expect(mayPost(member("ADMIN"), "/console/settings")).toBe(true);
    expect(mayPost(member("EDITOR"), "/console/settings")).toBe(false);
    expect(mayPost(member("VIEWER"), "/console/settings")).toBe(false);
    expect(checkSettings({ name: "Acme", timezone: "UTC" })).toBeUndefined();
    expect(checkSettings({ name: "Acme", timezone: "Asia/Kolkata" })).toBeUndefined();
    expect(checkSettings({ name: "Acme", timezone: "+02:00" })?.field).toBe("timezone");
    expect(checkSettings({ name: "x".repeat(201), timezone: "UTC" })?.field).toBe("name");
  });
});
