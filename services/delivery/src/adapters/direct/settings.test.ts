import { describe, expect, it } from "vitest";
import { ConfigError } from "@mailroom/kit/config.js";
import { loadDirectSettings } from "./index.js";
import os from "node:os";
import { vi } from "vitest";
import { effectiveEhlo, limitsFor } from "./settings.js";

describe("direct delivery settings", () => {
  it("defaults like Postfix's: 20 connections per destination domain, port 25, the system's DNS", () => {
    const s = loadDirectSettings({});
    expect(s.localAddress).toBeUndefined();
    expect(s.dnsServers).toEqual([]);
    expect(s.mxPort).toBe(25);
    expect(s.mtaStsPort).toBe(443);
    expect(s.defaultLimits).toEqual({ connections: 20, messagesPerConnection: 100, rate: 0 });
    expect(limitsFor(s, "gmail.com")).toEqual(s.defaultLimits);
  });

  it("reads the EHLO name, source address, DNS servers and per-domain limits", () => {
    const s = loadDirectSettings({
      MAILROOM_DELIVERY_EHLO_NAME: " Mail.Example.TEST ",
      MAILROOM_DELIVERY_LOCAL_ADDRESS: "192.0.2.10",
      MAILROOM_DELIVERY_DNS_SERVERS: "127.0.0.1:5353, [::1]:53",
      MAILROOM_DELIVERY_DOMAIN_CONNECTIONS: "5",
      MAILROOM_DELIVERY_DOMAIN_LIMITS: '{"Gmail.com":{"connections":10,"rate":5}}',
    });
    expect(s.ehloName).toBe("mail.example.test");
    expect(s.localAddress).toBe("192.0.2.10");
    expect(s.dnsServers).toEqual(["127.0.0.1:5353", "[::1]:53"]);
    expect(limitsFor(s, "gmail.com")).toEqual({ connections: 10, messagesPerConnection: 100, rate: 5 });
    expect(limitsFor(s, "example.net")).toEqual({ connections: 5, messagesPerConnection: 100, rate: 0 });
  });

  it.each([
    ["MAILROOM_DELIVERY_DOMAIN_LIMITS", "{gmail.com: 1}"],
    ["MAILROOM_DELIVERY_DOMAIN_LIMITS", '{"gmail.com":{"conections":10}}'],
    ["MAILROOM_DELIVERY_DOMAIN_LIMITS", '{"gmail.com":{"connections":0}}'],
    ["MAILROOM_DELIVERY_LOCAL_ADDRESS", "mail.example.test"],
    ["MAILROOM_DELIVERY_DNS_SERVERS", "not a server"],
    ["MAILROOM_DELIVERY_MX_PORT", "0"],
    ["MAILROOM_DELIVERY_EXTRA_CA_FILE", "/nonexistent/ca.pem"],
    ["MAILROOM_DELIVERY_EHLO_NAME", "mta1"],
    ["MAILROOM_DELIVERY_EHLO_NAME", "a b.example.com"],
    ["MAILROOM_DELIVERY_EHLO_NAME", "192.0.2.10"],
    ["MAILROOM_DELIVERY_EHLO_NAME", "-mta.example.com"],
    ["MAILROOM_DELIVERY_EHLO_NAME", "[192.0.2.10]"],
  ])("refuses a bad %s (%s) naming the variable", (variable, value) => {
    const load = () => loadDirectSettings({ [variable]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(variable));
  });

  it("refuses the test ports with NODE_ENV=production (the defaults are fine)", () => {
    expect(() => loadDirectSettings({ NODE_ENV: "production", MAILROOM_DELIVERY_MX_PORT: "2525" })).toThrow(/MAILROOM_DELIVERY_MX_PORT: is a test override/);
    expect(() => loadDirectSettings({ NODE_ENV: "production", MAILROOM_DELIVERY_MTA_STS_PORT: "8443" })).toThrow(/MAILROOM_DELIVERY_MTA_STS_PORT: is a test override/);
    expect(loadDirectSettings({ NODE_ENV: "production", MAILROOM_DELIVERY_MX_PORT: "25" }).mxPort).toBe(25);
    expect(loadDirectSettings({ MAILROOM_DELIVERY_MX_PORT: "2525" }).mxPort).toBe(2525);
  });

  it("defaults the EHLO name to a qualified host name only; else reports the address literal really sent", () => {
    const hostname = vi.spyOn(os, "hostname");
    try {
      hostname.mockReturnValue("vm");
      const bare = loadDirectSettings({});
      expect(bare.ehloName).toBe("");
      expect(effectiveEhlo(bare)).toBe("");
      expect(effectiveEhlo(loadDirectSettings({ MAILROOM_DELIVERY_LOCAL_ADDRESS: "192.0.2.10" }))).toBe("[192.0.2.10]");
      expect(effectiveEhlo(loadDirectSettings({ MAILROOM_DELIVERY_LOCAL_ADDRESS: "2001:db8::10" }))).toBe("[IPv6:2001:db8::10]");
      expect(effectiveEhlo(loadDirectSettings({ MAILROOM_DELIVERY_EHLO_NAME: "mta1.example.com.", MAILROOM_DELIVERY_LOCAL_ADDRESS: "192.0.2.10" }))).toBe("mta1.example.com");
      hostname.mockReturnValue("Mx1.Example.NET");
      expect(loadDirectSettings({}).ehloName).toBe("mx1.example.net");
    } finally {
      hostname.mockRestore();
    }
  });
});
