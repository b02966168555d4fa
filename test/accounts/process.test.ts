import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { TemplateService } from "@mailroom/proto/accounts/v1/templates_pb.js";
import { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { connectClient } from "@mailroom/kit";
import { freePort, waitForPort } from "../harness/ports.js";

const MAIN = { accounts: path.resolve("services/accounts/src/main.ts"), audience: path.resolve("services/audience/src/main.ts") };
type Unit = keyof typeof MAIN;

const BOOTSTRAP = {
  workspaces: [{
    id: "ws_proc", name: "Proc", apiKeys: [{ key: "mr_test_proc_secret_1", scopes: ["api_user"] }],
    verifiedEmails: ["me@proc.test"], members: ["me@proc.test"],
    contacts: [{ email: "c@proc.test" }], templates: [{ name: "t", subject: "s", html: "<p>h</p>" }],
  }],
};

function startUnit(unit: Unit, env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let out = "";
  // Node with tsx's loader, as the launcher starts units: the tsx CLI in between relays a
  // SIGTERM only if the child acknowledges it within 30 ms, and on a busy machine exits 143
  // after killing a unit that was shutting down cleanly.
  const child = spawn(process.execPath, ["--import", "tsx", MAIN[unit]], { env: { ...process.env, MAILROOM_LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function stop(p: { child: ChildProcess; exited: Promise<number | null> }) {
  if (p.child.exitCode === null) p.child.kill("SIGTERM");
  return p.exited;
}

describe("accounts and audience processes (main.ts)", () => {
  let dataDir: string;
  let bootstrapFile: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-accounts-"));
    bootstrapFile = path.join(dataDir, "bootstrap.json");
    await writeFile(bootstrapFile, JSON.stringify(BOOTSTRAP));
  });
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  it("loads MAILROOM_BOOTSTRAP at start, serves Connect, restarts without duplicating anything", async () => {
    const ports = { accounts: await freePort(), audience: await freePort() };
    const urls = { MAILROOM_ACCOUNTS_URL: `http://127.0.0.1:${ports.accounts}`, MAILROOM_AUDIENCE_URL: `http://127.0.0.1:${ports.audience}` };
    // The accounts unit loads the bootstrap; its contacts go on to the audience unit.
    const env = (unit: Unit) => ({ ...urls, MAILROOM_DATA_DIR: dataDir, ...(unit === "accounts" ? { MAILROOM_BOOTSTRAP: bootstrapFile } : {}), MAILROOM_SERVICE_PORT: String(ports[unit]) });
    const client = connectClient(AccountsService, urls.MAILROOM_ACCOUNTS_URL);
    const templates = connectClient(TemplateService, urls.MAILROOM_ACCOUNTS_URL);
    const contacts = connectClient(ContactService, urls.MAILROOM_AUDIENCE_URL);
    for (let run = 0; run < 2; run++) {
      const procs = { audience: startUnit("audience", env("audience")), accounts: startUnit("accounts", env("accounts")) };
      try {
        await waitForPort(ports.audience, 20_000);
        await waitForPort(ports.accounts, 20_000);
        for (const port of Object.values(ports)) expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        expect(await client.authenticate({ apiKey: "mr_test_proc_secret_1" })).toMatchObject({ workspaceId: "ws_proc" });
        expect((await client.listApiKeys({ workspaceId: "ws_proc" })).apiKeys).toHaveLength(1);
        expect((await contacts.listContacts({ workspaceId: "ws_proc" })).contacts).toHaveLength(1);
        expect((await templates.listTemplates({ workspaceId: "ws_proc" })).templates).toHaveLength(1);
        expect(procs.accounts.output()).toContain("bootstrap loaded");
        for (const proc of Object.values(procs)) expect(proc.output()).not.toContain("mr_test_proc_secret_1");
      } finally {
        // Both stopped, whatever the first answers.
        const codes = await Promise.all([stop(procs.accounts), stop(procs.audience)]);
        expect(codes).toEqual([0, 0]);
      }
    }
    // After a clean shutdown the data files hold the key's hash only.
    for (const unit of ["accounts", "audience"]) {
      const dir = path.join(dataDir, unit);
      for (const f of await readdir(dir)) expect(await readFile(path.join(dir, f), "utf8")).not.toContain("mr_test_proc_secret_1");
    }
  }, 60_000);

  it("refuses to start on an invalid bootstrap file, naming the problem", async () => {
    const bad = path.join(dataDir, "bad.json");
    await writeFile(bad, JSON.stringify({ workspaces: [{ id: "ws_bad", name: "Bad", verifiedEmails: ["not-an-address"] }] }));
    const proc = startUnit("accounts", { MAILROOM_DATA_DIR: path.join(dataDir, "other"), MAILROOM_BOOTSTRAP: bad, MAILROOM_SERVICE_PORT: String(await freePort()) });
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toMatch(/cannot load MAILROOM_BOOTSTRAP/);
    expect(proc.output()).toMatch(/not-an-address/);
  }, 30_000);
});
