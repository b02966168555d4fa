import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "@mailroom/kit/config.js";
import { loadGatewaySettings } from "./settings.js";

describe("gateway settings", () => {
  it("keeps the defaults users rely on", () => {
    const s = loadGatewaySettings(loadConfig({}), {});
    expect(s).toEqual({
      httpHost: "127.0.0.1",
      rateLimitPerMinute: 6000,
      rateLimitBurst: 6000,
      authFailuresPerMinute: 20,
      errorDocsUrl: "http://localhost:8080/docs/errors",
      authCacheMs: 10_000,
      capturesMail: true,
    });
  });

  it("derives the error pages from the public URL unless MAILROOM_DOCS_URL names them", () => {
    const config = loadConfig({ MAILROOM_PUBLIC_URL: "https://mail.example.test/" });
    expect(loadGatewaySettings(config, {}).errorDocsUrl).toBe("https://mail.example.test/docs/errors");
    expect(loadGatewaySettings(config, { MAILROOM_DOCS_URL: "https://docs.example.test/errors/" }).errorDocsUrl).toBe("https://docs.example.test/errors");
  });

  it("takes a burst of its own, else a minute's worth", () => {
    const config = loadConfig({});
    expect(loadGatewaySettings(config, { MAILROOM_RATE_LIMIT_PER_MINUTE: "60" }).rateLimitBurst).toBe(60);
    expect(loadGatewaySettings(config, { MAILROOM_RATE_LIMIT_PER_MINUTE: "60", MAILROOM_RATE_LIMIT_BURST: "5" }).rateLimitBurst).toBe(5);
  });

  it("refuses a bad value with a message naming the variable", () => {
    const config = loadConfig({});
    expect(() => loadGatewaySettings(config, { MAILROOM_RATE_LIMIT_PER_MINUTE: "0" })).toThrow(ConfigError);
    expect(() => loadGatewaySettings(config, { MAILROOM_RATE_LIMIT_PER_MINUTE: "0" })).toThrow(/^invalid configuration:\n {2}MAILROOM_RATE_LIMIT_PER_MINUTE: /);
    expect(() => loadGatewaySettings(config, { MAILROOM_DOCS_URL: "not a url" })).toThrow(/MAILROOM_DOCS_URL/);
  });
});
