import { describe, expect, it } from "vitest";
import { silentLogger } from "../../testing.js";
import type { DnsResolver } from "./mx.js";
import { MtaStsPolicies } from "./mta-sts.js";

const notFound = () => Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });

/** An in-process world (unit test): TXT records, the policy host's answer, a clock. */
function world() {
  const txt = new Map<string, string[][] | Error>();
  const policies = new Map<string, string | Error>();
  const fetched: string[] = [];
  let now = 1_000_000;
  const dns: DnsResolver = {
    resolveMx: async () => [],
    resolve4: async (name) => (name.startsWith("mta-sts.") ? [{ address: "192.0.2.80", ttl: 60 }] : []),
    resolve6: async () => [],
    async resolveTxt(name) {
      const v = txt.get(name);
      if (v instanceof Error) throw v;
      if (!v) throw notFound();
      return v;
    },
  };
  const sts = new MtaStsPolicies(dns, silentLogger, {
    now: () => now,
    txtTtlMs: 1, // ask the TXT record every time (the LRU's own clock)
    async fetchText(_address, host) {
      fetched.push(host);
      const p = policies.get(host);
      if (p instanceof Error) throw p;
      if (!p) throw new Error("404");
      return p;
    },
  });
  return { txt, policies, fetched, sts, advance: (ms: number) => (now += ms) };
}

const POLICY = (mode: string, maxAge = 600) => `version: STSv1\nmode: ${mode}\nmx: mx1.example.test\nmx: *.mx.example.test\nmax_age: ${maxAge}\n`;
const tick = () => new Promise((r) => setTimeout(r, 5));

describe("MtaStsPolicies", () => {
  it("no TXT record: no policy, nothing fetched", async () => {
    const w = world();
    expect(await w.sts.policyFor("example.test")).toBeUndefined();
    expect(w.fetched).toEqual([]);
  });

  it("fetches the policy named by the TXT id, keeps it for its max_age, fetches again when the id changes", async () => {
    const w = world();
    w.txt.set("_mta-sts.example.test", [["v=STSv1; id=one"]]);
    w.policies.set("mta-sts.example.test", POLICY("enforce"));
    expect(await w.sts.policyFor("example.test")).toEqual({ mode: "enforce", mx: ["mx1.example.test", "*.mx.example.test"] });
    await tick();
    await w.sts.policyFor("example.test");
    expect(w.fetched).toHaveLength(1);
    w.txt.set("_mta-sts.example.test", [["v=STSv1; id=two"]]);
    w.policies.set("mta-sts.example.test", POLICY("testing"));
    await tick();
    expect(await w.sts.policyFor("example.test")).toMatchObject({ mode: "testing" });
    expect(w.fetched).toHaveLength(2);
  });

  it("a cached policy stays in force while unexpired when the TXT record or the policy host goes away", async () => {
    const w = world();
    w.txt.set("_mta-sts.example.test", [["v=STSv1; id=one"]]);
    w.policies.set("mta-sts.example.test", POLICY("enforce", 600));
    await w.sts.policyFor("example.test");
    w.txt.delete("_mta-sts.example.test");
    await tick();
    expect(await w.sts.policyFor("example.test")).toMatchObject({ mode: "enforce" });
    w.txt.set("_mta-sts.example.test", [["v=STSv1; id=two"]]);
    w.policies.set("mta-sts.example.test", new Error("connection refused"));
    await tick();
    expect(await w.sts.policyFor("example.test")).toMatchObject({ mode: "enforce" });
    // Past max_age, with nothing to renew it: no policy.
    w.advance(601_000);
    expect(await w.sts.policyFor("example.test")).toBeUndefined();
  });

  it("two STS TXT records, or a policy that does not parse, are no policy", async () => {
    const w = world();
    w.txt.set("_mta-sts.two.test", [["v=STSv1; id=a"], ["v=STSv1; id=b"]]);
    expect(await w.sts.policyFor("two.test")).toBeUndefined();
    w.txt.set("_mta-sts.bad.test", [["v=STSv1; id=a"]]);
    w.policies.set("mta-sts.bad.test", "version: STSv1\nmode: sometimes\nmax_age: 60\n");
    expect(await w.sts.policyFor("bad.test")).toBeUndefined();
  });
});
