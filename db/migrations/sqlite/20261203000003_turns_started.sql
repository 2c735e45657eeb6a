-- The overview reads the turns of a window of days (db/src/overview.rs).
CREATE INDEX turns_started ON turns(started_at);
