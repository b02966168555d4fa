import net from "node:net";

/**
 * Ports for the processes a test starts. Asking the OS for port 0 and closing it is racy when
 * two test workers run at once: both can be handed the same port before either binds, and the
 * loser's unit dies while `waitListening` sees the winner's socket. So each worker (vitest's
 * VITEST_POOL_ID; benches are one process) takes ports from its own block below Linux's
 * ephemeral range (32768+), where neither the OS's port-0 binds nor outgoing connections land,
 * and never hands the same port out twice. A port is still checked free before it is handed out.
 */
const BLOCK_SIZE = 2_000;
const FIRST_PORT = 12_000;
const pool = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 0);
/**
 * Two test runs at once (two `vitest run`s on one machine) have the same pool ids: the
 * block also depends on the run (a worker's parent is its run's main process), and each
 * process starts at a random place in its block, so two runs rarely try the same port at
 * the same moment (the bind check covers a port the other run already holds).
 */
const run = process.env.VITEST_POOL_ID ? process.ppid : process.pid;
const blockStart = FIRST_PORT + ((pool + run) % 10) * BLOCK_SIZE;
let next = Math.floor(Math.random() * BLOCK_SIZE);

export async function freePort(host = "127.0.0.1"): Promise<number> {
  for (let tries = 0; tries < BLOCK_SIZE; tries++) {
    const port = blockStart + (next++ % BLOCK_SIZE);
    if (await bindable(port, host)) return port;
  }
  throw new Error(`no free port in ${blockStart}-${blockStart + BLOCK_SIZE - 1}`);
}

function bindable(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

export async function waitForPort(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, "127.0.0.1");
      s.once("connect", () => { s.destroy(); resolve(true); });
      s.once("error", () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`port ${port} did not open within ${timeoutMs} ms`);
}
