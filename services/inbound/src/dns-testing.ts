/** A real DNS server on loopback (UDP, dns2) answering MX queries from a mutable zone: the receiving tests' DNS. */
import type { AddressInfo } from "node:net";
import dns2 from "dns2";

export type MxZone = Map<string, { exchange: string; priority: number }[]>;

export async function startMxServer(zone: MxZone) {
  const { Packet } = dns2;
  const server = dns2.createUDPServer((request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (question.type === Packet.TYPE.MX) {
      for (const mx of zone.get(question.name.toLowerCase()) ?? []) {
        response.answers.push({ name: question.name, type: Packet.TYPE.MX, class: Packet.CLASS.IN, ttl: 1, ...mx } as never);
      }
    }
    void send(response);
  });
  await server.listen(0, "127.0.0.1");
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}
