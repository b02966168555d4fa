import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from "smtp-server";
import type { Logger } from "./domain/ports.js";
import type { InboundMail } from "./domain/inbound.js";

export interface SmtpListenerOptions {
  inbound: InboundMail;
  port: number;
  host: string;
  maxMessageBytes: number;
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
 * SMTP transport (the MX of the bounce domain): refuses at RCPT every address that is not
 * one of our mailboxes (never a relay), reads the message up to the size limit and lets
 * the domain handle it. The reply after DATA is 250 once handled, 451 when something it
 * needs is unavailable (the sending MTA retries later). No AUTH: it is an MX; no STARTTLS.
 */
export async function startSmtpListener(opts: SmtpListenerOptions): Promise<SmtpListener> {
  const { inbound, logger } = opts;
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
    onRcptTo(address, _session, callback) {
      if (inbound.mailboxOf(address.address)) return callback();
      logger.info({ rcptTo: address.address }, "inbound recipient refused");
      callback(smtpError(550, "5.1.1 No such mailbox here"));
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("error", (err) => callback(err));
      stream.on("end", () => {
        if (stream.sizeExceeded) return callback(smtpError(552, `5.3.4 Message larger than ${opts.maxMessageBytes} bytes`));
        const envelope = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
        };
        inbound.receive(envelope, Buffer.concat(chunks)).then(
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
