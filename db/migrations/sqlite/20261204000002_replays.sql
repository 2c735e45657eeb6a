-- Replay sets (db/src/replays/): a named list of turns a supervisor
-- replays against another provider, engine or protocol, and its replay
-- runs, one fork (studio_runs) per turn. Never edit once landed.
CREATE TABLE replay_sets (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_by  TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    -- The ReplayFilter it was made from, if it was.
    filter      TEXT
);
CREATE INDEX replay_sets_created ON replay_sets(created_at);

CREATE TABLE replay_set_turns (
    set_id             TEXT NOT NULL REFERENCES replay_sets(id),
    position           INTEGER NOT NULL,
    graph_execution_id TEXT NOT NULL,
    PRIMARY KEY (set_id, position),
    UNIQUE (set_id, graph_execution_id)
);

-- A replay run is leased to the process whose task runs it; the
-- housekeeping sweep ends a run whose lease ran out as 'interrupted'.
CREATE TABLE replay_runs (
    id               TEXT PRIMARY KEY,
    set_id           TEXT NOT NULL REFERENCES replay_sets(id),
    created_by       TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    state            TEXT NOT NULL CHECK (state IN ('running','done','interrupted')),
    provider         TEXT,
    engine           TEXT,
    protocol         TEXT,
    lease_owner      TEXT NOT NULL,
    lease_expires_at TEXT NOT NULL,
    finished_at      TEXT
);
CREATE INDEX replay_runs_set ON replay_runs(set_id, created_at);
CREATE INDEX replay_runs_lease ON replay_runs(state, lease_expires_at);

-- One turn of a run: its fork once started, or why it could not be.
CREATE TABLE replay_run_items (
    run_id             TEXT NOT NULL REFERENCES replay_runs(id),
    position           INTEGER NOT NULL,
    graph_execution_id TEXT NOT NULL,
    fork_id            TEXT,
    error              TEXT,
    PRIMARY KEY (run_id, position)
);
