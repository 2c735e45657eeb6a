-- The server's tables: sign-in sessions, per-conversation turn locks and the
-- spool of large live events. PostgreSQL flavour; never edit once landed.

-- A signed-in browser. Only the SHA-256 hash of the cookie's token is kept,
-- so a leaked database does not hand out sessions.
CREATE TABLE sessions (
    token_hash  TEXT PRIMARY KEY,
    username    TEXT NOT NULL REFERENCES users(username) ON DELETE CASCADE,
    created_at  TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_expires ON sessions(expires_at);

-- At most one turn per conversation, across every instance: a row exists
-- while a turn runs ('running') or waits for approval ('paused'). Taking a
-- paused lock back to 'running' is also how exactly one instance resumes.
CREATE TABLE turn_locks (
    session_id         TEXT PRIMARY KEY,
    graph_execution_id TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('running','paused')),
    instance_id        TEXT NOT NULL,
    locked_at          TIMESTAMPTZ NOT NULL
);

-- Live events too large for one NOTIFY (8000 bytes), sent by reference.
CREATE TABLE event_spool (
    id          TEXT PRIMARY KEY,
    payload     TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
