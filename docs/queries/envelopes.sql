-- Envelopes per minute, project and outcome over the last hour: forwarded, spooled, rejected, failed.
SELECT toStartOfInterval(timestamp, INTERVAL '1' MINUTE) AS minute, index1 AS project,
       blob1 AS outcome, SUM(_sample_interval) AS envelopes
FROM tunnel_envelopes
WHERE timestamp > NOW() - INTERVAL '1' HOUR
  AND blob1 IN ('forwarded', 'spooled', 'rejected', 'failed', 'preflight')
GROUP BY minute, project, outcome
ORDER BY minute, project, outcome
