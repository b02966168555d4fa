/**
 * The body of a DIRECTORY_EVENTS message (published by the audience and accounts units,
 * services/records' change publisher): one event (already the webhook body,
 * `{ id, type, createdAt, workspaceId, data }`), or a batch of events of one write
 * `{ events: [...] }` (an import's thousand SUPPRESSION_CREATED travel as a few messages, not
 * a thousand: one publish, one ack and one outbox record each). Consumers handle every event
 * of a batch as if it had come alone; each keeps its own id, so a webhook still gets one
 * delivery per event.
 */

/** Events per batch message, and its size: a sweep page of them stays a few MB. */
export const DIRECTORY_EVENT_BATCH_MAX = 250;
export const DIRECTORY_EVENT_BATCH_BYTES = 32 * 1024;

/** The event bodies (JSON) of one write cut into batch message bodies within both bounds. */
export function directoryEventBatches(bodies: string[]): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  let bytes = 0;
  for (const body of bodies) {
    if (batch.length && (batch.length >= DIRECTORY_EVENT_BATCH_MAX || bytes + body.length > DIRECTORY_EVENT_BATCH_BYTES)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(body);
    bytes += body.length + 1;
  }
  if (batch.length) batches.push(batch);
  return batches;
}

/** A batch message's body from its events' JSON bodies. */
export const directoryEventBatchBody = (bodies: string[]): string => `{"events":[${bodies.join(",")}]}`;

/** The events a message carries (unchecked objects: each consumer checks its own), or undefined when it is not JSON. */
export function directoryEventsIn(data: Uint8Array): unknown[] | undefined {
  try {
    const body = JSON.parse(new TextDecoder().decode(data)) as unknown;
    if (body && typeof body === "object" && Array.isArray((body as { events?: unknown }).events)) return (body as { events: unknown[] }).events;
    return [body];
  } catch {
    return undefined;
  }
}
