-- `checkpoints.seq` without AUTOINCREMENT. AUTOINCREMENT kept the largest
-- seq ever used in `sqlite_sequence`, a page every checkpoint commit wrote
-- once more to the log; a plain INTEGER PRIMARY KEY takes the largest seq
-- present plus one, which orders a run's checkpoints the same way (a seq
-- is only compared within a run, whose rows are never deleted alone).
-- SQLite flavour; never edit once landed.
CREATE TABLE checkpoints_next (
    seq                INTEGER PRIMARY KEY,  -- write order, breaks ties
    thread_id          TEXT NOT NULL,
    checkpoint_id      TEXT NOT NULL,
    parent_id          TEXT,
    step               INTEGER NOT NULL,
    node               TEXT NOT NULL,
    next_node          TEXT,
    state              TEXT NOT NULL,
    pending_interrupts TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    path               TEXT NOT NULL DEFAULT '[]',
    UNIQUE (thread_id, checkpoint_id)
);
INSERT INTO checkpoints_next
    (seq, thread_id, checkpoint_id, parent_id, step, node, next_node, state,
     pending_interrupts, created_at, path)
SELECT seq, thread_id, checkpoint_id, parent_id, step, node, next_node, state,
       pending_interrupts, created_at, path
FROM checkpoints;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_next RENAME TO checkpoints;
DELETE FROM sqlite_sequence WHERE name = 'checkpoints';
