import { describe, expect, it } from "vitest";
import { ConfigError } from "@mailroom/kit/config.js";
import { loadDirectSettings } from "./index.js";
import { limitsFor } from "./settings.js";

describe("direct delivery settings", () => {
  it("defaults like Postfix's: 20 connections per destination domain, port 25, the system's DNS", () => {
    const s = loadDirectSettings({});
    expect(s.ehloName).toBeTruthy();
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
  ])("refuses a bad %s (%s) naming the variable", (variable, value) => {
    const load = () => loadDirectSettings({ [variable]: value });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(new RegExp(variable));
  });
});
