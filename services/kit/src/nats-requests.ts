import { RequestOne, errors } from "@nats-io/nats-core/internal";

/**
 * nats-core 3.4 ends every request, answered or not, with `cancel()`, which rejects the
 * request's (already settled) promise with a new `RequestError("cancelled")`. Building that
 * Error captures a stack trace per request, and a JetStream publish is a request: it was
 * 2.5 % of the email service's CPU under `npm run bench api`, all for a rejection nobody can
 * observe. This gives `cancel()` one shared error when it is not handed one; what it does
 * otherwise (stop the timer, leave the mux, reject an unsettled request) is unchanged.
 */
const CANCELLED = new errors.RequestError("cancelled");

type Cancellable = {
  timer?: { cancel(): void };
  mux: { cancel(request: unknown): void };
  deferred: { reject(err: Error): void };
};

let installed = false;

export function installCheapRequestCancel(): void {
  if (installed) return;
  installed = true;
  const proto = RequestOne.prototype as unknown as { cancel(err?: Error): void };
  proto.cancel = function cancel(this: Cancellable, err?: Error) {
    this.timer?.cancel();
    this.mux.cancel(this);
    this.deferred.reject(err ?? CANCELLED);
  };
}
