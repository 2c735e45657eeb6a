-- aics schema, SQLite flavour. Timestamps are RFC 3339 text written by the
-- application (sqlx's chrono encoding), JSON is text. Never edit once landed:
-- add a new migration instead.

CREATE TABLE customers (
    id         TEXT PRIMARY KEY,            -- e.g. CUST-001
    name       TEXT NOT NULL,
    email      TEXT NOT NULL UNIQUE,
    phone      TEXT,
    lang       TEXT NOT NULL DEFAULT 'en',  -- preferred language: en | zh
    tier       TEXT NOT NULL DEFAULT 'standard',
    created_at TEXT NOT NULL
);

CREATE TABLE orders (
    id              TEXT PRIMARY KEY,       -- e.g. ORD-123
    customer_id     TEXT NOT NULL REFERENCES customers(id),
    status          TEXT NOT NULL CHECK (status IN
                    ('processing','shipped','in_transit','delayed','delivered','lost','refunded','cancelled')),
    total_cents     INTEGER NOT NULL,
    currency        TEXT NOT NULL,
    carrier         TEXT,
    tracking_number TEXT,
    shipping_address TEXT NOT NULL,
    placed_at       TEXT NOT NULL,
    promised_by     TEXT,
    delivered_at    TEXT,
    anomaly         TEXT                    -- a logistics anomaly in words, when there is one
);
CREATE INDEX orders_customer ON orders(customer_id);

CREATE TABLE order_items (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id         TEXT NOT NULL REFERENCES orders(id),
    sku              TEXT NOT NULL,
    name             TEXT NOT NULL,
    quantity         INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL
);
CREATE INDEX order_items_order ON order_items(order_id);

CREATE TABLE logistics_events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id    TEXT NOT NULL REFERENCES orders(id),
    at          TEXT NOT NULL,
    location    TEXT NOT NULL,
    status      TEXT NOT NULL,              -- picked_up | in_transit | at_sorting_center | out_for_delivery | delivered | exception | returned
    description TEXT NOT NULL,
    is_anomaly  BOOLEAN NOT NULL DEFAULT 0
);
CREATE INDEX logistics_events_order ON logistics_events(order_id, at);

CREATE TABLE tickets (
    id              TEXT PRIMARY KEY,       -- TCK-XXXXXXXX
    -- The tool-call id that created it: a resumed step that runs the tool
    -- again finds this row instead of creating a second ticket.
    idempotency_key TEXT NOT NULL UNIQUE,
    order_id        TEXT REFERENCES orders(id),
    customer_id     TEXT,                   -- not a foreign key: the engine may know customers the seed does not
    session_id      TEXT,
    category        TEXT NOT NULL CHECK (category IN ('complaint','refund','inquiry','other')),
    priority        TEXT NOT NULL DEFAULT 'normal',
    status          TEXT NOT NULL DEFAULT 'open',
    summary         TEXT NOT NULL,
    created_at      TEXT NOT NULL
);
CREATE INDEX tickets_order ON tickets(order_id);

CREATE TABLE knowledge_articles (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    lang        TEXT NOT NULL,              -- en | zh
    category    TEXT NOT NULL,              -- shipping | returns | refunds | complaints | escalation | ...
    title       TEXT NOT NULL,
    body        TEXT NOT NULL,
    -- Title and body cut into search terms by the application (words, and
    -- overlapping character pairs for Chinese), so one tokenizer serves both
    -- languages on SQLite and on PostgreSQL.
    search_text TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);

CREATE VIRTUAL TABLE knowledge_fts USING fts5(
    search_text,
    content = 'knowledge_articles',
    content_rowid = 'id',
    tokenize = 'unicode61'
);

CREATE TRIGGER knowledge_articles_ai AFTER INSERT ON knowledge_articles BEGIN
    INSERT INTO knowledge_fts(rowid, search_text) VALUES (new.id, new.search_text);
END;
CREATE TRIGGER knowledge_articles_ad AFTER DELETE ON knowledge_articles BEGIN
    INSERT INTO knowledge_fts(knowledge_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
END;
CREATE TRIGGER knowledge_articles_au AFTER UPDATE ON knowledge_articles BEGIN
    INSERT INTO knowledge_fts(knowledge_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
    INSERT INTO knowledge_fts(rowid, search_text) VALUES (new.id, new.search_text);
END;

CREATE TABLE conversations (
    session_id  TEXT PRIMARY KEY,
    customer_id TEXT,                       -- not a foreign key, as for tickets
    title       TEXT NOT NULL,
    handling    TEXT NOT NULL DEFAULT 'ai'
                CHECK (handling IN ('ai','waiting_approval','waiting_human','closed')),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE INDEX conversations_updated ON conversations(updated_at);

CREATE TABLE messages (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id         TEXT NOT NULL REFERENCES conversations(session_id),
    role               TEXT NOT NULL CHECK (role IN ('customer','assistant','system')),
    content            TEXT NOT NULL,
    graph_execution_id TEXT,
    created_at         TEXT NOT NULL
);
CREATE INDEX messages_session ON messages(session_id, id);

CREATE TABLE turns (
    graph_execution_id TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    intent             TEXT NOT NULL,
    stop_reason        TEXT,
    pending_approval   BOOLEAN NOT NULL DEFAULT 0,
    duration_ms        INTEGER NOT NULL,
    llm_calls          INTEGER NOT NULL,
    steps_taken        INTEGER NOT NULL,
    trace              TEXT NOT NULL,       -- the whole ChatTurnTraceResult as JSON
    started_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);
CREATE INDEX turns_session ON turns(session_id, started_at);

CREATE TABLE checkpoints (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,  -- write order, breaks ties
    thread_id          TEXT NOT NULL,
    checkpoint_id      TEXT NOT NULL,
    parent_id          TEXT,
    step               INTEGER NOT NULL,
    node               TEXT NOT NULL,
    next_node          TEXT,
    state              TEXT NOT NULL,
    pending_interrupts TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    UNIQUE (thread_id, checkpoint_id)
);

CREATE TABLE approvals (
    id                 TEXT PRIMARY KEY,    -- the tool-call id
    session_id         TEXT NOT NULL,
    graph_execution_id TEXT NOT NULL,
    tool               TEXT NOT NULL,
    proposed_args      TEXT NOT NULL,
    approved_args      TEXT,
    policy_reason      TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending','approved','rejected')),
    -- SHA-256 of the single-use token, hex; cleared when a decision uses it.
    token_hash         TEXT,
    created_at         TEXT NOT NULL,
    -- The audit record of the decision: who, when, why, and by which means.
    decided_by         TEXT,
    decided_at         TEXT,
    decision_reason    TEXT,
    decided_via        TEXT                 -- session | token
);
CREATE INDEX approvals_status ON approvals(status, created_at);
CREATE INDEX approvals_execution ON approvals(graph_execution_id);

CREATE TABLE memories (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id TEXT NOT NULL,
    text        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (customer_id, text)
);

CREATE TABLE users (
    username      TEXT PRIMARY KEY,
    password_hash TEXT NOT NULL,            -- argon2id PHC string
    role          TEXT NOT NULL CHECK (role IN ('agent','supervisor')),
    created_at    TEXT NOT NULL
);
