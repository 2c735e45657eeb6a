-- Customers, the customer channel and human takeover. PostgreSQL flavour;
-- never edit once landed.

-- A person can hold a conversation (`human`, with its `assignee`).
ALTER TABLE conversations DROP CONSTRAINT conversations_handling_check;
ALTER TABLE conversations ADD CONSTRAINT conversations_handling_check
    CHECK (handling IN ('ai','waiting_approval','waiting_human','human','closed'));
ALTER TABLE conversations ADD COLUMN assignee TEXT;
-- SHA-256 (hex) of the customer's link token; the token is never stored.
ALTER TABLE conversations ADD COLUMN chat_token_hash TEXT;
CREATE INDEX conversations_handling ON conversations(handling, updated_at);
CREATE UNIQUE INDEX conversations_chat_token ON conversations(chat_token_hash);
CREATE INDEX conversations_customer ON conversations(customer_id, updated_at);

-- Replies of human agents and internal notes, each with its author.
ALTER TABLE messages DROP CONSTRAINT messages_role_check;
ALTER TABLE messages ADD CONSTRAINT messages_role_check
    CHECK (role IN ('customer','assistant','system','agent','note'));
ALTER TABLE messages ADD COLUMN author TEXT;

-- Where a remembered fact came from.
ALTER TABLE memories ADD COLUMN session_id TEXT;
ALTER TABLE memories ADD COLUMN created_by TEXT;
