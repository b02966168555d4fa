import type { Client } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import type { AccountsService } from "@mailroom/proto/accounts/v1/accounts_pb.js";
import type { ContactService } from "@mailroom/proto/audience/v1/contacts_pb.js";
import { SenderDirectoryClient, type SenderDirectoryClients } from "./sender-directory.js";

/** An accounts client answering checkSender after `delayMs`, counting calls (no contacts client: never asked here). */
function fakeDirectory(delayMs = 0) {
  const counter = { calls: 0 };
  const accounts = {
    async checkSender(req: { workspaceId: string; from: string }) {
      counter.calls += 1;
      await new Promise((r) => setTimeout(r, delayMs));
      return { allowed: true, address: req.from, name: "", dkim: undefined };
    },
  } as unknown as Client<typeof AccountsService>;
  const client: SenderDirectoryClients = { accounts, contacts: {} as Client<typeof ContactService> };
  return { client, counter };
}

describe("SenderDirectoryClient", () => {
  it("asks once for concurrent checks of one sender, then answers from the cache until the TTL ends", async () => {
    const { client, counter } = fakeDirectory(20);
    const directory = new SenderDirectoryClient(client, 150);
    const answers = await Promise.all(Array.from({ length: 10 }, () => directory.checkSender("ws_1", "News@Acme.test")));
    expect(answers.every((a) => a.allowed)).toBe(true);
    expect(counter.calls).toBe(1);
    await directory.checkSender("ws_1", "news@acme.test"); // case-insensitive key
    await directory.checkSender("ws_2", "news@acme.test"); // another tenant: its own entry
    expect(counter.calls).toBe(2);
    await new Promise((r) => setTimeout(r, 200));
    await directory.checkSender("ws_1", "news@acme.test");
    expect(counter.calls).toBe(3);
  });

  it("does not cache at all with a TTL of 0", async () => {
    const { client, counter } = fakeDirectory();
    const directory = new SenderDirectoryClient(client, 0);
    await directory.checkSender("ws_1", "a@acme.test");
    await directory.checkSender("ws_1", "a@acme.test");
    expect(counter.calls).toBe(2);
  });
});
