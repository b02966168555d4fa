import { describe, expect, it } from "vitest";
import { openMemoryStore } from "@mailroom/store/open.js";
import type { StoredEmail } from "../domain/model.js";
import { CollectionEmailStore } from "./store.js";

const email = (id: string, workspaceId = "ws_a"): StoredEmail => ({
  id,
  workspaceId,
  messageId: `<${id}@acme.test>`,
  status: "SENT",
  to: "ann@example.test",
  type: "raw",
  createdAt: new Date(),
  updatedAt: new Date(),
  recipient: "ann@example.test",
  fromEmail: "team@acme.test",
  fromName: "",
  variables: {},
  compiled: new Uint8Array([1, 2, 3]),
  dispatch: "claimed",
  leaseOwner: "me",
  leaseUntil: new Date(Date.now() + 30_000),
  dueAt: new Date(),
});

describe("inserting an email with its content", () => {
  for (const freshId of [false, true]) {
    it(`stores both, and refuses a second email of the id leaving the first intact (freshId: ${freshId})`, async () => {
      const store = new CollectionEmailStore(openMemoryStore());
      await store.init();
      expect(await store.insert(email("trs_1"), { freshId })).toBe(true);
      expect(await store.find("ws_a", "trs_1")).toMatchObject({ id: "trs_1", status: "SENT" });
      expect(await store.compiledContent("ws_a", "trs_1")).toEqual(new Uint8Array([1, 2, 3]));

      expect(await store.insert({ ...email("trs_1", "ws_b"), compiled: new Uint8Array([9]) }, { freshId })).toBe(false);
      // Whatever part of the second it managed to write was taken back, the first's untouched.
      expect(await store.find("ws_a", "trs_1")).toMatchObject({ id: "trs_1" });
      expect(await store.find("ws_b", "trs_1")).toBeNull();
      expect(await store.compiledContent("ws_a", "trs_1")).toEqual(new Uint8Array([1, 2, 3]));
    });
  }

  it("takes the content back when the record cannot be written (fresh id)", async () => {
    const store = new CollectionEmailStore(openMemoryStore());
    await store.init();
    // A record of this id without content (its content already dropped): the content written now is an orphan.
    await store.insert({ ...email("trs_2"), compiled: undefined });
    expect(await store.insert(email("trs_2"), { freshId: true })).toBe(false);
    expect(await store.compiledContent("ws_a", "trs_2")).toBeNull();
  });
});
