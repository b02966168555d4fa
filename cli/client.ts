import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { DirectoryService } from "../gen/mailroom/directory/v1/directory_pb.js";
import { connectClient, errorInfoOf } from "../services/kit/src/index.js";

export type DirectoryClient = Client<typeof DirectoryService>;

export const DEFAULT_DIRECTORY_URL = "http://127.0.0.1:7101";

export function directoryUrl(env: NodeJS.ProcessEnv = process.env): string {
  return env.MAILROOM_DIRECTORY_URL || DEFAULT_DIRECTORY_URL;
}

export function directoryClient(url = directoryUrl()): DirectoryClient {
  return connectClient(DirectoryService, url);
}

/** A one-line, human explanation of a failed call. */
export function describeError(err: unknown, url = directoryUrl()): string {
  const info = errorInfoOf(err);
  if (info) return `${info.message} (${info.code})`;
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable || err.code === Code.Unknown && /ECONNREFUSED|fetch failed/i.test(err.rawMessage)) {
      return `cannot reach the directory service at ${url} (is it running? set MAILROOM_DIRECTORY_URL)`;
    }
    return `${err.rawMessage} (${Code[err.code]})`;
  }
  return err instanceof Error ? err.message : String(err);
}
