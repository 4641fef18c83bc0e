// Bulk seeding straight into the database (the API would take minutes for 100,000 issues).
// Issue ids are UUIDv7-shaped and time-ordered like the ones slaw makes.

const words = ['login', 'deploy', 'database', 'cache', 'render', 'payment', 'invoice', 'auth', 'queue', 'search', 'timeout', 'memory', 'latency', 'billing', 'webhook', 'export']

/** SQL that inserts `count` issues numbered from `from` into a squad; `exec(sql)` runs a statement. */
export function seedIssuesSql({ squadId, prefix, from = 1, count, status = null, assigneeAgentId = null }) {
  const w = `array[${words.map((x) => `'${x}'`).join(',')}]`
  return `
    insert into issues (id, squad_id, number, identifier, title, description, status, priority, priority_rank, assignee_agent_id, search, created_at, updated_at)
    select overlay(overlay(md5(random()::text || g)::text placing lpad(to_hex(${Date.now() - 10_000_000} + g), 12, '0') from 1 for 12) placing '7' from 13 for 1)::uuid,
           '${squadId}', g, '${prefix}-' || g,
           t.title, t.description,
           ${status ? `'${status}'` : `(array['backlog','todo','todo','in_review','blocked','done','done','cancelled'])[1 + g % 8]`},
           (array['critical','high','medium','medium','low'])[1 + g % 5], (array[0,1,2,2,3])[1 + g % 5],
           ${assigneeAgentId ? `'${assigneeAgentId}'` : 'null'},
           setweight(to_tsvector('simple', '${prefix}-' || g), 'A') || setweight(to_tsvector('english', t.title), 'A') || setweight(to_tsvector('english', t.description), 'B'),
           now(), now()
      from generate_series(${from}, ${from + count - 1}) g,
           lateral (select (${w})[1 + g % 16] || ' ' || (${w})[1 + (g / 16) % 16] || ' issue ' || g as title,
                           'The ' || (${w})[1 + (g / 7) % 16] || ' path fails when ' || (${w})[1 + (g / 3) % 16] || ' is slow.' as description) t`
}

export function bumpCounterSql(squadId, to) {
  return `update squads set issue_counter = greatest(issue_counter, ${to}) where id = '${squadId}'`
}
