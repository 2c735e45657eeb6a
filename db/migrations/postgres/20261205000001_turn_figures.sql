-- The figures the overview sums, written with each trace (save_turn), so
-- the overview reads small columns instead of parsing every trace: tokens,
-- cost, and the turn's tool calls as a small JSON array of {name, status}.
ALTER TABLE turns ADD COLUMN prompt_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN completion_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE turns ADD COLUMN tools JSONB NOT NULL DEFAULT '[]'::jsonb;

UPDATE turns SET
    prompt_tokens = COALESCE((trace->'usage'->>'promptTokens')::BIGINT, 0),
    completion_tokens = COALESCE((trace->'usage'->>'completionTokens')::BIGINT, 0),
    cost_usd = COALESCE((trace->>'costUsd')::DOUBLE PRECISION, 0),
    tools = COALESCE((SELECT jsonb_agg(jsonb_build_object('name', c->>'name', 'status', c->>'status'))
            FROM jsonb_array_elements(trace->'toolCalls') AS c), '[]'::jsonb);

-- The overview reads only this index where it can (a covering one): the
-- rows carry the whole trace. It replaces turns_started.
CREATE INDEX turns_overview ON turns(started_at)
    INCLUDE (duration_ms, stop_reason, prompt_tokens, completion_tokens, cost_usd, tools);
DROP INDEX turns_started;
