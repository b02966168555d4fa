import { describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { AppError, appError, toConnectError } from "@mailroom/kit/errors.js";
import { createAuthHook } from "./auth.js";
import type { ServiceClients } from "@mailroom/http/deps.js";

/** An accounts unit whose authenticate answers after a tick and counts its calls. */
function countingAccounts(answer: (apiKey: string) => { workspaceId: string; keyId: string; scopes: string[] }) {
  const calls: string[] = [];
  const accounts = {
    async authenticate({ apiKey }: { apiKey: string }) {
      calls.push(apiKey);
      await new Promise((r) => setTimeout(r, 5));
      return answer(apiKey);
    },
  };
  return { calls, clients: { accounts } as unknown as ServiceClients };
}

const requestWith = (key: string) =>
  ({ headers: { authorization: `Bearer ${key}` }, routeOptions: { config: {} } }) as unknown as FastifyRequest;

describe("API key authentication", () => {
  it("makes one accounts call for concurrent requests with a key not yet cached", async () => {
    const { calls, clients } = countingAccounts(() => ({ workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] }));
    const authenticate = createAuthHook({ clients, authCacheMs: 60_000 });
    const requests = Array.from({ length: 10 }, () => requestWith("mr_test_key_1"));
    await Promise.all(requests.map((r) => authenticate(r)));
    expect(calls).toEqual(["mr_test_key_1"]);
    expect(requests.every((r) => r.auth?.workspaceId === "ws_a")).toBe(true);
    await authenticate(requestWith("mr_test_key_1"));
    expect(calls.length).toBe(1);
  });

  it("asks again once the cached answer is older than authCacheMs", async () => {
    const { calls, clients } = countingAccounts(() => ({ workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] }));
    const authenticate = createAuthHook({ clients, authCacheMs: 20 });
    await authenticate(requestWith("mr_test_key_1"));
    await new Promise((r) => setTimeout(r, 40));
    await authenticate(requestWith("mr_test_key_1"));
    expect(calls.length).toBe(2);
  });

  it("does not cache refusals: an unknown key is a 401 every time it is asked", async () => {
    let known = false;
    const { calls, clients } = countingAccounts(() => {
      if (!known) throw new ConnectError("unknown key", Code.Unauthenticated);
      return { workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] };
    });
    const authenticate = createAuthHook({ clients, authCacheMs: 60_000 });
    const refused = await authenticate(requestWith("mr_test_key_2")).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: "unauthorized", httpStatus: 401, message: "Invalid API key" });
    known = true;
    await authenticate(requestWith("mr_test_key_2"));
    expect(calls.length).toBe(2);
  });

  it("a banned workspace's key is a 403 workspace_banned (the accounts unit's message kept), not an unknown key", async () => {
    const { clients } = countingAccounts(() => {
      throw toConnectError(appError({ code: "workspace_banned", httpStatus: 403, message: "This workspace is banned by the server's operator: abuse" }));
    });
    const err = await createAuthHook({ clients, authCacheMs: 60_000 })(requestWith("mr_test_key_4")).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "workspace_banned", httpStatus: 403, message: "This workspace is banned by the server's operator: abuse" });
  });

  it("passes other accounts failures on to the error handler", async () => {
    const { clients } = countingAccounts(() => {
      throw new ConnectError("down", Code.Unavailable);
    });
    const err = await createAuthHook({ clients, authCacheMs: 60_000 })(requestWith("mr_test_key_3")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
  });
});

describe("API key authentication under the failed-attempt limiter", () => {
  it("charges one attempt for concurrent first requests with one key", async () => {
    const { AuthFailureLimiter } = await import("./rate-limit.js");
    const { calls, clients } = countingAccounts(() => ({ workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] }));
    const authenticate = createAuthHook({ clients, authCacheMs: 60_000 }, new AuthFailureLimiter(5));
    const results = await Promise.allSettled(
      Array.from({ length: 64 }, () => authenticate({ ...requestWith("mr_test_key_1"), ip: "10.0.0.2" } as unknown as FastifyRequest)),
    );
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(calls).toEqual(["mr_test_key_1"]);
  });

  it("charges no attempt to a busy client whose valid key's cached answer just expired", async () => {
    const { AuthFailureLimiter } = await import("./rate-limit.js");
    const { calls, clients } = countingAccounts(() => ({ workspaceId: "ws_a", keyId: "key_1", scopes: ["api_user"] }));
    const failures = new AuthFailureLimiter(5);
    const authenticate = createAuthHook({ clients, authCacheMs: 20 }, failures);
    const request = () => ({ ...requestWith("mr_test_key_1"), ip: "10.0.0.1" }) as unknown as FastifyRequest;
    await authenticate(request());
    await new Promise((r) => setTimeout(r, 40));
    // 64 concurrent requests after expiry: one accounts call, no 429 from the 5-attempt bucket.
    const results = await Promise.allSettled(Array.from({ length: 64 }, () => authenticate(request())));
    expect(results.filter((r) => r.status === "rejected")).toEqual([]);
    expect(calls.length).toBe(2);
    // Guessing is still limited: unknown keys from the address run out after 5 attempts.
    const guesses = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => authenticate({ ...requestWith(`mr_guess_${i}`), ip: "10.0.0.1" } as unknown as FastifyRequest)),
    );
    expect(guesses.filter((g) => g.status === "rejected" && (g.reason as AppError).httpStatus === 429).length).toBeGreaterThan(0);
  });
});
