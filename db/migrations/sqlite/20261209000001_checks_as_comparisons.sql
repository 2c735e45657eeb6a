-- A turn's rows checked by comparisons. SQLite flavour only; never edit
-- once landed.
--
-- SQLite runs `x IN ('a','b','c')` (three names or more) by building a
-- temporary b-tree of the names, anew on every execution of a statement
-- that tests it: each insert into these tables, each update of the
-- column, and each row a partial index's `WHERE` is tested on. A chat
-- turn made eight of them, all inside the write transaction that every
-- turn waits for (BENCHMARKS.md, round 34). The same names joined by `OR`
-- are plain comparisons. What each column accepts is unchanged.
--
-- SQLite cannot change a CHECK, so the three tables are rebuilt as
-- 20261203000002 rebuilt two of them: the new ones are filled first, the
-- child (messages) is dropped before its parent, so no foreign key is ever
-- left dangling, and every index is made again as it was (the active runs'
-- unique index with its `WHERE` as comparisons too; the queries that look
-- runs up through it name the same condition, which is how SQLite knows
-- it may). On a large database the rebuild takes seconds (4.5 s for a
-- million messages) and leaves the old tables' pages free in the file:
-- later writes reuse them, and a `VACUUM` gives them back to the disk.

CREATE TABLE conversations_next (
    session_id      TEXT PRIMARY KEY,
    customer_id     TEXT,                   -- not a foreign key, as for tickets
    title           TEXT NOT NULL,
    handling        TEXT NOT NULL DEFAULT 'ai'
                    CHECK (handling = 'ai' OR handling = 'waiting_approval'
                           OR handling = 'waiting_human' OR handling = 'human'
                           OR handling = 'closed'),
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    event_epoch     INTEGER NOT NULL DEFAULT 0,
    -- The staff member holding the conversation (handling = 'human').
    assignee        TEXT,
    -- SHA-256 (hex) of the customer's link token; the token is never stored.
    chat_token_hash TEXT
);
INSERT INTO conversations_next (session_id, customer_id, title, handling, created_at,
                                updated_at, event_epoch, assignee, chat_token_hash)
SELECT session_id, customer_id, title, handling, created_at, updated_at, event_epoch,
       assignee, chat_token_hash
FROM conversations;

CREATE TABLE messages_next (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT NOT NULL REFERENCES conversations_next(session_id),
    role               TEXT NOT NULL
                       CHECK (role = 'customer' OR role = 'assistant' OR role = 'system'
                              OR role = 'agent' OR role = 'note'),
    content            TEXT NOT NULL,
    graph_execution_id TEXT,
    created_at         TEXT NOT NULL,
    -- Who wrote an agent reply or a note, or changed the handling.
    author             TEXT
);
INSERT INTO messages_next (id, session_id, role, content, graph_execution_id, created_at,
                           author)
SELECT id, session_id, role, content, graph_execution_id, created_at, author FROM messages;

CREATE TABLE runs_next (
    graph_execution_id TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    state              TEXT NOT NULL
                       CHECK (state = 'running' OR state = 'paused' OR state = 'resuming'
                              OR state = 'finished' OR state = 'failed'
                              OR state = 'cancelled'),
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
INSERT INTO runs_next (graph_execution_id, session_id, state, lease_owner, lease_expires_at,
                       attempts, note, ended_by, created_at, updated_at)
SELECT graph_execution_id, session_id, state, lease_owner, lease_expires_at, attempts, note,
       ended_by, created_at, updated_at
FROM runs;

DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE runs;
-- Renaming rewrites messages_next's reference to the new name.
ALTER TABLE conversations_next RENAME TO conversations;
ALTER TABLE messages_next RENAME TO messages;
ALTER TABLE runs_next RENAME TO runs;

CREATE INDEX conversations_updated ON conversations(updated_at);
CREATE INDEX conversations_handling ON conversations(handling);
CREATE INDEX conversations_customer ON conversations(customer_id)
    WHERE customer_id IS NOT NULL;
CREATE UNIQUE INDEX conversations_chat_token ON conversations(chat_token_hash)
    WHERE chat_token_hash IS NOT NULL;
CREATE INDEX messages_session ON messages(session_id, id);
CREATE UNIQUE INDEX runs_one_active ON runs(session_id)
    WHERE (state = 'running' OR state = 'paused' OR state = 'resuming');
CREATE INDEX runs_state_lease ON runs(state, lease_expires_at);
