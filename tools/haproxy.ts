/**
 * An HAProxy configuration for a set of Warden replicas on this machine (the multi-replica test
 * and the fleet bench): HTTP mode, round robin. With `failover`, a replica is checked on
 * `/v2/health/ready` every 200 ms and a request a dead replica never answered is retried on
 * another (inference on the models these use is idempotent).
 */

/** `haproxy.cfg` text: `bind` is `host:port`, `servers` the replicas' `host:port`. */
export function haproxyConfig(bind: string, servers: readonly string[], failover = false): string {
  return [
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 30s',
    '  timeout server 30s',
    ...(failover ? ['  retries 3', '  option redispatch', '  retry-on conn-failure empty-response response-timeout'] : []),
    'frontend fleet',
    `  bind ${bind}`,
    '  default_backend warden',
    'backend warden',
    '  balance roundrobin',
    ...(failover ? ['  option httpchk GET /v2/health/ready', '  http-check expect status 200'] : []),
    ...servers.map((s, i) => `  server r${i} ${s}${failover ? ' check inter 200 fall 1 rise 2' : ''}`),
    '',
  ].join('\n');
}
