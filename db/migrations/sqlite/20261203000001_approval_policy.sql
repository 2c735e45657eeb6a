-- The approval policy (issue 13): the rule that held a call, and its
-- deadline with what happens when it passes (reject | handover) and the
-- reason the model then receives. Stored with the approval, so a deadline
-- holds across restarts and instances whatever the configuration says later.
ALTER TABLE approvals ADD COLUMN rule TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN expires_at TEXT;
ALTER TABLE approvals ADD COLUMN on_expiry TEXT CHECK (on_expiry IN ('reject','handover'));
ALTER TABLE approvals ADD COLUMN expiry_reason TEXT;
CREATE INDEX approvals_deadline ON approvals(expires_at) WHERE status = 'pending';
