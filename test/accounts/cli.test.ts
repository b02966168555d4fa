import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient, createLogger, startConnectServer, type ConnectServer } from "@mailroom/kit";
import { directoryRoutes, memoryDirectory, storeTeam, type TestDirectory } from "../../services/audience/src/testing.js";
import { teamRoutes } from "../../services/accounts/src/team-routes.js";
import type { Team } from "../../services/accounts/src/domain/team.js";
import { runCli } from "../../cli/program.js";
import { importContactsCsv } from "@mailroom/kit/contacts-csv/import-csv.js";

describe("admin CLI", () => {
  let server: ConnectServer;
  let dir: TestDirectory;
  let team: Team;
  let tmp: string;
  // One server serves the accounts and the audience units' services (directoryRoutes).
  const client = () => connectClient(AccountsService, server.url);
  const contacts = () => connectClient(ContactService, server.url);

  /** Runs `mailroom <args>` in-process against the test accounts and audience services. */
  async function cli(...args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(args, {
      env: { MAILROOM_ACCOUNTS_URL: server.url, MAILROOM_AUDIENCE_URL: server.url, MAILROOM_WORKSPACE: "ws_cli", MAILROOM_PUBLIC_URL: "https://mail.cli.test" },
      interactive: false,
      output: (json) => ({ out: (l) => out.push(l), err: (l) => err.push(l), json }),
    });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  beforeAll(async () => {
    const testDir = await memoryDirectory();
    dir = testDir;
    const { team: t, auditLog } = await storeTeam(testDir);
    team = t;
    server = await startConnectServer({
      routes: (router) => {
        directoryRoutes(dir, undefined, team)(router);
        teamRoutes(team, auditLog)(router);
      },
      port: 0,
      logger: createLogger("cli-test", "silent"),
    });
    tmp = await mkdtemp(path.join(os.tmpdir(), "mailroom-cli-"));
    expect((await cli("workspace", "create", "--id", "ws_cli", "--name", "CLI Co", "--timezone", "Europe/Berlin", "--limit", "500", "--flags", "verified")).code).toBe(0);
    expect((await cli("property", "create", "plan", "string")).code).toBe(0);
    expect((await cli("property", "create", "seats", "number")).code).toBe(0);
    expect((await cli("property", "create", "vip", "boolean")).code).toBe(0);
  });
  afterAll(async () => {
    await server?.close();
    await rm(tmp, { recursive: true, force: true });
  });

  it("manages workspaces and flags", async () => {
    const updated = await cli("workspace", "update", "ws_cli", "--enable", "broadcastEarlyAccess,emailApiAddon", "--disable", "verified");
    expect(updated.code).toBe(0);
    expect((await dir.workspaces.get("ws_cli")).flags).toEqual({ broadcastEarlyAccess: true, emailApiAddon: true, verified: false });
    const list = await cli("workspace", "list");
    expect(list.out).toMatch(/ws_cli\s+CLI Co\s+Europe\/Berlin\s+500/);
    const bad = await cli("workspace", "update", "ws_cli", "--enable", "superpowers");
    expect(bad).toMatchObject({ code: 1, err: expect.stringMatching(/unknown flag "superpowers"/) });
  });

  it("creates a key, prints it once, lists only its prefix, revokes it", async () => {
    const created = await cli("key", "create", "--name", "deploy", "--scopes", "api_user,admin");
    expect(created.code).toBe(0);
    const plain = created.out.trim();
    expect(plain).toMatch(/^mr_live_[0-9A-Za-z]{32}$/);
    expect(created.err).toMatch(/not shown again/);
    expect((await client().authenticate({ apiKey: plain })).scopes).toEqual(["api_user", "admin", "api_read"]);
    const list = await cli("key", "list");
    expect(list.out).toContain(plain.slice(0, 12));
    expect(list.out).not.toContain(plain);
    const keyId = list.out.match(/key_[0-9a-z]{26}/)![0];
    expect((await cli("key", "revoke", keyId)).code).toBe(0);
    await expect(client().authenticate({ apiKey: plain })).rejects.toThrow(/Invalid API key/);
  });

  it("adds a domain and prints the DKIM, SPF and DMARC records; mark-verified lets it send", async () => {
    const added = await cli("domain", "add", "cli.test");
    expect(added.code).toBe(0);
    expect(added.out).toMatch(/name: {2}mailroom\._domainkey\.cli\.test\n {4}value: v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+/);
    expect(added.out).toMatch(/_dmarc\.cli\.test/);
    const verify = await cli("domain", "verify", "cli.test");
    expect(verify.code).toBe(2);
    expect(verify.out).toMatch(/not verified yet/);
    expect((await cli("domain", "mark-verified", "cli.test")).code).toBe(0);
    expect((await cli("sender", "check", "Team <team@cli.test>")).out).toMatch(/^allowed: team@cli.test \(DKIM mailroom._domainkey.cli.test\)/);
  });

  it("adds members and contacts, reporting bad input clearly", async () => {
    expect((await cli("member", "add", "Owner@CLI.test")).code).toBe(0);
    expect((await cli("member", "list")).out).toMatch(/^ID\s+EMAIL\s+ROLE\s+STATUS\s+LAST SIGN-IN\nmbr_[0-9a-z]{26}\s+owner@cli\.test\s+OWNER\s+ACTIVE\s+-$/);
    const added = await cli("contact", "add", "zoe@example.test", "--first-name", "Zoe", "--prop", "seats=3", "--prop", "vip=yes");
    expect(added.code).toBe(0);
    expect((await dir.contacts.get("ws_cli", "zoe@example.test")).properties).toEqual({ seats: 3, vip: true });
    expect(await cli("contact", "add", "zoe@example.test")).toMatchObject({ code: 1, err: expect.stringMatching(/already exists \(contact_exists\)/) });
    expect(await cli("contact", "add", "nope")).toMatchObject({ code: 1, err: expect.stringMatching(/not a valid email address \(invalid_email\)/) });
    expect(await cli("contact", "add", "x@example.test", "--prop", "colour=red")).toMatchObject({ code: 1, err: expect.stringMatching(/Unknown contact property: colour/) });
    expect(await cli("property", "create", "score", "float")).toMatchObject({ code: 1, err: expect.stringMatching(/unknown property type "float"/) });
    expect(await cli("-w", "", "contact", "list", "--limit", "x")).toMatchObject({ code: 1 });
  });

  it("invites, lists, changes roles and removes team members; keys get an owner", async () => {
    await cli("member", "add", "owner@cli.test"); // the first member: OWNER (already there when the test above ran)
    const invited = await cli("member", "invite", "ws_cli", "Ed@CLI.test", "--role", "admin");
    expect(invited.code).toBe(0);
    const token = invited.out.match(/^https:\/\/mail\.cli\.test\/console\/invite\/(inv_[A-Za-z0-9_-]+)$/)![1];
    expect(invited.err).toMatch(/invited ed@cli\.test as ADMIN \(member mbr_[0-9a-z]{26}\); the link works once, until \d{4}-/);
    expect((await cli("member", "list", "ws_cli")).out).toMatch(/ed@cli\.test\s+ADMIN\s+INVITED/);
    const accepted = await team.acceptInvitation(token);
    expect((await team.member("ws_cli", "ed@cli.test")).invitedBy).toMatch(/^cli:/);
    expect(await cli("member", "invite", "ws_cli", "x@cli.test", "--role", "boss")).toMatchObject({ code: 1, err: expect.stringMatching(/role must be one of OWNER, ADMIN, EDITOR, VIEWER/) });

    const key = await cli("key", "create", "--role", "EDITOR", "--owner", "ed@cli.test");
    expect(key.code).toBe(0);
    expect(key.err).toContain(`owner ${accepted.publicId}`);
    expect((await client().authenticate({ apiKey: key.out.trim() })).memberId).toBe(accepted.publicId);
    expect((await cli("key", "list")).out).toContain(accepted.publicId!);
    expect(await cli("key", "create", "--owner", "ghost@cli.test")).toMatchObject({ code: 1, err: expect.stringMatching(/member_not_found/) });

    expect((await cli("member", "role", "ws_cli", accepted.publicId!, "viewer")).out).toBe("ed@cli.test is now VIEWER");
    expect((await client().authenticate({ apiKey: key.out.trim() })).role).toBe("VIEWER");
    expect(await cli("member", "role", "ws_cli", "owner@cli.test", "EDITOR")).toMatchObject({ code: 1, err: expect.stringMatching(/at least one owner.*\(last_owner\)/) });
    expect(await cli("member", "remove", "ws_cli", "owner@cli.test")).toMatchObject({ code: 1, err: expect.stringMatching(/last_owner/) });

    const session = await team.redeemMagicLink((await team.startMagicLink("ed@cli.test")).token, { userAgent: "cli-test" });
    expect((await cli("member", "sessions", "ws_cli", "ed@cli.test")).out).toContain(session.session._id);
    expect((await cli("member", "remove", "ws_cli", "ed@cli.test")).out).toBe("removed ed@cli.test");
    await expect(team.getSession(session.token)).rejects.toThrow(/signed out/);
    await expect(client().authenticate({ apiKey: key.out.trim() })).rejects.toThrow(/Invalid API key/);
    expect((await cli("--json", "member", "list", "ws_cli")).out).not.toContain("ed@cli.test");
  });

  it("imports a CSV: good rows in, every bad row reported with its line and reason", async () => {
    await dir.contacts.create("ws_cli", { email: "existing@example.test", firstName: "Old" });
    const csv = [
      "email,First Name,lastName,plan,seats,vip,subscribed", // 1
      "amy@example.test,Amy,A,pro,2,true,true", // 2
      "not-an-email,Bad,Row,pro,1,false,true", // 3
      "ben@example.test,Ben,B,free,lots,false,true", // 4: seats not a number
      "existing@example.test,New,E,,,,", // 5: updates
      "cat@example.test,Cat", // 6: too few fields
      'dan@example.test,"Dan ""D""",D,team,5,no,no', // 7
      "AMY@example.test,Amy,Again,pro,2,true,true", // 8: duplicate of line 2
      '"fay@example.test",Fay,"Multi', // 9-10: quoted line break
      'line",pro,1,true,maybe', // 10: subscribed not a boolean
      "gus@example.test,Gus,G,pro,1,true,true", // 11
      'eve@example.test,Eve,"broken"quote,pro,1,true,true', // 12: malformed
      "hal@example.test,Hal,H,pro,1,true,true", // 13: swallowed by the broken quote above, and reported
    ].join("\n");
    const file = path.join(tmp, "contacts.csv");
    await writeFile(file, csv + "\n");
    const res = await cli("contact", "import", file, "--batch-size", "2");
    expect(res.code).toBe(2);
    expect(res.out).toMatch(/^11 rows: 3 created, 1 updated, 7 rejected/);
    const lines = res.out.split("\n").slice(1).map((l) => l.trim());
    expect(lines).toHaveLength(7);
    expect(lines[0]).toMatch(/^line 3 \(not-an-email\): .*not a valid email address/);
    expect(lines[1]).toMatch(/^line 4 \(ben@example.test\): .*seats.*not a finite number/);
    expect(lines[2]).toMatch(/^line 6 \(cat@example.test\): expected 7 fields, found 2/);
    expect(lines[3]).toMatch(/^line 8 \(AMY@example.test\): duplicate of line 2/);
    expect(lines[4]).toMatch(/^line 9 \(fay@example.test\): .*subscribed.*BOOLEAN/);
    expect(lines[5]).toMatch(/^line 12: malformed CSV: Invalid Closing Quote/);
    expect(lines[6]).toMatch(/^line 13: malformed CSV: Quote Not Closed/);
    const emails = (await dir.contacts.list("ws_cli", { limit: 100 })).items.map((c) => c.email).sort();
    expect(emails).toEqual(["amy@example.test", "dan@example.test", "existing@example.test", "gus@example.test", "zoe@example.test"]);
    expect(await dir.contacts.get("ws_cli", "dan@example.test")).toMatchObject({ firstName: 'Dan "D"', status: "UNSUBSCRIBED", source: "CSV_IMPORT", properties: { plan: "team", seats: 5, vip: false } });
    expect(await dir.contacts.get("ws_cli", "amy@example.test")).toMatchObject({ firstName: "Amy", lastName: "A", properties: { plan: "pro", seats: 2, vip: true } });
    expect(await dir.contacts.get("ws_cli", "existing@example.test")).toMatchObject({ firstName: "New", lastName: "E" });
  });

  it("aborts an import whose header names unknown columns, importing nothing", async () => {
    const before = await dir.contacts.count("ws_cli");
    const file = path.join(tmp, "unknown.csv");
    await writeFile(file, "email,favouriteColour\nnew1@example.test,red\n");
    const res = await cli("contact", "import", file);
    expect(res.code).toBe(1);
    expect(res.err).toMatch(/import aborted, nothing imported: unknown column\(s\) "favouriteColour"/);
    expect(await dir.contacts.count("ws_cli")).toBe(before);
  });

  it("streams large imports in batches and reports progress", async () => {
    const rows = Array.from({ length: 1200 }, (_, i) => `bulk${i}@example.test,${i % 2 ? "pro" : "free"}`);
    const progress: number[] = [];
    const summary = await importContactsCsv({
      client: contacts(),
      workspaceId: "ws_cli",
      input: Readable.from([`email,plan\n${rows.join("\n")}\n`]),
      batchSize: 500,
      onProgress: (p) => progress.push(p.rows),
    });
    expect(summary).toMatchObject({ rows: 1200, created: 1200, updated: 0, rejected: [] });
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.at(-1)).toBe(1200);
  });

  it("stops an import at a quote that is never closed, saying where, with the rows before it imported", async () => {
    const file = path.join(tmp, "unclosed.csv");
    const filler = Array.from({ length: 20_000 }, (_, i) => `later${i}@example.test,free`).join("\n");
    // ~0.5 MB after the bad quote on line 3, 64 times over: 30+ MB the import must not buffer.
    await writeFile(file, `email,plan\nbefore@example.test,pro\n"broken@example.test,pro\n${Array(64).fill(filler).join("\n")}\n`);
    const res = await cli("contact", "import", file);
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/^1 rows: 1 created, 0 updated, 0 rejected/);
    expect(res.err).toMatch(/^error: import stopped at line 3: the record starting at line 3 is longer than 64 KB \(a quote opened there is probably never closed\); nothing from that line on was imported/);
    expect((await dir.contacts.get("ws_cli", "before@example.test")).properties).toEqual({ plan: "pro" });
    await expect(dir.contacts.get("ws_cli", "later0@example.test")).rejects.toThrow(/not found/);
  });

  it("creates templates from a file and lists, shows and deletes them", async () => {
    const html = path.join(tmp, "welcome.html");
    await writeFile(html, "<h1>Hi {{firstName}}</h1><p>Your plan: {{plan}}</p>");
    const created = await cli("template", "create", "--name", "welcome", "--subject", "Welcome {{firstName}}", "--html-file", html);
    expect(created).toMatchObject({ code: 0, out: "created template welcome (variables: firstName, plan)" });
    expect((await cli("template", "list")).out).toMatch(/welcome\s+Welcome \{\{firstName\}\}\s+firstName,plan/);
    expect((await cli("template", "get", "welcome")).out).toContain("<h1>Hi {{firstName}}</h1>");
    expect(await cli("template", "create", "--name", "welcome", "--subject", "x", "--html", "<p>x</p>")).toMatchObject({ code: 1, err: expect.stringMatching(/template_exists/) });
    expect((await cli("template", "delete", "welcome")).code).toBe(0);
    expect(await cli("template", "get", "welcome")).toMatchObject({ code: 1, err: expect.stringMatching(/template_not_found/) });
  });

  it("runs as `npx mailroom` through the bin shim", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [path.resolve("bin/mailroom.js"), "--json", "workspace", "list"], {
      env: { ...process.env, MAILROOM_ACCOUNTS_URL: server.url, MAILROOM_AUDIENCE_URL: server.url },
    });
    expect(JSON.parse(stdout).workspaces.map((w: { id: string }) => w.id)).toContain("ws_cli");
  }, 30_000);

  it("says clearly when the accounts unit cannot be reached", async () => {
    const out: string[] = [];
    const code = await runCli(["workspace", "list"], {
      env: { MAILROOM_ACCOUNTS_URL: "http://127.0.0.1:9", MAILROOM_AUDIENCE_URL: "http://127.0.0.1:9" },
      interactive: false,
      output: (json) => ({ out: (l) => out.push(l), err: (l) => out.push(l), json }),
    });
    expect(code).toBe(1);
    expect(out.join("\n")).toMatch(/cannot reach the accounts service at http:\/\/127.0.0.1:9/);
  });
});
