// Container health check without curl: GET the URL (default Warden's HTTP readiness endpoint,
// GET /v2/health/ready on port 8000, Triton's health protocol) and exit 0 on 200, 1 otherwise.
const url = process.argv[2] ?? 'http://127.0.0.1:8000/v2/health/ready';
try {
  const res = await fetch(url, { signal: AbortSignal.timeout(4000) });
  process.exit(res.status === 200 ? 0 : 1);
} catch {
  process.exit(1);
}
