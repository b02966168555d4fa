import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import ipaddr from "ipaddr.js";
import { MemoryTokenBuckets, type TokenBuckets } from "@mailroom/kit/token-bucket.js";
import type { Logger } from "./domain/ports.js";
import type { InboundMail } from "./domain/inbound.js";

export interface SmtpListenerOptions {
  inbound: InboundMail;
  port: number;
  host: string;
  maxMessageBytes: number;
  /** Messages one client IP may hand over per minute (a minute's worth as the burst); unset: no limit. */
  ratePerMinute?: number;
  /** The buckets of that limit (default: this process's). */
  buckets?: TokenBuckets;
  logger: Logger;
}

export interface SmtpListener {
  port: number;
  close(): Promise<void>;
}

/** Most connections served at once; an MX for bounces sees bursts, not crowds. */
const MAX_CLIENTS = 200;

const smtpError = (responseCode: number, message: string) => Object.assign(new Error(message), { responseCode });

/**
 * Whose rate a client's messages count against: its IPv4 address, or its IPv6 /64 (one host
 * usually holds a whole /64, and could otherwise take a fresh address per message).
 */
export function senderKey(remoteAddress: string): string {
  if (!ipaddr.isValid(remoteAddress)) return remoteAddress;
  const ip = ipaddr.process(remoteAddress);
  if (ip.kind() === "ipv4") return ip.toString();
  return `${(ip as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(":")}::/64`;
}

/**
 * SMTP transport (the MX of the bounce domain and of inbound domains): refuses at RCPT every
 * address that is not one of our mailboxes or an inbound rule's (550, never a relay), each
 * client IP beyond its rate at MAIL FROM (421), reads the message up to the size limit (552:
 * what comes after the limit is read and dropped, never held) and lets the domain handle it.
 * The reply after DATA is 250 once handled, 451 when something it needs is unavailable (the
 * sending MTA retries later). No AUTH: it is an MX; no STARTTLS.
 */
export async function startSmtpListener(opts: SmtpListenerOptions): Promise<SmtpListener> {
  const { inbound, logger } = opts;
  const buckets = opts.buckets ?? new MemoryTokenBuckets();
  const perMinute = opts.ratePerMinute;
  const server = new SMTPServer({
    banner: "Mailroom inbound",
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    disableReverseLookup: true,
    size: opts.maxMessageBytes,
    maxClients: MAX_CLIENTS,
    // Shutdown waits this long for open sessions (the launcher kills after 10 s).
    closeTimeout: 5_000,
    logger: false,
    onMailFrom(_address, session, callback) {
      if (!perMinute) return callback();
      buckets.take(`smtp-in:${senderKey(session.remoteAddress)}`, perMinute / 60, perMinute).then(
        (take) => {
          if (take.granted) return callback();
          logger.info({ remoteAddress: session.remoteAddress }, "inbound sender over its rate; asked to come back later");
          callback(smtpError(421, `4.7.0 Too many messages from ${session.remoteAddress}, try again in ${Math.ceil(take.waitMs / 1000)} s`));
        },
        () => callback(),
      );
    },
    onRcptTo(address, _session, callback) {
      if (inbound.mailboxOf(address.address)) return callback();
      logger.info({ rcptTo: address.address }, "inbound recipient refused");
      callback(smtpError(550, "5.1.1 No such mailbox here"));
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      // Past the limit the rest is only counted (smtp-server sets sizeExceeded as it goes).
      stream.on("data", (chunk: Buffer) => {
        if (!stream.sizeExceeded) chunks.push(chunk);
        else if (chunks.length) chunks.length = 0;
      });
      stream.on("error", (err) => callback(err));
      stream.on("end", () => {
        if (stream.sizeExceeded) return callback(smtpError(552, `5.3.4 Message larger than ${opts.maxMessageBytes} bytes`));
        const envelope = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
        };
        const raw = Buffer.concat(chunks);
        chunks.length = 0; // the copy alone is held while the message is handled
        inbound.receive(envelope, raw).then(
          () => callback(),
          (err: unknown) => {
            logger.warn({ err, ...envelope }, "inbound mail not handled; asked the sender to retry");
            callback(smtpError(451, "4.3.0 Temporary failure, try again later"));
          },
        );
      });
    },
  });
  server.on("error", (err) => logger.warn({ err }, "inbound SMTP connection error"));
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once("error", onError);
    server.listen(opts.port, opts.host, () => {
      server.server.off("error", onError);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
