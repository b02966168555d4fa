import { loadConfig, type DeliverySettings } from "@mailroom/kit/config.js";

export type { DeliverySettings };

/** Delivery-only settings; read and validated with the rest of the config in kit. */
export function loadDeliverySettings(env: NodeJS.ProcessEnv = process.env): DeliverySettings {
  return loadConfig(env).delivery;
}
