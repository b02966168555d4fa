import { describe, expect, it } from "vitest";
import { SmtpFailure } from "../../domain/ports.js";
import { MxLookup, type DnsResolver } from "./mx.js";

const dnsError = (code: string) => Object.assign(new Error(code), { code });

/** An in-process resolver over a fixed table (unit test); a name missing from every table is NXDOMAIN. */
function resolver(t: {
  mx?: Record<string, Array<{ exchange: string; priority: number }> | string>;
  a?: Record<string, string[] | string>;
  aaaa?: Record<string, string[]>;
}) {
  const calls: string[] = [];
  const known = (name: string) => name in (t.mx ?? {}) || name in (t.a ?? {}) || name in (t.aaaa ?? {});
  const answer = <T>(table: Record<string, T[] | string> | undefined, name: string): T[] => {
    const v = table?.[name];
    if (typeof v === "string") throw dnsError(v);
    if (v) return v;
    throw dnsError(known(name) ? "ENODATA" : "ENOTFOUND");
  };
  const dns: DnsResolver = {
    async resolveMx(name) {
      calls.push(`MX ${name}`);
      return answer(t.mx, name);
    },
    async resolve4(name) {
      calls.push(`A ${name}`);
      return answer(t.a, name).map((address) => ({ address, ttl: 60 }));
    },
    async resolve6(name) {
      calls.push(`AAAA ${name}`);
      return answer(t.aaaa, name).map((address) => ({ address, ttl: 60 }));
    },
    async resolveTxt() {
      return [];
    },
  };
  return { dns, calls };
}

async function failure(p: Promise<unknown>): Promise<SmtpFailure> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(SmtpFailure);
  return err as SmtpFailure;
}

describe("MxLookup", () => {
  it("orders MX hosts by preference, IPv4 before IPv6, and skips a host that does not resolve", async () => {
    const { dns } = resolver({
      mx: { "example.test": [{ exchange: "b.mx.test", priority: 20 }, { exchange: "gone.mx.test", priority: 5 }, { exchange: "a.mx.test", priority: 10 }] },
      a: { "a.mx.test": ["192.0.2.1"], "b.mx.test": ["192.0.2.2"] },
      aaaa: { "a.mx.test": ["2001:db8::1"] },
    });
    const targets = await new MxLookup(dns).targets("Example.TEST");
    expect(targets.map((t) => [t.host, t.address])).toEqual([
      ["a.mx.test", "192.0.2.1"],
      ["a.mx.test", "2001:db8::1"],
      ["b.mx.test", "192.0.2.2"],
    ]);
  });

  it("falls back to the domain's own addresses with no MX record, and keeps to the source address's family", async () => {
    const { dns } = resolver({ a: { "bare.test": ["192.0.2.9"] }, aaaa: { "bare.test": ["2001:db8::9"] } });
    expect((await new MxLookup(dns).targets("bare.test")).map((t) => t.address)).toEqual(["192.0.2.9", "2001:db8::9"]);
    expect((await new MxLookup(dns, { family: 6 }).targets("bare.test")).map((t) => t.address)).toEqual(["2001:db8::9"]);
  });

  it("refuses a null MX (556), a missing domain (550) and a domain without addresses (550) about the recipient", async () => {
    const { dns } = resolver({ mx: { "null.test": [{ exchange: "", priority: 0 }], "noaddr.test": [{ exchange: "nowhere.test", priority: 10 }] } });
    const mx = new MxLookup(dns);
    expect(await failure(mx.targets("null.test"))).toMatchObject({ code: 556, aboutRecipient: true, beforeData: true });
    expect(await failure(mx.targets("missing.test"))).toMatchObject({ code: 550, aboutRecipient: true });
    expect(await failure(mx.targets("noaddr.test"))).toMatchObject({ code: 550, aboutRecipient: true });
  });

  it("a SERVFAIL or timeout is temporary (code 0) and not cached", async () => {
    const t = { mx: { "flaky.test": "ESERVFAIL" as string | Array<{ exchange: string; priority: number }> }, a: { "mx.flaky.test": ["192.0.2.3"] } };
    const { dns } = resolver(t);
    const mx = new MxLookup(dns);
    expect(await failure(mx.targets("flaky.test"))).toMatchObject({ code: 0, aboutRecipient: false });
    t.mx["flaky.test"] = [{ exchange: "mx.flaky.test", priority: 10 }];
    expect((await mx.targets("flaky.test")).map((x) => x.address)).toEqual(["192.0.2.3"]);
  });

  it("caches answers for their TTL (bounded by maxTtlMs)", async () => {
    const { dns, calls } = resolver({ mx: { "c.test": [{ exchange: "mx.c.test", priority: 1 }] }, a: { "mx.c.test": ["192.0.2.4"] } });
    const mx = new MxLookup(dns, { maxTtlMs: 50 });
    await mx.targets("c.test");
    await mx.targets("c.test");
    expect(calls.filter((c) => c === "MX c.test")).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 120));
    await mx.targets("c.test");
    expect(calls.filter((c) => c === "MX c.test")).toHaveLength(2);
  });
});
