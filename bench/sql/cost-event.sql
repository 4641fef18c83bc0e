-- The baseline for POST /api/squads/:id/cost-events: one INSERT of the event plus one UPDATE of the
-- squad's month rollup, in one transaction, every client on the same squad (the same hot row).
-- Variables arrive quoted (-D squad="'<uuid>'"): pgbench 15 has no :'name' quoting.
BEGIN;
INSERT INTO cost_events (id, squad_id, agent_id, provider, billing_type, model, input_tokens, cached_input_tokens, output_tokens, cost_cents, occurred_at)
  VALUES (gen_random_uuid(), :squad, :agent, 'openai', 'metered_api', 'gpt-5', 1000, 0, 100, 1, now());
UPDATE cost_rollups SET cost_cents = cost_cents + 1, input_tokens = input_tokens + 1000, output_tokens = output_tokens + 100, events = events + 1
 WHERE squad_id = :squad AND period = :period AND scope = 'squad' AND scope_key = '';
END;
