/**
 * A `grpc.health.v1.Health` client for tests: grpc-js with the service definition of the
 * grpc-node maintainers' `grpc-health-check` package (the standard health.proto).
 */
import { credentials, makeGenericClientConstructor, Metadata, type Client, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

type HealthClient = Client & {
  Check(req: { service: string }, md: Metadata, cb: (err: ServiceError | null, res: { status: string }) => void): void;
  Watch(req: { service: string }, md: Metadata): ClientReadableStream<{ status: string }>;
};

/** A client of the standard health service at `address` (host:port). */
export function healthClient(address: string): HealthClient {
  const Ctor = makeGenericClientConstructor(healthService as never, 'Health');
  return new Ctor(address, credentials.createInsecure()) as unknown as HealthClient;
}

const metadataOf = (md: Record<string, string>): Metadata => {
  const m = new Metadata();
  for (const [k, v] of Object.entries(md)) m.set(k, v);
  return m;
};

/** One `Check` on a fresh channel: the response or the status error (never rejects). */
export async function healthCheck(
  address: string,
  service: string,
  md: Record<string, string> = {},
): Promise<{ res?: { status: string }; err?: ServiceError }> {
  const client = healthClient(address);
  try {
    return await new Promise((resolve) => client.Check({ service }, metadataOf(md), (err, res) => resolve(err ? { err } : { res })));
  } finally {
    client.close();
  }
}

/** A `Watch` call: the statuses it has read so far, and a promise of how it ended. */
export function healthWatch(
  client: HealthClient,
  service: string,
  md: Record<string, string> = {},
): { statuses: string[]; ended: Promise<ServiceError | undefined>; call: ClientReadableStream<{ status: string }> } {
  const call = client.Watch({ service }, metadataOf(md));
  const statuses: string[] = [];
  call.on('data', (m: { status: string }) => statuses.push(m.status));
  const ended = new Promise<ServiceError | undefined>((resolve) => {
    call.on('error', (e: ServiceError) => resolve(e));
    call.on('end', () => resolve(undefined));
  });
  return { statuses, ended, call };
}
