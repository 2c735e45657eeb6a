-- A run's checkpoints name their thread by a number. The unique index on
-- (thread_id, checkpoint_id) held every checkpoint under its thread's
-- text id: nine entries a turn, of about 80 bytes, wherever the id sorts.
-- With ids that do not sort by time (an API client's, the benchmark
-- workload's) that is a random leaf, nearly always full, which the commit
-- splits with its siblings and their parent, and which is rarely cached.
-- Now a thread's id is stored once, in `checkpoint_threads`, with its
-- number: the `seq` its first checkpoint took, so a new thread's rows
-- append to the index as they do to the table, and only its one small
-- row goes where its id sorts (BENCHMARKS.md, round 28). Numbers are not
-- reused while rows are never deleted (a thread's rows, if ever deleted,
-- go with its row here).
-- SQLite flavour; never edit once landed.
CREATE TABLE checkpoint_threads (
    thread_id TEXT PRIMARY KEY,
    n         INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO checkpoint_threads (thread_id, n)
SELECT thread_id, min(seq) FROM checkpoints GROUP BY thread_id;
CREATE TABLE checkpoints_next (
    seq                INTEGER PRIMARY KEY,  -- write order, breaks ties
    thread_n           INTEGER NOT NULL,     -- checkpoint_threads.n
    checkpoint_id      TEXT NOT NULL,
    parent_id          TEXT,
    step               INTEGER NOT NULL,
    node               TEXT NOT NULL,
    next_node          TEXT,
    state              TEXT NOT NULL,
    pending_interrupts TEXT NOT NULL,
    created_at         TEXT NOT NULL,
    path               TEXT NOT NULL DEFAULT '[]',
    UNIQUE (thread_n, checkpoint_id)
);
INSERT INTO checkpoints_next
    (seq, thread_n, checkpoint_id, parent_id, step, node, next_node, state,
     pending_interrupts, created_at, path)
SELECT c.seq, t.n, c.checkpoint_id, c.parent_id, c.step, c.node, c.next_node,
       c.state, c.pending_interrupts, c.created_at, c.path
FROM checkpoints c JOIN checkpoint_threads t ON t.thread_id = c.thread_id
ORDER BY c.seq;
DROP TABLE checkpoints;
ALTER TABLE checkpoints_next RENAME TO checkpoints;
