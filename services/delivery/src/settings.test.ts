import { describe, expect, it } from "vitest";
import { ConfigError } from "@mailroom/kit/config.js";
import { loadDeliverySettings } from "./settings.js";

describe("delivery settings", () => {
  it("keeps the defaults users rely on", () => {
    const s = loadDeliverySettings({});
    expect(s.smtpUrl).toBeUndefined();
    expect(s.poolSize).toBe(5);
    expect(s.concurrency).toBe(64);
    expect(s.maxAttempts).toBe(12);
    expect(s.ackWaitMs).toBe(30_000);
    expect(s.tlsRejectUnauthorized).toBe(true);
    expect(s.pageConcurrency).toBe(10);
    expect(s.contentCacheBytes).toBe(64 * 1024 * 1024);
  });

  it("reads the relay, the bounce domain and derived values", () => {
    const s = loadDeliverySettings({
      MAILROOM_SMTP_URL: "smtp://relay.test:2525",
      MAILROOM_SMTP_POOL_SIZE: "8",
      MAILROOM_SMTP_IGNORE_TLS: "1",
      MAILROOM_BOUNCE_DOMAIN: " Bounces.Example.TEST ",
      MAILROOM_DELIVERY_CONTENT_CACHE_MB: "1.5",
    });
    expect(s.smtpUrl).toBe("smtp://relay.test:2525");
    expect(s.ignoreTls).toBe(true);
    expect(s.pageConcurrency).toBe(16);
    expect(s.bounceDomain).toBe("bounces.example.test");
    expect(s.contentCacheBytes).toBe(1.5 * 1024 * 1024);
    expect(loadDeliverySettings({ MAILROOM_SMTP_URL: "" }).smtpUrl).toBeUndefined();
  });

  it("refuses a bad value with a message naming the variable", () => {
    expect(() => loadDeliverySettings({ MAILROOM_SMTP_POOL_SIZE: "0" })).toThrow(ConfigError);
    expect(() => loadDeliverySettings({ MAILROOM_SMTP_POOL_SIZE: "0" })).toThrow(/^invalid configuration:\n {2}MAILROOM_SMTP_POOL_SIZE: /);
    expect(() => loadDeliverySettings({ MAILROOM_SMTP_REQUIRE_TLS: "perhaps" })).toThrow(/MAILROOM_SMTP_REQUIRE_TLS/);
  });
});
