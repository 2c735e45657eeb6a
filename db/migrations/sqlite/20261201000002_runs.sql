-- Durable turns. SQLite flavour; never edit once landed.
--
-- Every graph run has a row: its state and the lease its owner renews while
-- it runs. At most one active run per conversation (the partial unique
-- index): that is the conversation's lock, across every instance.
CREATE TABLE runs (
    graph_execution_id TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN
                       ('running','paused','resuming','finished','failed','cancelled')),
    -- The instance that runs it, until when (renewed by its heartbeat).
    lease_owner        TEXT,
    lease_expires_at   TEXT,
    -- How many times it was started: 1, then +1 per recovery.
    attempts           INTEGER NOT NULL DEFAULT 1,
    -- Why it failed or was cancelled, and who cancelled it.
    note               TEXT,
    ended_by           TEXT,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE UNIQUE INDEX runs_one_active ON runs(session_id)
    WHERE state IN ('running','paused','resuming');
CREATE INDEX runs_state_lease ON runs(state, lease_expires_at);

-- The turn locks of the earlier version become runs: paused ones stay
-- paused; running ones get an expired lease, so recovery takes them over.
INSERT INTO runs (graph_execution_id, session_id, state, lease_owner, lease_expires_at,
                  attempts, created_at, updated_at)
SELECT graph_execution_id, session_id, state, instance_id,
       CASE WHEN state = 'running' THEN locked_at END, 1, locked_at, locked_at
FROM turn_locks;
DROP TABLE turn_locks;

-- "Waiting for approval" is now read from the paused run, not stored.
UPDATE conversations SET handling = 'ai' WHERE handling = 'waiting_approval';

-- Each publisher of a conversation's live events (a run starting or
-- resuming, a decision) takes the next epoch; an event's sequence number is
-- (epoch, n), so numbers grow across instances without a write per event.
ALTER TABLE conversations ADD COLUMN event_epoch INTEGER NOT NULL DEFAULT 0;

-- Approvals can end without a decision: cancelled with their turn, or
-- expired at a deadline. SQLite cannot change a CHECK: rebuild the table.
CREATE TABLE approvals_next (
    id                 TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    graph_execution_id TEXT NOT NULL,
    tool               TEXT NOT NULL,
    proposed_args      TEXT NOT NULL,
    approved_args      TEXT,
    policy_reason      TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending','approved','rejected','cancelled','expired')),
    token_hash         TEXT,
    created_at         TEXT NOT NULL,
    decided_by         TEXT,
    decided_at         TEXT,
    decision_reason    TEXT,
    decided_via        TEXT
);
INSERT INTO approvals_next SELECT id, session_id, graph_execution_id, tool, proposed_args,
    approved_args, policy_reason, status, token_hash, created_at, decided_by, decided_at,
    decision_reason, decided_via FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_next RENAME TO approvals;
CREATE INDEX approvals_status ON approvals(status, created_at);
CREATE INDEX approvals_execution ON approvals(graph_execution_id);
