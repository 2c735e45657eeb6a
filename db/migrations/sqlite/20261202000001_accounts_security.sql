-- Named accounts, sign-in throttling, idle sessions and the audit log.
-- SQLite flavour; never edit once landed.

-- A disabled account cannot sign in; a password set by a supervisor (a new
-- account, a reset) should be changed by its owner.
ALTER TABLE users ADD COLUMN disabled_at TEXT;
ALTER TABLE users ADD COLUMN last_sign_in_at TEXT;
ALTER TABLE users ADD COLUMN password_changed_at TEXT;
ALTER TABLE users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT 0;

-- The idle timeout counts from the last request a session made.
ALTER TABLE sessions ADD COLUMN last_seen_at TEXT;
UPDATE sessions SET last_seen_at = created_at;
CREATE INDEX sessions_user ON sessions(username, created_at);

-- Failed sign-ins, counted in the database so that every instance sees
-- them: one row per key, `user:<name>` or `addr:<client address>`.
CREATE TABLE sign_in_failures (
    key             TEXT PRIMARY KEY,
    failures        INTEGER NOT NULL,
    last_failure_at TEXT NOT NULL,
    -- No sign-in under this key before then (backoff, then a lock).
    blocked_until   TEXT
);

-- Who did what to whom: account changes, approval decisions, cancellations.
CREATE TABLE audit_log (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    subject TEXT NOT NULL,
    detail  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at ON audit_log(at);
