-- Customers, the customer channel and human takeover. SQLite flavour; never
-- edit once landed.
--
-- A person can hold a conversation (`human`, with its `assignee`); messages
-- gain the replies of human agents (`agent`) and internal notes (`note`),
-- each with its author. SQLite cannot change a CHECK, so both tables are
-- rebuilt: the new ones are filled first, the child (messages) is dropped
-- before its parent, so no foreign key is ever left dangling.

CREATE TABLE conversations_next (
    session_id      TEXT PRIMARY KEY,
    customer_id     TEXT,                   -- not a foreign key, as for tickets
    title           TEXT NOT NULL,
    handling        TEXT NOT NULL DEFAULT 'ai'
                    CHECK (handling IN ('ai','waiting_approval','waiting_human','human','closed')),
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    event_epoch     INTEGER NOT NULL DEFAULT 0,
    -- The staff member holding the conversation (handling = 'human').
    assignee        TEXT,
    -- SHA-256 (hex) of the customer's link token; the token is never stored.
    chat_token_hash TEXT
);
INSERT INTO conversations_next (session_id, customer_id, title, handling, created_at,
                                updated_at, event_epoch)
SELECT session_id, customer_id, title, handling, created_at, updated_at, event_epoch
FROM conversations;

CREATE TABLE messages_next (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT NOT NULL REFERENCES conversations_next(session_id),
    role               TEXT NOT NULL
                       CHECK (role IN ('customer','assistant','system','agent','note')),
    content            TEXT NOT NULL,
    graph_execution_id TEXT,
    created_at         TEXT NOT NULL,
    -- Who wrote an agent reply or a note, or changed the handling.
    author             TEXT
);
INSERT INTO messages_next (id, session_id, role, content, graph_execution_id, created_at)
SELECT id, session_id, role, content, graph_execution_id, created_at FROM messages;

DROP TABLE messages;
DROP TABLE conversations;
-- Renaming rewrites messages_next's reference to the new name.
ALTER TABLE conversations_next RENAME TO conversations;
ALTER TABLE messages_next RENAME TO messages;
CREATE INDEX conversations_updated ON conversations(updated_at);
CREATE INDEX conversations_handling ON conversations(handling, updated_at);
CREATE UNIQUE INDEX conversations_chat_token ON conversations(chat_token_hash);
CREATE INDEX conversations_customer ON conversations(customer_id, updated_at);
CREATE INDEX messages_session ON messages(session_id, id);

-- Where a remembered fact came from: the conversation, and who (the AI, or
-- a staff member's name).
ALTER TABLE memories ADD COLUMN session_id TEXT;
ALTER TABLE memories ADD COLUMN created_by TEXT;
