/**
 * OpenID Connect sign-in (MAILROOM_OIDC_*): the authorization-code flow with PKCE, state and
 * nonce (openid-client). The three values live in a sealed, short-lived cookie (path
 * /console/oidc, SameSite=Lax so the provider's redirect back carries it); the callback checks
 * state, exchanges the code with the verifier, and openid-client checks the ID token's
 * signature, issuer, audience (our client id) and nonce. A replayed code is refused by the
 * provider at the token endpoint.
 */
import * as client from "openid-client";
import type { FastifyReply, FastifyRequest } from "fastify";
import { SecretError, openSecret, sealSecret, secretKeysOf, type SecretKeys } from "@mailroom/kit/secrets.js";
import type { Config } from "@mailroom/kit";
import type { OidcSettings } from "@mailroom/http/settings.js";
import { refusal } from "@mailroom/http/errors.js";
import { CONSOLE_PREFIX } from "./types.js";

export const OIDC_COOKIE = "mr_console_oidc";
/** Sealing purpose of the flow cookie: nothing sealed for another purpose opens as it. */
const PURPOSE = "console-oidc-flow";
/** How long a started sign-in may take at the provider. */
const FLOW_TTL_MS = 10 * 60 * 1000;
export const CALLBACK_PATH = `${CONSOLE_PREFIX}/oidc/callback`;

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  exp: number;
}

/** Who the provider says signed in. */
export interface OidcIdentity {
  email: string;
  issuer: string;
  subject: string;
}

/** A refusal of the sign-in, with a message for the person (no provider internals). */
export class OidcSignInError extends Error {}

export interface OidcSignIn {
  readonly name: string;
  /** The provider's authorization URL for a new flow; sets the flow cookie. */
  start(reply: FastifyReply, next: string): Promise<string>;
  /** Completes the flow of the callback request; clears the flow cookie. */
  finish(request: FastifyRequest, reply: FastifyReply): Promise<OidcIdentity & { next: string }>;
}

export function createOidcSignIn(settings: OidcSettings, config: Pick<Config, "publicUrl" | "secret" | "previousSecret">): OidcSignIn {
  const keys: SecretKeys = secretKeysOf(config);
  const redirectUri = `${config.publicUrl}${CALLBACK_PATH}`;
  const cookie = (maxAge?: number) => ({
    path: `${CONSOLE_PREFIX}/oidc`,
    httpOnly: true,
    sameSite: "lax" as const,
    secure: config.publicUrl.startsWith("https:"),
    ...(maxAge === undefined ? {} : { maxAge }),
  });
  // Discovered at first use (the provider may be down when the gateway starts); a failure is retried next time.
  let discovered: Promise<client.Configuration> | undefined;
  const configuration = () => {
    discovered ??= client.discovery(new URL(settings.issuer), settings.clientId, settings.clientSecret, client.ClientSecretBasic(settings.clientSecret),
      settings.insecure ? { execute: [client.allowInsecureRequests] } : undefined)
      .catch((err: unknown) => {
        discovered = undefined;
        throw refusal({ code: "service_unavailable", status: 503, message: `The sign-in provider (${new URL(settings.issuer).host}) cannot be reached; try again shortly. (${(err as Error).message})` });
      });
    return discovered;
  };

  return {
    name: settings.name,
    async start(reply, next) {
      const cfg = await configuration();
      const flow: Flow = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier(), next, exp: Date.now() + FLOW_TTL_MS };
      reply.setCookie(OIDC_COOKIE, sealSecret(keys, PURPOSE, JSON.stringify(flow)), cookie(FLOW_TTL_MS / 1000));
      return client.buildAuthorizationUrl(cfg, {
        redirect_uri: redirectUri,
        scope: "openid email",
        response_type: "code",
        code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: "S256",
        state: flow.state,
        nonce: flow.nonce,
      }).href;
    },
    async finish(request, reply) {
      const raw = request.cookies[OIDC_COOKIE];
      reply.clearCookie(OIDC_COOKIE, cookie());
      let flow: Flow | undefined;
      try {
        flow = raw ? JSON.parse(openSecret(keys, PURPOSE, raw)) as Flow : undefined;
      } catch (err) {
        if (!(err instanceof SecretError || err instanceof SyntaxError)) throw err;
      }
      if (!flow || !(flow.exp > Date.now())) throw new OidcSignInError("This sign-in was not started here, or took too long. Start again.");
      const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      const params = new URLSearchParams(query);
      if (params.get("error")) throw new OidcSignInError(`The provider did not sign you in (${params.get("error")}).`);
      const cfg = await configuration();
      let claims: client.IDToken | undefined;
      let email: unknown;
      let verified: unknown;
      try {
        const tokens = await client.authorizationCodeGrant(cfg, new URL(`${redirectUri}${query}`), {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
        claims = tokens.claims();
        ({ email, email_verified: verified } = (claims ?? {}) as { email?: unknown; email_verified?: unknown });
        // Providers may keep the email claims for the UserInfo endpoint (OIDC Core 5.4): ask it, for the same subject.
        if (claims && typeof email !== "string") {
          const info = await client.fetchUserInfo(cfg, tokens.access_token, claims.sub);
          ({ email, email_verified: verified } = info);
        }
      } catch (err) {
        // Which check failed (claim "aud", "nonce"…, or the provider's error), never the tokens.
        const e = err as Error & { code?: string; error?: string; cause?: { message?: string; claim?: string; cause?: { claim?: string } } };
        const claim = e.cause?.claim ?? e.cause?.cause?.claim;
        request.log.warn({ err: { name: e.name, code: e.code, message: e.cause?.message ?? e.message, claim, error: e.error } }, "OpenID Connect sign-in refused");
        throw new OidcSignInError("The sign-in could not be completed. Start again.");
      }
      if (!claims) throw new OidcSignInError("The provider sent no ID token.");
      if (typeof email !== "string" || !email) throw new OidcSignInError("The provider did not share your email address (scope email).");
      if (verified !== true) throw new OidcSignInError("The provider has not verified your email address.");
      return { email: email.toLowerCase(), issuer: claims.iss, subject: claims.sub, next: flow.next };
    },
  };
}
