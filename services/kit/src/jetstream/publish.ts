import type { JetStreamClient, JetStreamPublishOptions, PubAck } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { injectTraceContext, inSpan, REQUEST_ID_ATTRIBUTE, REQUEST_ID_HEADER, SpanKind, tracingOn } from "../tracing.js";
import { requestContext } from "../request-context.js";

/**
 * `publish mail.delivery`, `publish audit`: the subject's leading word tokens (at most two), the
 * family every publish of a kind shares; ids further on (`audit.<workspace>`) stay out of it.
 */
const publishSpanName = (subject: string) => {
  const family = subject.split(".", 2).filter((t, i, all) => /^[a-z]+$/.test(t) && all.slice(0, i).every((p) => /^[a-z]+$/.test(p)));
  return `publish ${family.join(".") || subject.split(".", 1)[0]}`;
};

/**
 * `js.publish`, and with traces on a producer span whose context (traceparent) and request id
 * ride in the message's headers, so the consumer's span continues the trace. With traces off
 * it is `js.publish` and nothing else.
 */
export function publishTraced(js: JetStreamClient, subject: string, data: Uint8Array, options: Partial<JetStreamPublishOptions> = {}): Promise<PubAck> {
  if (!tracingOn()) return js.publish(subject, data, options);
  return inSpan(publishSpanName(subject), { kind: SpanKind.PRODUCER, attributes: { "messaging.system": "nats", "messaging.operation.type": "send", "messaging.destination.name": subject } }, (span) => {
    const headers = options.headers ?? natsHeaders();
    injectTraceContext(headers);
    const requestId = requestContext()?.requestId;
    if (requestId) {
      headers.set(REQUEST_ID_HEADER, requestId);
      span?.setAttribute(REQUEST_ID_ATTRIBUTE, requestId);
    }
    if (options.msgID) span?.setAttribute("messaging.message.id", options.msgID);
    return js.publish(subject, data, { ...options, headers });
  });
}
