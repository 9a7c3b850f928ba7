-- Sentry's answer per minute over the last hour, for envelopes it answered live: the time to the
-- tunnel's answer (median and 95th percentile, in ms) and how many Sentry took (2xx) or refused.
SELECT toStartOfInterval(timestamp, INTERVAL '1' MINUTE) AS minute,
       quantileExactWeighted(0.5, double2, _sample_interval) AS p50_ms,
       quantileExactWeighted(0.95, double2, _sample_interval) AS p95_ms,
       SUM(_sample_interval) AS answered
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR AND blob1 = 'forwarded'
GROUP BY minute
ORDER BY minute
