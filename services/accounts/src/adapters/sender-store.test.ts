import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isSealed } from "@mailroom/kit/secrets.js";
import { openStore } from "@mailroom/store/open.js";
import { pooledDkimKey, storeDirectory, TEST_SECRETS } from "../../../audience/src/testing.js";
import { SenderStore } from "./sender-store.js";

/** The PEM's base64 body lines: what a leaked store file would show. */
const pemBody = (pem: string) => pem.split("\n").filter((l) => l && !l.startsWith("-----"));

async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) out.push(path.join(entry.parentPath, entry.name));
  }
  return out;
}

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-senders-"));
  dirs.push(dir);
  return dir;
}

describe("DKIM private keys at rest", () => {
  it("no store file of the directory's data dir holds the private key in plain text", async () => {
    const root = await dataDir();
    const store = await openStore({ dataDir: root, service: "directory" });
    const dir = await storeDirectory(store);
    await dir.workspaces.create({ id: "ws_sec", name: "Sec" });
    await dir.senders.addDomain("ws_sec", "sec.example");
    const pem = (await pooledDkimKey()).privateKeyPem;
    // The domain still signs with the real key.
    const stored = await store.collection<{ _id: string; privateKeyPem: string }>("domains").findOne({});
    expect(isSealed(stored!.privateKeyPem)).toBe(true);
    const repo = await SenderStore.open(store, TEST_SECRETS);
    expect((await repo.listDomains("ws_sec", { limit: 10 }))[0].privateKeyPem).toBe(pem);
    await store.close();

    const files = await allFiles(root);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const text = await readFile(file, "utf8");
      expect(text, file).not.toContain("PRIVATE KEY");
      for (const line of pemBody(pem)) expect(text.includes(line), `${file} holds a line of the PEM`).toBe(false);
    }
  });

  it("seals plaintext keys left by older versions when it opens, and reseals after a rotation", async () => {
    const root = await dataDir();
    const store = await openStore({ dataDir: root, service: "directory" });
    const pem = (await pooledDkimKey()).privateKeyPem;
    const domains = store.collection<{ _id: string; workspaceId: string; privateKeyPem: string; verified: boolean }>("domains");
    await domains.insertOne({ _id: "ws_old:legacy.example", workspaceId: "ws_old", privateKeyPem: pem, verified: true });

    const before = await SenderStore.open(store, TEST_SECRETS);
    const sealedOnce = (await domains.findOne({}))!.privateKeyPem;
    expect(isSealed(sealedOnce)).toBe(true);
    expect((await before.findDomain("ws_old", "ws_old:legacy.example"))?.privateKeyPem).toBe(pem);

    const rotated = { current: "directory-rotated-secret-9876543210", previous: TEST_SECRETS.current };
    const after = await SenderStore.open(store, rotated);
    const sealedTwice = (await domains.findOne({}))!.privateKeyPem;
    expect(sealedTwice).not.toBe(sealedOnce);
    expect((await after.findDomain("ws_old", "ws_old:legacy.example"))?.privateKeyPem).toBe(pem);
    // Once resealed, the previous secret is no longer needed.
    const newOnly = await SenderStore.open(store, { current: rotated.current });
    expect((await newOnly.findDomain("ws_old", "ws_old:legacy.example"))?.privateKeyPem).toBe(pem);
    await store.close();
  });
});
