import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DnsMxLookup } from "./mx-lookup.js";
import { startMxServer } from "../dns-testing.js";

describe("MX lookups against a real DNS server on loopback", () => {
  const zone = new Map<string, { exchange: string; priority: number }[]>();
  let dns: Awaited<ReturnType<typeof startMxServer>>;
  beforeAll(async () => {
    dns = await startMxServer(zone);
  });
  afterAll(async () => dns?.close());

  it("answers the exchanges by preference, lower-case without the trailing dot, and [] for a domain without MX", async () => {
    const lookup = new DnsMxLookup(`127.0.0.1:${dns.port}`);
    zone.set("in.acme.test", [{ exchange: "Backup.Example.TEST", priority: 20 }, { exchange: "mx.mailroom.test", priority: 10 }]);
    expect(await lookup.mx("in.acme.test")).toEqual(["mx.mailroom.test", "backup.example.test"]);
    expect(await lookup.mx("nothing.acme.test")).toEqual([]);
  });

  it("throws when the lookup itself fails (no server answers)", async () => {
    const closed = await startMxServer(zone);
    await closed.close();
    const lookup = new DnsMxLookup(`127.0.0.1:${closed.port}`, { timeoutMs: 200, tries: 1 });
    await expect(lookup.mx("in.acme.test")).rejects.toMatchObject({ code: expect.stringMatching(/ECONNREFUSED|ETIMEOUT/) });
  });
});
