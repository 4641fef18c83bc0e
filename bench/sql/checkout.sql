-- The statements slaw runs for POST /api/issues/:id/checkout of a distinct issue: the conditional
-- update, its activity entry and its outbox row, in one transaction.
\set n random(1, :count)
\set a random(1, 50)
BEGIN;
UPDATE issues SET status = 'in_progress', assignee_agent_id = (SELECT id FROM agents WHERE squad_id = :squad ORDER BY name OFFSET :a - 1 LIMIT 1),
       checkout_agent_id = assignee_agent_id, checked_out_at = now(), updated_at = now()
 WHERE squad_id = :squad AND number = :n AND checkout_agent_id IS NULL AND status IN ('todo', 'backlog', 'blocked', 'in_review');
INSERT INTO activity (id, squad_id, actor_type, actor_id, action, entity_type, entity_id, details)
  VALUES (gen_random_uuid(), :squad, 'user', 'operator', 'issue.checked_out', 'issue', 'x', '{"from":"todo"}');
INSERT INTO outbox (kind, entity_type, entity_id, squad_id, payload) VALUES ('upsert', 'issue', 'x', :squad, '{"type":"issue"}');
END;
