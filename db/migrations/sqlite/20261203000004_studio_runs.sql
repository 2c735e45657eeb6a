-- Forks of a turn started in the trace studio (db/src/studio.rs): a run
-- from one checkpoint, away from the customer's conversation. Not a row of
-- `runs`: a fork never holds its conversation.
CREATE TABLE studio_runs (
    id                        TEXT PRIMARY KEY,
    source_graph_execution_id TEXT NOT NULL,
    source_checkpoint_id      TEXT NOT NULL,
    created_by                TEXT NOT NULL,
    created_at                TEXT NOT NULL,
    state                     TEXT NOT NULL CHECK (state IN ('running','done','failed')),
    message                   TEXT,
    engine                    TEXT,
    protocol                  TEXT,
    -- The fork's ChatTurnTraceResult, once done.
    trace                     TEXT,
    error                     TEXT,
    finished_at               TEXT
);
CREATE INDEX studio_runs_source ON studio_runs(source_graph_execution_id, created_at);
CREATE INDEX studio_runs_running ON studio_runs(state, created_at);
