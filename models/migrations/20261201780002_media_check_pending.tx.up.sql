-- The sweep finds the media links whose check was never queued (jobs/sweep.go): only the few messages
-- still pending get an entry.
CREATE INDEX messages_media_check_pending_idx ON messages (created_at) WHERE media_check = 'pending';
