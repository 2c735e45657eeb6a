-- The engine records the path of nodes a run executed in every checkpoint
-- (across interrupts), so a trace never rebuilds it. PostgreSQL flavour;
-- never edit once landed.
ALTER TABLE checkpoints ADD COLUMN path JSONB NOT NULL DEFAULT '[]';
