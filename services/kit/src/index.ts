export * from "./config.js";
export * from "./logger.js";
export * from "./request-context.js";
export * from "./ids.js";
export * from "./errors.js";
export * from "./tokens.js";
export * from "./connect.js";
export * from "./jetstream.js";
