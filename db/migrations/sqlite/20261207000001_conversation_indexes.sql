-- A turn writes its conversation's updated_at twice (at its start and at
-- its end), and every index that holds the column is written with it:
-- on SQLite a page of each in the turn's commit. Only the inbox's order
-- reads it from an index (conversations_updated); the waiting queue's
-- count and a customer's few conversations do not need it. The customer
-- and chat-token indexes also skip conversations without one, which a
-- new conversation from the API or the console is (BENCHMARKS.md,
-- round 12).
DROP INDEX conversations_handling;
CREATE INDEX conversations_handling ON conversations(handling);
DROP INDEX conversations_customer;
CREATE INDEX conversations_customer ON conversations(customer_id)
    WHERE customer_id IS NOT NULL;
DROP INDEX conversations_chat_token;
CREATE UNIQUE INDEX conversations_chat_token ON conversations(chat_token_hash)
    WHERE chat_token_hash IS NOT NULL;
