-- Sentry's statuses over the last hour, for every envelope it answered, live or from the spool.
SELECT if(blob1 = 'spool', double3, double4) AS status, SUM(_sample_interval) AS envelopes
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR
  AND ((blob1 IN ('forwarded', 'spooled', 'failed') AND double4 > 0) OR (blob1 = 'spool' AND double3 > 0))
GROUP BY status
ORDER BY status
