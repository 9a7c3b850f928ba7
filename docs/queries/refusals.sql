-- Requests the tunnel refused (4xx), by reason, over the last hour.
SELECT blob2 AS reason, SUM(_sample_interval) AS requests
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR AND blob1 = 'rejected'
GROUP BY reason
ORDER BY requests DESC, reason
