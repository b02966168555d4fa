import { describe, expect, it } from "vitest";
import { mayPost } from "./session.js";
import type { ConsoleSession } from "./types.js";

/**
 * Pages offer a form only to a session whose role may post it (roles.ts): an EDITOR member
 * sees no webhook or domain forms (ADMIN), an api_user key session keeps them (the rule's
 * `keys: "EDITOR"`), a read-only session sees none.
 */
const session = (kind: "member" | "key", role: ConsoleSession["role"], canEdit = role !== "VIEWER"): ConsoleSession =>
  ({ kind, role, scopes: role === "VIEWER" ? ["api_read"] : ["api_user", "api_read"], canEdit }) as ConsoleSession;

describe("mayPost: forms a console session may use", () => {
  const routes = ["/console/webhooks", "/console/webhooks/:id/test", "/console/webhooks/:id/deliveries/:delivery/redeliver", "/console/domains", "/console/domains/:domain/verify", "/console/team/invite"];

  it("shows the set-up forms to ADMIN and OWNER members only", () => {
    for (const route of routes) {
      expect(mayPost(session("member", "OWNER"), route), route).toBe(true);
      expect(mayPost(session("member", "ADMIN"), route), route).toBe(true);
      expect(mayPost(session("member", "EDITOR"), route), route).toBe(false);
      expect(mayPost(session("member", "VIEWER"), route), route).toBe(false);
    }
  });

  it("keeps webhooks and domains for an api_user key session, and content forms for EDITOR members", () => {
    expect(mayPost(session("key", "EDITOR"), "/console/webhooks")).toBe(true);
    expect(mayPost(session("key", "EDITOR"), "/console/domains")).toBe(true);
    expect(mayPost(session("key", "EDITOR"), "/console/team/invite")).toBe(false);
    expect(mayPost(session("member", "EDITOR"), "/console/topics")).toBe(true);
    expect(mayPost(session("key", "VIEWER"), "/console/topics")).toBe(false);
  });

  it("answers no for a route without a rule", () => {
    expect(mayPost(session("member", "OWNER"), "/console/no-such-page")).toBe(false);
  });
});
