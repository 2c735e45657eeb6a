-- Durable turns. PostgreSQL flavour; never edit once landed.
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
    lease_expires_at   TIMESTAMPTZ,
    -- How many times it was started: 1, then +1 per recovery.
    attempts           BIGINT NOT NULL DEFAULT 1,
    -- Why it failed or was cancelled, and who cancelled it.
    note               TEXT,
    ended_by           TEXT,
    created_at         TIMESTAMPTZ NOT NULL,
    updated_at         TIMESTAMPTZ NOT NULL
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
ALTER TABLE conversations ADD COLUMN event_epoch BIGINT NOT NULL DEFAULT 0;

-- Approvals can end without a decision: cancelled with their turn, or
-- expired at a deadline.
ALTER TABLE approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_status_check
    CHECK (status IN ('pending','approved','rejected','cancelled','expired'));
