-- The statements slaw runs for POST /api/squads/:id/issues, in one transaction: reserve the number,
-- insert the issue with its search document, its activity entry and its outbox row.
BEGIN;
UPDATE squads SET issue_counter = issue_counter + 1 WHERE id = :squad RETURNING issue_counter AS num \gset
INSERT INTO issues (id, squad_id, number, identifier, title, description, status, priority, priority_rank, search)
  VALUES (gen_random_uuid(), :squad, :num, :prefix || '-' || :num, 'bench issue', null, 'todo', 'medium', 2,
          setweight(to_tsvector('simple', :prefix || '-' || :num), 'A') || setweight(to_tsvector('english', 'bench issue'), 'A'));
INSERT INTO activity (id, squad_id, actor_type, actor_id, action, entity_type, entity_id, details)
  VALUES (gen_random_uuid(), :squad, 'user', 'operator', 'issue.created', 'issue', 'x', '{"status":"todo"}');
INSERT INTO outbox (kind, entity_type, entity_id, squad_id, payload) VALUES ('upsert', 'issue', 'x', :squad, '{"type":"issue"}');
END;
