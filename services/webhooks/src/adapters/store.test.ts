import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isSealed } from "@mailroom/kit/secrets.js";
import { openStore } from "@mailroom/store/open.js";
import type { Webhook } from "../domain/model.js";
import { TEST_SECRET_KEYS } from "../testing.js";
import { openStores } from "./store.js";

const TOKEN = "whsec_c2VjcmV0LXNpZ25pbmctdG9rZW4tb2YtYWNtZS0wMTIz";
const NEW_TOKEN = "whsec_bmV3LXNpZ25pbmctdG9rZW4tYWZ0ZXItdXBkYXRlLTQ1Ng";
const URL = "https://hooks.acme-visible.test/mailroom";

const hook = (token = TOKEN): Webhook => ({
  id: "wh_1",
  workspaceId: "ws_1",
  url: URL,
  events: ["EMAIL_SENT"],
  displayName: "",
  status: "ACTIVE",
  token,
  createdAt: new Date(1),
  updatedAt: new Date(1),
  consecutiveFailures: 0,
});

type RawDoc = { _id: string; token: string };

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function dataDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "mailroom-webhooks-"));
  dirs.push(dir);
  return dir;
}

/** Every file under dir as latin1: LMDB pages are binary, strings in them are plain bytes. */
async function storeFiles(dir: string): Promise<Array<{ file: string; text: string }>> {
  const out: Array<{ file: string; text: string }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out.push({ file, text: await readFile(file, "latin1") });
  }
  return out;
}

describe("webhook signing tokens at rest", () => {
  it("no store file holds a token in plain text, while the API side still reads it", async () => {
    const root = await dataDir();
    const store = await openStore({ dataDir: root, service: "webhooks" });
    const { webhooks } = await openStores(store, TEST_SECRET_KEYS);
    await webhooks.insert(hook());
    expect((await webhooks.find("ws_1", "wh_1"))?.token).toBe(TOKEN);
    expect(isSealed((await store.collection<RawDoc>("webhooks").findOne({ _id: "wh_1" }))!.token)).toBe(true);
    expect((await webhooks.update("ws_1", "wh_1", { token: NEW_TOKEN }, new Date(2)))?.token).toBe(NEW_TOKEN);
    expect((await webhooks.list("ws_1")).map((w) => w.token)).toEqual([NEW_TOKEN]);
    expect((await webhooks.findById("wh_1"))?.token).toBe(NEW_TOKEN);
    await store.close();

    const files = await storeFiles(root);
    // The scan sees stored values at all: the webhook's URL is there in plain text.
    expect(files.some(({ text }) => text.includes(URL))).toBe(true);
    for (const { file, text } of files) {
      for (const token of [TOKEN, NEW_TOKEN]) {
        expect(text.includes(token), `${file} holds a token`).toBe(false);
        expect(text.includes(token.slice("whsec_".length)), `${file} holds a token's key`).toBe(false);
      }
    }
  });

  it("seals plaintext tokens left by older versions when it opens, and reseals after a rotation", async () => {
    const root = await dataDir();
    const store = await openStore({ dataDir: root, service: "webhooks" });
    const raw = store.collection<RawDoc>("webhooks");
    const { id, ...legacy } = hook();
    await raw.insertOne({ _id: id, ...legacy });

    const before = (await openStores(store, TEST_SECRET_KEYS)).webhooks;
    const sealedOnce = (await raw.findOne({ _id: id }))!.token;
    expect(isSealed(sealedOnce)).toBe(true);
    expect((await before.find("ws_1", id))?.token).toBe(TOKEN);

    const rotated = { current: "webhooks-rotated-secret-9876543210", previous: TEST_SECRET_KEYS.current };
    const after = (await openStores(store, rotated)).webhooks;
    const sealedTwice = (await raw.findOne({ _id: id }))!.token;
    expect(sealedTwice).not.toBe(sealedOnce);
    expect((await after.find("ws_1", id))?.token).toBe(TOKEN);
    // Once resealed, the previous secret is no longer needed.
    const newOnly = (await openStores(store, { current: rotated.current })).webhooks;
    expect((await newOnly.findById(id))?.token).toBe(TOKEN);
    await store.close();
  });
});
