-- The spool per minute over the last hour, as its consumer's batches and its heartbeat read the
-- queue (-1: unknown): the deepest backlog and the last one read, the oldest envelope's age, and
-- the stored envelopes delivered.
SELECT toStartOfInterval(timestamp, INTERVAL '1' MINUTE) AS minute,
       max(double4) AS backlog, argMax(double4, timestamp) AS backlog_last, max(double6) AS oldest_age_s,
       SUM(_sample_interval * double7) AS delivered_in_batches
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR AND blob1 IN ('spool_batch', 'spool_heartbeat')
GROUP BY minute
ORDER BY minute
