import { sql, type Kysely } from 'kysely'

/**
 * Totals per squad, UTC day, provider, model and billing type, so costs by day and by model read a
 * month's rollup rows (days × models) instead of every event of the month. Written as deltas by the
 * statement that inserts the events, like cost_rollups; counters, so pages are kept half empty for
 * HOT updates. The figures are those the events' own sums give (subscription and unpriced tokens as
 * the repository computes them), and the backfill rebuilds them from the events recorded so far:
 * cost_events is share-locked first, so no event commits between the backfill's read and the
 * migration's commit.
 */
export const statements = [
  `create table cost_day_rollups (
    squad_id uuid not null references squads (id) on delete cascade,
    day date not null,
    provider text not null,
    model text not null,
    billing_type text not null,
    cost_cents bigint not null default 0,
    input_tokens bigint not null default 0,
    cached_input_tokens bigint not null default 0,
    output_tokens bigint not null default 0,
    subscription_tokens bigint not null default 0,
    events bigint not null default 0,
    cache_write_tokens bigint not null default 0,
    unpriced_tokens bigint not null default 0,
    primary key (squad_id, day, provider, model, billing_type)
  ) with (fillfactor = 50)`,
  `lock table cost_events in share mode`,
  `insert into cost_day_rollups (squad_id, day, provider, model, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens,
                                 subscription_tokens, events, cache_write_tokens, unpriced_tokens)
   select squad_id, (occurred_at at time zone 'UTC')::date, provider, model, billing_type,
          sum(cost_cents), sum(input_tokens), sum(cached_input_tokens), sum(output_tokens),
          sum(case when billing_type <> 'metered_api' or cost_status = 'unpriced' then input_tokens + cached_input_tokens + output_tokens else 0 end),
          count(*), sum(cache_write_tokens),
          sum(case when cost_status = 'unpriced' then input_tokens + cached_input_tokens + cache_write_tokens + output_tokens else 0 end)
     from cost_events
    group by 1, 2, 3, 4, 5`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop table if exists cost_day_rollups').execute(db)
}
