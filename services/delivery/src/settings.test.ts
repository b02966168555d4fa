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

  describe("delivery routes", () => {
    const routes = (list: unknown) => ({ MAILROOM_DELIVERY_ROUTES: JSON.stringify(list) });

    it("keeps today's behaviour: capture without a relay, one route named default with MAILROOM_SMTP_URL", () => {
      const capture = loadDeliverySettings({});
      expect(capture.mode).toBe("capture");
      expect(capture.routes).toEqual([{ name: "capture", kind: "capture", weight: 1, lanes: [], workspaces: [] }]);
      const relay = loadDeliverySettings({ MAILROOM_SMTP_URL: "smtp://u:p@relay.test:2525", MAILROOM_SMTP_RATE: "5" });
      expect(relay.mode).toBe("relay");
      expect(relay.routes).toEqual([{ name: "default", kind: "relay", url: "smtp://u:p@relay.test:2525", weight: 1, lanes: [], workspaces: [] }]);
      expect(relay.relayRate).toBe(5);
      expect(relay.routeDownMs).toBe(60_000);
      expect(relay.routeDownAfter).toBe(10);
      expect(loadDeliverySettings({ MAILROOM_DELIVERY_MODE: "direct" }).routes).toEqual([{ name: "direct", kind: "direct", weight: 1, lanes: [], workspaces: [] }]);
    });

    it("reads named routes with weights, lanes, workspaces, provider, rate and pool size", () => {
      const s = loadDeliverySettings(routes([
        { name: "ses", url: "smtp://user:pass@email-smtp.eu-west-1.amazonaws.com:587", weight: 3, lanes: ["broadcast"], provider: "ses", rate: 14, poolSize: 10 },
        { name: "backup", url: "smtps://relay.test", weight: 0 },
        { name: "mx", direct: true, workspaces: ["ws_big"] },
      ]));
      expect(s.mode).toBe("relay");
      expect(s.routes).toEqual([
        { name: "ses", kind: "relay", url: "smtp://user:pass@email-smtp.eu-west-1.amazonaws.com:587", weight: 3, lanes: ["broadcast"], workspaces: [], provider: "ses", rate: 14, poolSize: 10 },
        { name: "backup", kind: "relay", url: "smtps://relay.test", weight: 0, lanes: [], workspaces: [] },
        { name: "mx", kind: "direct", weight: 1, lanes: [], workspaces: ["ws_big"] },
      ]);
      expect(loadDeliverySettings(routes([{ name: "mx", direct: true }])).mode).toBe("direct");
    });

    it("lists direct delivery's variables set while no route is direct (warned at start), none when one is", () => {
      const relay = { MAILROOM_SMTP_URL: "smtp://r.test", MAILROOM_DELIVERY_EHLO_NAME: "mta.example.com", MAILROOM_DELIVERY_DOMAIN_LIMITS: "{}", MAILROOM_DELIVERY_DNS_SERVERS: " " };
      expect(loadDeliverySettings(relay).unusedDirectVariables).toEqual(["MAILROOM_DELIVERY_EHLO_NAME", "MAILROOM_DELIVERY_DOMAIN_LIMITS"]);
      expect(loadDeliverySettings({ MAILROOM_SMTP_URL: "smtp://r.test" }).unusedDirectVariables).toEqual([]);
      expect(loadDeliverySettings({ MAILROOM_DELIVERY_MODE: "direct", MAILROOM_DELIVERY_EHLO_NAME: "mta.example.com" })).toMatchObject({ unusedDirectVariables: [], direct: { ehloName: "mta.example.com" } });
    });

    it("refuses every route setting that could not take effect, naming the variable", () => {
      const bad: Array<[Record<string, string>, RegExp]> = [
        [{ MAILROOM_DELIVERY_MODE: "relay" }, /MAILROOM_DELIVERY_MODE: relay needs MAILROOM_SMTP_URL/],
        [{ MAILROOM_DELIVERY_MODE: "smoke" }, /MAILROOM_DELIVERY_MODE/],
        [{ MAILROOM_DELIVERY_MODE: "direct", MAILROOM_SMTP_URL: "smtp://r.test" }, /MAILROOM_SMTP_URL/],
        [{ MAILROOM_DELIVERY_MODE: "capture", MAILROOM_SMTP_URL: "smtp://r.test" }, /MAILROOM_SMTP_URL/],
        [{ MAILROOM_DELIVERY_ROUTES: "[{" }, /MAILROOM_DELIVERY_ROUTES: not JSON/],
        [routes([]), /MAILROOM_DELIVERY_ROUTES: must list at least one route/],
        [routes([{ name: "Bad Name", url: "smtp://r.test" }]), /MAILROOM_DELIVERY_ROUTES: \[0\]\.name: /],
        [routes([{ name: "a", url: "smtp://r.test", direct: true }]), /MAILROOM_DELIVERY_ROUTES: .*either url or "direct": true/],
        [routes([{ name: "a" }]), /either url or "direct": true/],
        [routes([{ name: "a", url: "http://r.test" }]), /\[0\]\.url: must be smtp:/],
        [routes([{ name: "a", url: "smtp://r.test", weight: -1 }]), /\[0\]\.weight/],
        [routes([{ name: "a", url: "smtp://r.test", lanes: ["bulk"] }]), /\[0\]\.lanes\[0\]/],
        [routes([{ name: "a", url: "smtp://r.test", provider: "sparkpost" }]), /\[0\]\.provider/],
        [routes([{ name: "a", url: "smtp://r.test", colour: "red" }]), /colour/],
        [routes([{ name: "a", direct: true, poolSize: 3 }]), /poolSize is for relays/],
        [routes([{ name: "a", direct: true, provider: "sendgrid" }]), /MAILROOM_DELIVERY_ROUTES: .*provider is for relays/],
        [routes([{ name: "a", url: "smtp://r.test" }, { name: "a", url: "smtp://s.test" }]), /"a" is used twice/],
        [routes([{ name: "a", url: "smtp://r.test", lanes: ["broadcast"] }]), /no route without "workspaces" carries transactional mail/],
        [routes([{ name: "a", url: "smtp://r.test" }, { name: "b", url: "smtp://s.test", workspaces: ["ws_1"], lanes: ["broadcast"] }]), /workspace ws_1 .* none carries transactional mail/],
        [{ ...routes([{ name: "a", url: "smtp://r.test" }]), MAILROOM_SMTP_URL: "smtp://r.test" }, /MAILROOM_SMTP_URL: set either/],
        [{ ...routes([{ name: "a", url: "smtp://r.test" }]), MAILROOM_SMTP_RATE: "10" }, /MAILROOM_SMTP_RATE: .*"rate"/],
        [{ ...routes([{ name: "a", url: "smtp://r.test" }]), MAILROOM_DELIVERY_MODE: "direct" }, /MAILROOM_DELIVERY_MODE: direct, but no route/],
        [{ ...routes([{ name: "a", direct: true }]), MAILROOM_DELIVERY_MODE: "relay" }, /MAILROOM_DELIVERY_MODE: relay, but no route .* is a relay/],
        [{ ...routes([{ name: "a", url: "smtp://r.test" }]), MAILROOM_DELIVERY_MODE: "capture" }, /MAILROOM_DELIVERY_MODE: capture/],
        [{ MAILROOM_DELIVERY_ROUTE_DOWN_MS: "5" }, /MAILROOM_DELIVERY_ROUTE_DOWN_MS/],
        [{ MAILROOM_DELIVERY_ROUTE_DOWN_AFTER: "0" }, /MAILROOM_DELIVERY_ROUTE_DOWN_AFTER/],
      ];
      for (const [env, message] of bad) {
        expect(() => loadDeliverySettings(env), JSON.stringify(env)).toThrow(ConfigError);
        expect(() => loadDeliverySettings(env), JSON.stringify(env)).toThrow(message);
      }
    });
  });
});
