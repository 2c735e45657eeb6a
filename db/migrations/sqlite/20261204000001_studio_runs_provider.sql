-- The provider a fork ran on (a name of [llm.providers]); NULL for forks
-- stored before it was recorded.
ALTER TABLE studio_runs ADD COLUMN provider TEXT;
