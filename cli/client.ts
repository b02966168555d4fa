import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { DirectoryService } from "../gen/mailroom/directory/v1/directory_pb.js";
import { connectClient, errorInfoOf, loadConfig } from "@mailroom/kit";

export type DirectoryClient = Client<typeof DirectoryService>;

/** MAILROOM_DIRECTORY_URL as kit's config reads it (default: the local launcher's port). */
export function directoryUrl(env: NodeJS.ProcessEnv = process.env): string {
  return loadConfig(env).urls.directory;
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
