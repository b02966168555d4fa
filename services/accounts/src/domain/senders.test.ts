import { createPublicKey, createSign, createVerify } from "node:crypto";
import { describe, expect, it } from "vitest";
import { errorInfoOf } from "@mailroom/kit/errors.js";
import { parseMailbox } from "@mailroom/records/address.js";
import { generateDkimKeyPair } from "../adapters/dns.js";
import { memoryDirectory, snapshot } from "../../../audience/src/testing.js";

async function acme() {
  const dir = await memoryDirectory();
  await dir.workspaces.create({ id: "ws_acme", name: "Acme" });
  await dir.senders.markEmailVerified("ws_acme", "founder@Gmail.TEST");
  await dir.senders.markDomainVerified("ws_acme", "acme.test");
  await dir.senders.addEmail("ws_acme", "pending@else.test", false);
  await dir.senders.addDomain("ws_acme", "pending.test");
  return dir;
}

describe("senders", () => {
  it("generates a real RSA 2048 DKIM key pair whose public half is the p= value", async () => {
    const pair = await generateDkimKeyPair();
    const pub = createPublicKey({ key: Buffer.from(pair.publicKey, "base64"), format: "der", type: "spki" });
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048);
    const signature = createSign("sha256").update("hello").sign(pair.privateKeyPem);
    expect(createVerify("sha256").update("hello").verify(pub, signature)).toBe(true);
  });

  it("parses `Name <address>` with a real parser and refuses anything else", () => {
    expect(parseMailbox('"Doe, Jane" <Jane@Example.TEST>')).toEqual({ name: "Doe, Jane", address: "Jane@example.test", local: "Jane", domain: "example.test" });
    for (const bad of ["bad", "a@", "@b.test", "a@b", "a@b.test, c@d.test", "group: a@b.test;", "a@b.test\r\nBcc: x@y.test", "Ann <ann@x.test> trailing", "",
      // quoted local parts come back unquoted: "a b@x.test" is not an address, and the other would pose as bank.test
      '"a b"@x.test', 'Boss <"boss@bank.test"@evil.test>', '"a\\"b"@x.test']) {
      expect(parseMailbox(bad), bad).toBeUndefined();
    }
  });

  it("allows verified addresses (domain case-insensitive) and addresses on verified domains", async () => {
    const dir = await acme();
    expect(await dir.senders.check("ws_acme", "founder@gmail.test")).toMatchObject({ allowed: true, address: "founder@gmail.test", name: "" });
    expect(await dir.senders.check("ws_acme", "Founder <founder@GMAIL.test>")).toMatchObject({ allowed: true, name: "Founder", dkim: undefined });
    const onDomain = await dir.senders.check("ws_acme", "Acme Team <team@ACME.TEST>");
    expect(onDomain).toMatchObject({ allowed: true, address: "team@acme.test", name: "Acme Team" });
    expect(onDomain.dkim?.domain).toBe("acme.test");
  });

  it("refuses other senders and lists what is allowed (verified ones only)", async () => {
    const dir = await acme();
    for (const from of ["someone@gmail.test", "x@pending.test", "pending@else.test", "x@sub.acme.test"]) {
      const res = await dir.senders.check("ws_acme", from);
      expect(res, from).toMatchObject({ allowed: false, allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] });
      expect(res.dkim).toBeUndefined();
    }
  });

  it("answers an unparseable from with 400 invalid_from carrying the allowed lists, and writes nothing", async () => {
    const dir = await acme();
    const before = await snapshot(dir);
    const err = await dir.senders.check("ws_acme", "not an address").catch((e) => e);
    expect(errorInfoOf(err)).toMatchObject({ code: "invalid_from", httpStatus: 400, allowedEmails: ["founder@gmail.test"], allowedDomains: ["acme.test"] });
    for (const bad of ["nope", "a@b.test\nBcc: c@d.test"]) {
      expect(errorInfoOf(await dir.senders.addEmail("ws_acme", bad, true).catch((e) => e))?.code).toBe("invalid_email");
    }
    expect(errorInfoOf(await dir.senders.addDomain("ws_acme", "not a domain").catch((e) => e))?.code).toBe("invalid_domain");
    expect(await snapshot(dir)).toEqual(before);
  });

  it("keeps workspaces apart: another workspace's senders are not allowed", async () => {
    const dir = await acme();
    await dir.workspaces.create({ id: "ws_other", name: "Other" });
    const res = await dir.senders.check("ws_other", "team@acme.test");
    expect(res).toMatchObject({ allowed: false, allowedEmails: [], allowedDomains: [] });
    expect((await dir.senders.list("ws_other")).domains).toEqual([]);
    expect(errorInfoOf(await dir.senders.getDomain("ws_other", "acme.test").catch((e) => e))?.code).toBe("domain_not_found");
  });

  it("adding a domain twice is a 409; mark-verified is idempotent", async () => {
    const dir = await acme();
    expect(errorInfoOf(await dir.senders.addDomain("ws_acme", "ACME.test").catch((e) => e))?.code).toBe("domain_exists");
    const before = await snapshot(dir);
    await dir.senders.markDomainVerified("ws_acme", "acme.test");
    await dir.senders.markEmailVerified("ws_acme", "founder@gmail.test");
    expect(await snapshot(dir)).toEqual(before);
  });
});
