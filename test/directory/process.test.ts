import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DirectoryService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import { connectClient } from "@mailroom/kit";
import { freePort, waitForPort } from "../harness/ports.js";

const MAIN = path.resolve("services/directory/src/main.ts");

const BOOTSTRAP = {
  workspaces: [{
    id: "ws_proc", name: "Proc", apiKeys: [{ key: "mr_test_proc_secret_1", scopes: ["api_user"] }],
    verifiedEmails: ["me@proc.test"], members: ["me@proc.test"],
    contacts: [{ email: "c@proc.test" }], templates: [{ name: "t", subject: "s", html: "<p>h</p>" }],
  }],
};

function startDirectory(env: Record<string, string>): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let out = "";
  // Node with tsx's loader, as the launcher starts units: the tsx CLI in between relays a
  // SIGTERM only if the child acknowledges it within 30 ms, and on a busy machine exits 143
  // after killing a unit that was shutting down cleanly.
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], { env: { ...process.env, MAILROOM_LOG_LEVEL: "info", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function stop(p: { child: ChildProcess; exited: Promise<number | null> }) {
  if (p.child.exitCode === null) p.child.kill("SIGTERM");
  return p.exited;
}

describe("directory process (main.ts)", () => {
  let dataDir: string;
  let bootstrapFile: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "mailroom-directory-"));
    bootstrapFile = path.join(dataDir, "bootstrap.json");
    await writeFile(bootstrapFile, JSON.stringify(BOOTSTRAP));
  });
  afterAll(async () => rm(dataDir, { recursive: true, force: true }));

  it("loads MAILROOM_BOOTSTRAP at start, serves Connect, restarts without duplicating anything", async () => {
    const port = await freePort();
    const env = { MAILROOM_DATA_DIR: dataDir, MAILROOM_BOOTSTRAP: bootstrapFile, MAILROOM_SERVICE_PORT: String(port) };
    const client = connectClient(DirectoryService, `http://127.0.0.1:${port}`);
    for (let run = 0; run < 2; run++) {
      const proc = startDirectory(env);
      try {
        await waitForPort(port, 20_000);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        expect(await client.authenticate({ apiKey: "mr_test_proc_secret_1" })).toMatchObject({ workspaceId: "ws_proc" });
        expect((await client.listApiKeys({ workspaceId: "ws_proc" })).apiKeys).toHaveLength(1);
        expect((await client.listContacts({ workspaceId: "ws_proc" })).contacts).toHaveLength(1);
        expect((await client.listTemplates({ workspaceId: "ws_proc" })).templates).toHaveLength(1);
        expect(proc.output()).toContain("bootstrap loaded");
        expect(proc.output()).not.toContain("mr_test_proc_secret_1");
      } finally {
        expect(await stop(proc)).toBe(0);
      }
    }
    // After a clean shutdown the data files hold the key's hash only.
    const dir = path.join(dataDir, "directory");
    for (const f of await readdir(dir)) expect(await readFile(path.join(dir, f), "utf8")).not.toContain("mr_test_proc_secret_1");
  }, 60_000);

  it("refuses to start on an invalid bootstrap file, naming the problem", async () => {
    const bad = path.join(dataDir, "bad.json");
    await writeFile(bad, JSON.stringify({ workspaces: [{ id: "ws_bad", name: "Bad", verifiedEmails: ["not-an-address"] }] }));
    const proc = startDirectory({ MAILROOM_DATA_DIR: path.join(dataDir, "other"), MAILROOM_BOOTSTRAP: bad, MAILROOM_SERVICE_PORT: String(await freePort()) });
    expect(await proc.exited).toBe(1);
    expect(proc.output()).toMatch(/cannot load MAILROOM_BOOTSTRAP/);
    expect(proc.output()).toMatch(/not-an-address/);
  }, 30_000);
});
