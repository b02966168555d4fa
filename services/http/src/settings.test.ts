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

  it("takes OpenID Connect sign-in with issuer, client id and secret together, or not at all", () => {
    const config = loadConfig({});
    const all = { MAILROOM_OIDC_ISSUER: "https://id.example.test/realms/x", MAILROOM_OIDC_CLIENT_ID: "mailroom", MAILROOM_OIDC_CLIENT_SECRET: "s3cret" };
    expect(loadGatewaySettings(config, all).oidc).toEqual({ issuer: all.MAILROOM_OIDC_ISSUER, clientId: "mailroom", clientSecret: "s3cret", name: "id.example.test", insecure: false });
    expect(loadGatewaySettings(config, { ...all, MAILROOM_OIDC_NAME: "Keycloak" }).oidc?.name).toBe("Keycloak");
    expect(() => loadGatewaySettings(config, { MAILROOM_OIDC_ISSUER: all.MAILROOM_OIDC_ISSUER })).toThrow(/MAILROOM_OIDC_CLIENT_ID: .*\n {2}MAILROOM_OIDC_CLIENT_SECRET: /);
    expect(() => loadGatewaySettings(config, { MAILROOM_OIDC_CLIENT_SECRET: "s" })).toThrow(ConfigError);
    expect(() => loadGatewaySettings(config, { MAILROOM_OIDC_NAME: "Keycloak" })).toThrow(/MAILROOM_OIDC_NAME/);
    expect(() => loadGatewaySettings(config, { ...all, MAILROOM_OIDC_ISSUER: "http://id.example.test" })).toThrow(/MAILROOM_OIDC_ISSUER: must be an https URL/);
    expect(loadGatewaySettings(config, { ...all, MAILROOM_OIDC_ISSUER: "http://127.0.0.1:9000" }).oidc?.insecure).toBe(true);
  });

  it("takes the console's system sender as an address and the workspace that sends it, together", () => {
    const config = loadConfig({});
    expect(loadGatewaySettings(config, { MAILROOM_SYSTEM_FROM: "Mailroom <signin@mail.example.test>", MAILROOM_SYSTEM_WORKSPACE: "ws_system" }).systemSender)
      .toEqual({ workspaceId: "ws_system", from: "signin@mail.example.test", fromName: "Mailroom" });
    expect(loadGatewaySettings(config, { MAILROOM_SYSTEM_FROM: "signin@mail.example.test", MAILROOM_SYSTEM_WORKSPACE: "ws_system" }).systemSender?.fromName).toBe("");
    expect(() => loadGatewaySettings(config, { MAILROOM_SYSTEM_FROM: "signin@mail.example.test" })).toThrow(/MAILROOM_SYSTEM_WORKSPACE: /);
    expect(() => loadGatewaySettings(config, { MAILROOM_SYSTEM_WORKSPACE: "ws_system" })).toThrow(/MAILROOM_SYSTEM_FROM: /);
    expect(() => loadGatewaySettings(config, { MAILROOM_SYSTEM_FROM: "not an address", MAILROOM_SYSTEM_WORKSPACE: "ws_system" })).toThrow(/MAILROOM_SYSTEM_FROM: must be an address/);
  });
});
