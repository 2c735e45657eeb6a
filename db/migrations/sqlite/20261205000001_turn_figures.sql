-- The figures the overview sums, written with each trace (save_turn), so
-- the overview reads small columns instead of parsing every trace: tokens,
-- cost, and the turn's tool calls as a small JSON array of {name, status}.
ALTER TABLE turns ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';

UPDATE turns SET
    prompt_tokens = CAST(COALESCE(json_extract(trace, '$.usage.promptTokens'), 0) AS INTEGER),
    completion_tokens = CAST(COALESCE(json_extract(trace, '$.usage.completionTokens'), 0) AS INTEGER),
    cost_usd = CAST(COALESCE(json_extract(trace, '$.costUsd'), 0) AS REAL),
    tools = COALESCE((SELECT json_group_array(json_object(
                'name', json_extract(c.value, '$.name'),
                'status', json_extract(c.value, '$.status')))
            FROM json_each(turns.trace, '$.toolCalls') AS c), '[]');

-- The overview reads only this index (a covering one): the rows themselves
-- carry the whole trace and are slow to scan. It replaces turns_started.
CREATE INDEX turns_overview ON turns(started_at, duration_ms, stop_reason,
    prompt_tokens, completion_tokens, cost_usd, tools);
DROP INDEX turns_started;
