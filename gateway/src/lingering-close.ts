import net from "node:net";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance } from "fastify";
import type { DrainLimits } from "@mailroom/http/deps.js";

/**
 * How much of a request body the gateway still reads, and for how long, after it has answered
 * the request without reading it all (a 413, or a 401 before the body was read).
 */

/** Enough for a client that reads the answer only once it has sent its whole (≤ 64 MB) body. */
export const DEFAULT_DRAIN_LIMITS: DrainLimits = { ms: 30_000, bytes: 64 * 1024 * 1024 };

/**
 * Answers to requests whose body is still arriving reach the client, every time.
 *
 * Fastify refuses an over-limit body (a Content-Length over the route's bodyLimit, before
 * reading it; a chunked body once it grows past it) with `Connection: close`, and Node then
 * ends the socket with `socket.destroySoon()`: the answer is written, then the socket is
 * destroyed while the client is still uploading. Closing a socket with unread bytes makes
 * the kernel send a reset, and the client gets EPIPE or ECONNRESET instead of the 413 (its
 * write fails, or the reset discards the answer it had not read yet).
 *
 * Here, every answer sent while the request's body is still arriving (on any route, from any
 * hook, handler or error) says `Connection: close`, and the connection closes the way RFC 9112
 * §9.6 describes: the answer is written and the gateway's side is half-closed, the rest of the
 * body is read and discarded, and the socket is closed once the body has ended or the client
 * has closed, or at the latest after `limits.ms` or `limits.bytes` more (a client that never
 * stops sending is then cut off).
 */
export function installLingeringClose(app: FastifyInstance, limits: DrainLimits = DEFAULT_DRAIN_LIMITS): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    const req = request.raw;
    const socket = req.socket;
    // light-my-request's sockets (app.inject) are not net sockets: nothing to linger on.
    if (socket instanceof net.Socket && !lingering.has(socket) && bodyStillArriving(req)) {
      reply.header("connection", "close");
      linger(req, reply.raw, socket, limits);
    }
    done(null, payload);
  });
}

/** Sockets whose answer is written (or being written) while their request body is drained. */
const lingering = new WeakSet<net.Socket>();

/** The request has a body (framed by Content-Length or Transfer-Encoding) not yet all received. */
function bodyStillArriving(req: IncomingMessage): boolean {
  if (req.complete) return false;
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? 0) > 0;
}

function linger(req: IncomingMessage, res: ServerResponse, socket: net.Socket, limits: DrainLimits): void {
  lingering.add(socket);
  let answered = false;
  let bodyEnded = false;
  let drained = 0;

  // The bounds: past them the socket is destroyed, a reset if the client still sends.
  const cutOff = () => socket.destroy();
  const timer = setTimeout(cutOff, limits.ms);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));

  // Node ends the socket of a `Connection: close` answer with destroySoon() (end, then destroy
  // once written); on this socket it only half-closes: the client still gets to send.
  socket.destroySoon = function halfClose(this: net.Socket) {
    if (this.writable) this.end();
  };

  // Read the rest of the body and discard it (listening makes the request flow).
  req.on("data", (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > limits.bytes) cutOff();
  });
  req.once("end", () => {
    bodyEnded = true;
    closeOnceDone();
  });
  res.once("finish", () => {
    answered = true;
    // Node calls destroySoon() on 'finish' before this listener; end() here if it did not.
    if (socket.writable) socket.end();
    closeOnceDone();
  });

  // The body has ended (the client sent it all) and the answer is written: close for good.
  function closeOnceDone() {
    if (!answered || !bodyEnded) return;
    delete (socket as { destroySoon?: unknown }).destroySoon;
    socket.destroySoon();
  }
}
