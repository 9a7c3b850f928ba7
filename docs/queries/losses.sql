-- Envelopes lost, by reason, over the last hour: failed live with nothing stored (outcome failed),
-- or given up by the spool (outcome spool: dropped, expired, not_allowed, missing, dead_lettered).
SELECT blob1 AS outcome, blob2 AS reason, SUM(_sample_interval) AS envelopes
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR
  AND (blob1 = 'failed' OR (blob1 = 'spool' AND blob2 IN ('dropped', 'expired', 'not_allowed', 'missing', 'dead_lettered')))
GROUP BY outcome, reason
ORDER BY envelopes DESC, outcome, reason
