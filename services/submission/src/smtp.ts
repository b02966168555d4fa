import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerAuthentication, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { AddressAttempts } from "@mailroom/kit/token-bucket.js";
import type { ApiKeys, KeyIdentity } from "./auth.js";
import type { KeyRateLimit } from "./rate-limit.js";
import type { Logger, Submitter } from "./submit.js";

export interface SubmissionListenerOptions {
  keys: ApiKeys;
  /** Failed AUTH attempts per client address (the gateway's limiter). */
  failures: AddressAttempts;
  rateLimit?: KeyRateLimit;
  submitter: Submitter;
  host: string;
  port: number;
  /** With a certificate: STARTTLS on `port`, implicit TLS on `tlsPort`. */
  tls?: { cert: Buffer; key: Buffer; port: number };
  maxMessageBytes: number;
  logger: Logger;
}

export interface SubmissionListener {
  port: number;
  tlsPort?: number;
  close(): Promise<void>;
}

/** At most this many recipients per message: the API's limit of one email (to, cc and bcc). */
export const MAX_RECIPIENTS = 50;
const MAX_CLIENTS = 500;

const reply = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

/** Loopback peers may AUTH without TLS (an app on this machine); nobody else sends a key in clear. */
export function isLoopback(address: string): boolean {
  return address === "::1" || /^(::ffff:)?127\./.test(address);
}

/**
 * SMTP submission (DESIGN §9.5): AUTH PLAIN/LOGIN with any user name and an API key as the
 * password, then each message through the email service. Enhanced status codes are written
 * by us (smtp-server would pick them by reply code alone: 550 would read 5.1.1).
 */
export async function startSubmissionListener(opts: SubmissionListenerOptions): Promise<SubmissionListener> {
  const { logger } = opts;
  const servers: SMTPServer[] = [];
  const make = (secure: boolean) => {
    const server = new SMTPServer({
      banner: "Mailroom submission",
      secure,
      ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
      disabledCommands: opts.tls ? [] : ["STARTTLS"],
      authMethods: ["PLAIN", "LOGIN"],
      // Checked in onAuth, per peer: in clear only from loopback.
      allowInsecureAuth: true,
      hideENHANCEDSTATUSCODES: true,
      disableReverseLookup: true,
      size: opts.maxMessageBytes,
      maxClients: MAX_CLIENTS,
      closeTimeout: 5_000,
      logger: false,
      onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, callback) {
        if (!session.secure && !isLoopback(session.remoteAddress)) {
          return callback(reply(538, opts.tls
            ? "5.7.11 Encryption required: issue STARTTLS (or use the implicit-TLS port) before AUTH"
            : "5.7.11 Encryption required: this server takes AUTH in clear only from loopback; configure a certificate (MAILROOM_SUBMISSION_TLS_CERT)"));
        }
        const address = session.remoteAddress;
        const attempt = opts.failures.attempt(address);
        if (!attempt.ok) return callback(reply(454, `4.7.0 Too many failed authentication attempts from this address; retry in ${attempt.retryAfterS} s`));
        // The password is the API key; it is never logged.
        opts.keys.check(String(auth.password ?? "").trim()).then(
          (checked) => {
            if (checked.ok) {
              opts.failures.refund(address);
              return callback(null, { user: checked.identity });
            }
            if (checked.kind === "unavailable") {
              opts.failures.refund(address);
              logger.warn({ reason: checked.message }, "API key check unavailable");
              return callback(reply(454, "4.7.0 Temporary authentication failure, try again later"));
            }
            logger.info({ remoteAddress: address, method: auth.method, kind: checked.kind }, "submission AUTH refused");
            callback(reply(535, `5.7.8 Authentication failed: ${checked.message} (the password is an API key)`));
          },
          (err: unknown) => callback(reply(454, `4.7.0 Temporary authentication failure (${(err as Error).message})`)),
        );
      },
      onMailFrom(_address, session, callback) {
        const identity = session.user as KeyIdentity | undefined;
        if (!identity) return callback(reply(530, "5.7.0 Authentication required"));
        if (!opts.rateLimit) return callback();
        opts.rateLimit.take(identity.keyId).then(
          (take) => (take.ok ? callback() : callback(reply(451, `4.7.0 ${take.message}`))),
          // The shared buckets unreachable: let the message through (the gateway does the same).
          (err: unknown) => {
            logger.warn({ err }, "rate limit buckets unavailable; message let through");
            callback();
          },
        );
      },
      onRcptTo(_address, session, callback) {
        if (session.envelope.rcptTo.length >= MAX_RECIPIENTS) return callback(reply(452, `4.5.3 At most ${MAX_RECIPIENTS} recipients per message`));
        callback();
      },
      onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("error", (err) => callback(err));
        stream.on("end", () => {
          if (stream.sizeExceeded) return callback(reply(552, `5.3.4 Message larger than ${opts.maxMessageBytes} bytes`));
          const identity = session.user as KeyIdentity;
          const envelope = {
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
          };
          opts.submitter.submit(identity.workspaceId, envelope, Buffer.concat(chunks)).then(
            (r) => (r.code < 300 ? callback(null, r.message) : callback(reply(r.code, r.message))),
            (err: unknown) => {
              logger.warn({ err }, "submission failed; asked the client to retry");
              callback(reply(451, "4.3.0 Temporary failure, try again later"));
            },
          );
        });
      },
    });
    server.on("error", (err) => logger.warn({ err }, "submission SMTP connection error"));
    servers.push(server);
    return server;
  };
  const listen = (server: SMTPServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      server.server.once("error", onError);
      server.listen(port, opts.host, () => {
        server.server.off("error", onError);
        resolve((server.server.address() as AddressInfo).port);
      });
    });
  const port = await listen(make(false), opts.port);
  const tlsPort = opts.tls ? await listen(make(true), opts.tls.port) : undefined;
  return {
    port,
    tlsPort,
    close: () => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined),
  };
}
