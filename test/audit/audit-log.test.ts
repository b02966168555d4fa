import { userInfo } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectClient } from "@mailroom/kit";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TeamService, type AuditEntry } from "@mailroom/proto/accounts/v1/team_pb.js";
import { runCli } from "../../cli/program.js";
import { type TestSystem } from "../harness/system.js";
import { useSystem } from "../harness/shared-system.js";

/**
 * The audit log over the real units (accounts, audience, gateway; real NATS JetStream): a change made
 * through the API, the console (a member's session and a key's) and the CLI is recorded once,
 * under the right actor and request id, with the changed fields and no secret; reads are not
 * recorded; the log pages and filters; GET /v1/audit-log refuses keys below ADMIN.
 */
const WS = "ws_audit";
const KEY = "mr_test_audit_key_0123456789";
const OWNER_EMAIL = "owner@audit.test";
const SECOND_OWNER = "second-owner@audit.test";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("audit log: one entry per change, with its actor", () => {
  let sys: TestSystem;
  let keyId: string;
  const team = () => connectClient(TeamService, `http://127.0.0.1:${sys.ports.accounts}`);
  /** Where the CLI finds the accounts and audience units. */
  const cliUrls = () => ({ MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${sys.ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${sys.ports.audience}` });

  /** The workspace's whole log (newest first). */
  async function log(): Promise<AuditEntry[]> {
    const all: AuditEntry[] = [];
    let pageToken = "";
    do {
      const res = await team().listAuditLog({ workspaceId: WS, pageToken, limit: 500 });
      all.push(...res.entries);
      pageToken = res.nextPageToken;
    } while (pageToken);
    return all;
  }

  /** The entries made under `requestId`, once at least `count` are stored (the hand-over is asynchronous). */
  async function entriesOf(requestId: string, count = 1): Promise<AuditEntry[]> {
    for (let i = 0; i < 200; i++) {
      const found = (await log()).filter((e) => e.requestId === requestId);
      if (found.length >= count) {
        await sleep(300); // …and no second one arrives
        return (await log()).filter((e) => e.requestId === requestId);
      }
      await sleep(50);
    }
    throw new Error(`no audit entry for request ${requestId}\n--- accounts log ---\n${await sys.log("accounts", 40)}`);
  }

  /** A browser: cookies kept, forms posted with the page's CSRF token. */
  function browser() {
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
    return {
      async get(path: string) {
        const res = keep(await fetch(`${sys.gatewayUrl}${path}`, { headers: { cookie: cookie() }, redirect: "manual" }));
        return { status: res.status, html: await res.text() };
      },
      async post(path: string, form: Record<string, string>, requestId?: string) {
        const res = keep(await fetch(`${sys.gatewayUrl}${path}`, {
          method: "POST",
          redirect: "manual",
          headers: { "content-type": "application/x-www-form-urlencoded", cookie: cookie(), origin: sys.gatewayUrl, ...(requestId ? { "x-request-id": requestId } : {}) },
          body: new URLSearchParams(form).toString(),
        }));
        return { status: res.status, html: await res.text() };
      },
      csrfOf,
    };
  }

  beforeAll(async () => {
    sys = await useSystem({
      smtp: false,
      units: ["accounts", "audience", "renderer", "email", "delivery", "gateway"],
      bootstrap: {
        workspaces: [{
          id: WS, name: "Audit Co", timezone: "UTC", verifiedDomains: ["audit.test"], monthlyLimit: 1000,
          flags: { broadcastEarlyAccess: false, emailApiAddon: false, verified: true },
          apiKeys: [{ key: KEY, scopes: ["api_user"], name: "audit-key" }],
          members: [{ email: OWNER_EMAIL, role: "OWNER" }, { email: SECOND_OWNER, role: "OWNER" }],
        }],
      },
    });
    keyId = (await connectClient(AccountsService, `http://127.0.0.1:${sys.ports.accounts}`).authenticate({ apiKey: KEY })).keyId;
  }, 120_000);
  afterAll(async () => sys?.stop());

  it("an API change is one entry by the key, with the request id and the changed fields; a read is none", async () => {
    const created = await sys.api("POST", "/v1/contacts", { key: KEY, body: { properties: { email: "ada@example.test", firstName: "Ada" } } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const contactId = created.body.contact.id as string;

    const updated = await sys.api("PUT", `/v1/contacts/${contactId}`, { key: KEY, body: { properties: { firstName: "Augusta" } }, headers: { "x-request-id": "audit-api-update-1" } });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    const [entry, ...more] = await entriesOf("audit-api-update-1");
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      workspaceId: WS,
      actor: { kind: "key", id: keyId },
      action: "contact.update",
      resource: { type: "contact", id: contactId },
      requestId: "audit-api-update-1",
    });
    expect(entry!.id).toMatch(/^aud_/);
    // The API sends a contact's fields as its properties.
    expect(entry!.summary, JSON.stringify(entry!.summary)).toEqual({ "contact.properties.firstName": "Augusta", contactId });
    expect(Math.abs(Date.now() - Number(entry!.at!.seconds) * 1000)).toBeLessThan(60_000);

    const read = await sys.api("GET", `/v1/contacts/${contactId}`, { key: KEY, headers: { "x-request-id": "audit-api-read-1" } });
    expect(read.status).toBe(200);
    await sleep(500);
    expect((await log()).filter((e) => e.requestId === "audit-api-read-1")).toEqual([]);
  });

  it("a send is no audit entry: the email records the key that sent it (DESIGN §10.7); an API batch is one entry, without recipients or content", async () => {
    const res = await sys.api("POST", "/v1/emails", {
      key: KEY,
      headers: { "x-request-id": "audit-api-send-1" },
      body: {
        from: "team@audit.test", to: "bob@example.test", subject: "Your code 918273", html: "<p>secret letter</p>",
        attachments: [{ filename: "invoice.pdf", content: Buffer.from("%PDF-1.4 audit").toString("base64") }],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const record = await sys.api("GET", `/v1/emails/${res.body.email.id}`, { key: KEY });
    expect(record.body.email ?? record.body).toMatchObject({ sentBy: `key:${keyId}` });
    const batch = await sys.api("POST", "/v1/emails/batch", {
      key: KEY,
      headers: { "x-request-id": "audit-api-batch-1" },
      body: { emails: ["carol", "dave"].map((n) => ({ from: "team@audit.test", to: `${n}@example.test`, subject: "Your code 918273", html: "<p>secret letter</p>" })) },
    });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    const [entry, ...more] = await entriesOf("audit-api-batch-1");
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ actor: { kind: "key", id: keyId }, action: "email.send_batch", resource: { type: "email" } });
    expect((await log()).filter((e) => e.requestId === "audit-api-send-1")).toEqual([]);
    const text = JSON.stringify(entry!.summary);
    expect(text).not.toMatch(/bob@|918273|secret letter|invoice|PDF/);
    expect(Object.values(entry!.summary).every((v) => v === "")).toBe(true);
  });

  it("a key created through the API is recorded by id; no entry holds key material", async () => {
    const res = await sys.api("POST", `/v1/workspaces/${WS}/api-keys`, { key: KEY, body: { displayName: "ci deploy", role: "VIEWER" }, headers: { "x-request-id": "audit-api-key-1" } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const secret = res.body.apiKey.secretKey as string;
    expect(secret).toBeTruthy();
    const [entry] = await entriesOf("audit-api-key-1");
    expect(entry).toMatchObject({ actor: { kind: "key", id: keyId }, action: "api_key.create", resource: { type: "api_key", id: res.body.apiKey.id } });
    expect(entry!.summary).toMatchObject({ name: "ci deploy", role: "VIEWER" });
    const everything = JSON.stringify((await log()).map((e) => ({ ...e, at: undefined })));
    expect(everything).not.toContain(secret);
    expect(everything).not.toContain(KEY);
    expect(everything).not.toMatch(/mr_live_|mr_test_/);
  });

  it("a console change by a signed-in member is recorded as the member; signing in is recorded too", async () => {
    const { token } = await team().startMagicLink({ email: OWNER_EMAIL, workspaceId: WS });
    expect(token).toBeTruthy();
    const b = browser();
    const landing = await b.get(`/console/magic/${encodeURIComponent(token)}`);
    expect(landing.status).toBe(200);
    const signedIn = await b.post(`/console/magic/${encodeURIComponent(token)}`, { _csrf: b.csrfOf(landing.html) }, "audit-console-sign-in");
    expect(signedIn.status, signedIn.html).toBe(303);
    const [signIn] = await entriesOf("audit-console-sign-in");
    expect(signIn).toMatchObject({ action: "session.sign_in", actor: { kind: "member" }, resource: { type: "session" } });
    expect(JSON.stringify(signIn, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(token);
    const memberId = signIn!.actor!.id;
    expect(memberId).toMatch(/^mbr_/);

    const page = await b.get("/console/topics");
    expect(page.status).toBe(200);
    const posted = await b.post("/console/topics", { _csrf: b.csrfOf(page.html), name: "Product news", description: "", defaultSubscription: "OPT_IN" }, "audit-console-topic-1");
    expect(posted.status, posted.html).toBe(303);
    const [entry, ...more] = await entriesOf("audit-console-topic-1");
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ actor: { kind: "member", id: memberId, label: OWNER_EMAIL }, action: "topic.create", resource: { type: "topic" } });
    expect(entry!.resource!.id).toBeTruthy();
    // Enum values as the API names them, not protobuf's DEFAULT_SUBSCRIPTION_OPT_IN.
    expect(entry!.summary).toMatchObject({ name: "Product news", defaultSubscription: "OPT_IN" });
  });

  it("a console change in a session signed in with an API key is recorded as that key", async () => {
    const b = browser();
    const page = await b.get("/console/sign-in");
    const signedIn = await b.post("/console/sign-in", { _csrf: b.csrfOf(page.html), apiKey: KEY, next: "/console" });
    expect(signedIn.status, signedIn.html).toBe(303);
    const topics = await b.get("/console/topics");
    const posted = await b.post("/console/topics", { _csrf: b.csrfOf(topics.html), name: "Events", description: "", defaultSubscription: "OPT_OUT" }, "audit-console-topic-2");
    expect(posted.status, posted.html).toBe(303);
    const [entry] = await entriesOf("audit-console-topic-2");
    expect(entry).toMatchObject({ actor: { kind: "key", id: keyId, label: "audit-key" }, action: "topic.create" });
  });

  it("a CLI change is recorded as cli:<the OS user>", async () => {
    const out: string[] = [];
    const code = await runCli(["property", "create", "plan", "string"], {
      env: { ...cliUrls(), MAILROOM_WORKSPACE: WS },
      interactive: false,
      output: (json) => ({ out: (l) => out.push(l), err: (l) => out.push(l), json }),
    });
    expect(code, out.join("\n")).toBe(0);
    let entry: AuditEntry | undefined;
    for (let i = 0; i < 200 && !entry; i++) {
      entry = (await log()).find((e) => e.action === "contact_property.create");
      if (!entry) await sleep(50);
    }
    expect(entry).toMatchObject({ actor: { kind: "cli", id: userInfo().username, label: userInfo().username }, resource: { type: "contact_property" }, summary: { slug: "plan" } });
  });

  it("members are named by id (member:mbr_…) when the CLI names them by address, as the console's changes are", async () => {
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const code = await runCli(args, {
        env: { ...cliUrls(), MAILROOM_WORKSPACE: WS },
        interactive: false,
        output: (json) => ({ out: (l) => out.push(l), err: (l) => out.push(l), json }),
      });
      expect(code, `${args.join(" ")}: ${out.join("\n")}`).toBe(0);
    };
    const idOf = async (email: string) => (await team().listMembers({ workspaceId: WS })).members.find((m) => m.email === email)!.id;
    await cli("member", "add", "cli-member@audit.test", "--role", "EDITOR");
    await cli("member", "add", "cli-other@audit.test", "--role", "EDITOR");
    const member = await idOf("cli-member@audit.test");
    const other = await idOf("cli-other@audit.test");
    expect([member, other]).toEqual([expect.stringMatching(/^mbr_/), expect.stringMatching(/^mbr_/)]);
    await cli("member", "role", WS, "cli-member@audit.test", "VIEWER");
    await cli("member", "remove", WS, "cli-member@audit.test");
    // The -w form removes through the accounts unit's older call (RemoveMember), by address.
    await cli("member", "remove", "cli-other@audit.test");

    const changes = async () => (await log()).filter((e) => e.actor?.kind === "cli" && (e.action === "member.role_change" || e.action === "member.remove"));
    let found: AuditEntry[] = [];
    for (let i = 0; i < 200 && found.length < 3; i++) {
      found = await changes();
      if (found.length < 3) await sleep(50);
    }
    expect(found.map((e) => [e.action, e.resource?.type, e.resource?.id]).sort()).toEqual([
      ["member.remove", "member", member], ["member.remove", "member", other], ["member.role_change", "member", member],
    ].sort());
    // Filtering by the member finds its entries, the console's way of naming it.
    const byMember = await team().listAuditLog({ workspaceId: WS, resource: `member:${member}`, limit: 500 });
    expect(byMember.entries.map((e) => e.action)).toEqual(expect.arrayContaining(["member.role_change", "member.remove"]));
  });

  it("the log pages newest first and filters by actor, resource and time", async () => {
    const all = await log();
    expect(all.length).toBeGreaterThanOrEqual(6);
    const times = all.map((e) => Number(e.at!.seconds) * 1000 + e.at!.nanos / 1e6);
    expect([...times].sort((a, b) => b - a)).toEqual(times);

    const pages: string[] = [];
    let pageToken = "";
    do {
      const res = await team().listAuditLog({ workspaceId: WS, pageToken, limit: 2 });
      expect(res.entries.length).toBeLessThanOrEqual(2);
      pages.push(...res.entries.map((e) => e.id));
      pageToken = res.nextPageToken;
    } while (pageToken);
    expect(pages).toEqual(all.map((e) => e.id));

    const byKey = await team().listAuditLog({ workspaceId: WS, actor: `key:${keyId}`, limit: 500 });
    expect(byKey.entries.length).toBeGreaterThan(0);
    expect(byKey.entries.every((e) => e.actor?.kind === "key" && e.actor.id === keyId)).toBe(true);
    const topics = await team().listAuditLog({ workspaceId: WS, resource: "topic", limit: 500 });
    expect(topics.entries.map((e) => e.action).sort()).toEqual(["topic.create", "topic.create"]);
    const future = await team().listAuditLog({ workspaceId: WS, since: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 }, limit: 500 });
    expect(future.entries).toEqual([]);
  });

  it("GET /v1/audit-log refuses a key below ADMIN", async () => {
    const res = await sys.api("GET", "/v1/audit-log", { key: KEY });
    expect(res.status, JSON.stringify(res.body)).toBe(403);
    expect(res.body.code).toBe("insufficient_role");
  });

  it("an ADMIN key (CLI, owned by an OWNER) reads GET /v1/audit-log; demoting its owner to EDITOR ends that", async () => {
    const cli = async (args: string[]) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(args, {
        env: { ...cliUrls(), MAILROOM_WORKSPACE: WS },
        interactive: false,
        output: (json) => ({ out: (l) => out.push(l), err: (l) => err.push(l), json }),
      });
      return { code, out, err };
    };
    // Only with an owner who is OWNER or ADMIN; the public API keeps the official client's two roles.
    const unowned = await cli(["key", "create", "--name", "no-owner", "--role", "ADMIN"]);
    expect(unowned.code).not.toBe(0);
    expect(unowned.err.join("\n")).toMatch(/ADMIN needs an owner/);
    const viaApi = await sys.api("POST", `/v1/workspaces/${WS}/api-keys`, { key: KEY, body: { displayName: "api-admin", role: "ADMIN" } });
    expect(viaApi.status, JSON.stringify(viaApi.body)).toBe(400);
    expect(JSON.stringify(viaApi.body)).toContain("role");

    const created = await cli(["key", "create", "--name", "auditor", "--role", "ADMIN", "--owner", SECOND_OWNER]);
    expect(created.code, created.err.join("\n")).toBe(0);
    const adminKey = created.out[0]!;
    const ok = await sys.api("GET", "/v1/audit-log?limit=5", { key: adminKey });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.auditLog.items.length).toBeGreaterThan(0);

    const { members } = await team().listMembers({ workspaceId: WS });
    const owner = members.find((m) => m.email === SECOND_OWNER)!;
    await team().updateMemberRole({ workspaceId: WS, memberId: owner.id, role: "EDITOR" });
    let refused: Awaited<ReturnType<TestSystem["api"]>> | undefined;
    for (const until = Date.now() + 30_000; Date.now() < until; ) {
      // The gateway holds the key's earlier answer for its auth cache (MAILROOM_AUTH_CACHE_MS, 10 s).
      const res = await sys.api("GET", "/v1/audit-log?limit=5", { key: adminKey });
      if (res.status !== 200) { refused = res; break; }
      await sleep(100);
    }
    expect(refused?.status, JSON.stringify(refused?.body)).toBe(403);
    expect(refused!.body.code).toBe("insufficient_role");
    // Still an EDITOR's key: it changes things as before.
    expect((await sys.api("GET", "/v1/contacts?limit=1", { key: adminKey })).status).toBe(200);
  });
});
