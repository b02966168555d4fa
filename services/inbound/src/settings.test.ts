import { describe, expect, it } from "vitest";
import { ConfigError } from "@mailroom/kit/config.js";
import { loadInboundSettings } from "./settings.js";

describe("inbound settings", () => {
  it("keeps the defaults users rely on", () => {
    expect(loadInboundSettings({})).toEqual({ port: 2525, maxMessageBytes: 10 * 1024 * 1024, rememberMs: 30 * 24 * 3600_000, bounceDomain: undefined, providers: {} });
  });

  it("reads days as milliseconds and the bounce domain in lower case", () => {
    const s = loadInboundSettings({ MAILROOM_INBOUND_REMEMBER_DAYS: "1.5", MAILROOM_BOUNCE_DOMAIN: "Bounce.Example.TEST" });
    expect(s.rememberMs).toBe(36 * 3600_000);
    expect(s.bounceDomain).toBe("bounce.example.test");
  });

  it("refuses a bad value with a message naming the variable", () => {
    expect(() => loadInboundSettings({ MAILROOM_INBOUND_PORT: "70000" })).toThrow(ConfigError);
    expect(() => loadInboundSettings({ MAILROOM_INBOUND_MAX_BYTES: "10" })).toThrow(/^invalid configuration:\n {2}MAILROOM_INBOUND_MAX_BYTES: /);
  });
});
