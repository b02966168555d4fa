/**
 * The one table between the wire's DeliverySource enum and the source names the units use
 * (lanes, subjects, domain records): every unit maps through it, none keeps a copy.
 */
import { DeliverySource } from "@mailroom/proto/events/v1/events_pb.js";
import type { DeliverySourceName } from "./work.js";

const SOURCE: Record<DeliverySourceName, DeliverySource> = {
  transactional: DeliverySource.TRANSACTIONAL,
  broadcast: DeliverySource.BROADCAST,
  test: DeliverySource.BROADCAST_TEST,
};

const SOURCE_NAME: Partial<Record<DeliverySource, DeliverySourceName>> = {
  [DeliverySource.TRANSACTIONAL]: "transactional",
  [DeliverySource.BROADCAST]: "broadcast",
  [DeliverySource.BROADCAST_TEST]: "test",
};

/** The wire's enum value of a source name. */
export function deliverySourceOf(name: DeliverySourceName): DeliverySource {
  return SOURCE[name];
}

/** The name of a wire source; undefined for UNSPECIFIED or a value this release does not know. */
export function deliverySourceNameOf(source: DeliverySource | undefined): DeliverySourceName | undefined {
  return source === undefined ? undefined : SOURCE_NAME[source];
}

/** As deliverySourceNameOf, for what must have a lane: an unknown source throws. */
export function sourceNameOf(source: DeliverySource | undefined): DeliverySourceName {
  const name = deliverySourceNameOf(source);
  if (!name) throw new Error(`delivery source ${source} has no lane`);
  return name;
}
