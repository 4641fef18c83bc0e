import { sql, type Kysely } from 'kysely'

/**
 * Governance and money: approvals (with linked issues and comments), execution workspaces, cost
 * events and their rollups, budget incidents, token ceilings, and the issue counters the dashboard
 * reads. Every figure the dashboard, cost summary and budget overview show comes from a rollup or
 * counter row updated in the writing transaction, so they cost a few index lookups whatever the
 * number of cost events or issues.
 */
export const statements = [
  // Monthly token ceilings (subscription-billed tokens), next to the cents budgets of 0001.
  `alter table squads add column budget_monthly_tokens bigint`,
  `alter table agents add column budget_monthly_tokens bigint`,

  `create table approvals (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    type text not null,
    status text not null default 'pending',
    requested_by_agent_id uuid references agents (id) on delete set null,
    payload jsonb not null,
    decision_note text,
    decided_by text,
    decided_at timestamptz,
    hired_agent_id uuid references agents (id) on delete set null,
    revision integer not null default 1,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // Approval lists, newest first, optionally by status; pending counts for the dashboard.
  `create index approvals_squad on approvals (squad_id, id desc)`,
  `create index approvals_squad_status on approvals (squad_id, status, type)`,
  // For the foreign keys' ON DELETE SET NULL when an agent is deleted.
  `create index approvals_requester on approvals (requested_by_agent_id) where requested_by_agent_id is not null`,
  `create index approvals_hired_agent on approvals (hired_agent_id) where hired_agent_id is not null`,

  `create table approval_issues (
    approval_id uuid not null references approvals (id) on delete cascade,
    issue_id uuid not null references issues (id) on delete cascade,
    primary key (approval_id, issue_id)
  )`,
  `create index approval_issues_issue on approval_issues (issue_id)`,

  `create table approval_comments (
    id uuid primary key,
    approval_id uuid not null references approvals (id) on delete cascade,
    squad_id uuid not null references squads (id) on delete cascade,
    body text not null,
    author_type text not null,
    author_id text not null,
    created_at timestamptz not null default now()
  )`,
  `create index approval_comments_approval on approval_comments (approval_id, id)`,
  `create index approval_comments_squad on approval_comments (squad_id)`,

  `create table workspaces (
    id uuid primary key,
    project_id uuid not null references projects (id) on delete cascade,
    squad_id uuid not null references squads (id) on delete cascade,
    name text not null,
    cwd text,
    repo_url text,
    repo_ref text,
    issue_id uuid references issues (id) on delete set null,
    status text not null default 'active',
    metadata jsonb not null default '{}',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create index workspaces_project on workspaces (project_id, id desc)`,
  `create index workspaces_squad on workspaces (squad_id)`,
  `create index workspaces_issue on workspaces (issue_id) where issue_id is not null`,

  // Cost events are facts: they keep the agent, issue and project ids they were reported with
  // (no foreign keys there), so deleting an agent never rewrites a million rows.
  `create table cost_events (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    agent_id uuid not null,
    issue_id uuid,
    project_id uuid,
    provider text not null,
    biller text,
    billing_type text not null,
    model text not null,
    input_tokens bigint not null,
    cached_input_tokens bigint not null,
    output_tokens bigint not null,
    cost_cents bigint not null,
    billing_code text,
    occurred_at timestamptz not null,
    created_at timestamptz not null default now()
  )`,
  // Rolling windows (window-spend): an index-only range scan per squad.
  `create index cost_events_window on cost_events (squad_id, occurred_at) include (provider, billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens)`,
  // Issue cost summary.
  `create index cost_events_issue on cost_events (issue_id) include (billing_type, cost_cents, input_tokens, cached_input_tokens, output_tokens) where issue_id is not null`,

  // Totals per squad, agent, project and provider for a month ('YYYY-MM') or a lifetime ('all'),
  // updated in the transaction that records the event. Counter tables are updated far more than
  // they grow: half-empty pages keep those updates HOT (no index writes, pruned in place).
  `create table cost_rollups (
    squad_id uuid not null references squads (id) on delete cascade,
    period text not null,
    scope text not null,
    scope_key text not null,
    cost_cents bigint not null default 0,
    input_tokens bigint not null default 0,
    cached_input_tokens bigint not null default 0,
    output_tokens bigint not null default 0,
    subscription_tokens bigint not null default 0,
    events bigint not null default 0,
    primary key (squad_id, period, scope, scope_key)
  ) with (fillfactor = 50)`,

  `create table budget_incidents (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    scope_type text not null,
    scope_id uuid not null,
    metric text not null,
    level text not null,
    period text not null,
    limit_amount bigint not null,
    observed_amount bigint not null,
    created_at timestamptz not null default now(),
    resolved_at timestamptz
  )`,
  // One open incident per budget, level and period: a crossing is recorded once.
  `create unique index budget_incidents_open on budget_incidents (scope_type, scope_id, metric, level, period) where resolved_at is null`,
  `create index budget_incidents_squad on budget_incidents (squad_id, period) where resolved_at is null`,
  `create index budget_incidents_squad_all on budget_incidents (squad_id)`,

  // Issues per squad and status for the dashboard, kept by triggers in the writing transaction.
  // Spread over 16 shards (by the issue id's last byte) so concurrent status changes in one squad
  // rarely wait on the same counter row.
  `create table issue_status_counts (
    squad_id uuid not null references squads (id) on delete cascade,
    status text not null,
    shard smallint not null,
    n bigint not null default 0,
    primary key (squad_id, status, shard)
  ) with (fillfactor = 50)`,
  `insert into issue_status_counts (squad_id, status, shard, n)
     select squad_id, status, get_byte(uuid_send(id), 15) % 16, count(*) from issues group by 1, 2, 3`,
  `create function slaw_issue_counts_insert_delete() returns trigger language plpgsql as $$
   begin
     if tg_op = 'INSERT' then
       insert into issue_status_counts as c (squad_id, status, shard, n)
         values (new.squad_id, new.status, get_byte(uuid_send(new.id), 15) % 16, 1)
         on conflict (squad_id, status, shard) do update set n = c.n + 1;
     else
       -- A plain UPDATE: while a squad is deleted its counters may already be gone.
       update issue_status_counts set n = n - 1
        where squad_id = old.squad_id and status = old.status and shard = get_byte(uuid_send(old.id), 15) % 16;
     end if;
     return null;
   end $$`,
  `create function slaw_issue_counts_update() returns trigger language plpgsql as $$
   declare
     s smallint := get_byte(uuid_send(new.id), 15) % 16;
   begin
     -- Both rows are in one shard; touch them in status order so two transactions moving issues
     -- in opposite directions lock them in the same order (no deadlock).
     if old.status < new.status then
       update issue_status_counts set n = n - 1 where squad_id = old.squad_id and status = old.status and shard = s;
       insert into issue_status_counts as c (squad_id, status, shard, n) values (new.squad_id, new.status, s, 1)
         on conflict (squad_id, status, shard) do update set n = c.n + 1;
     else
       insert into issue_status_counts as c (squad_id, status, shard, n) values (new.squad_id, new.status, s, 1)
         on conflict (squad_id, status, shard) do update set n = c.n + 1;
       update issue_status_counts set n = n - 1 where squad_id = old.squad_id and status = old.status and shard = s;
     end if;
     return null;
   end $$`,
  `create trigger issues_status_counts_insert_delete after insert or delete on issues
     for each row execute function slaw_issue_counts_insert_delete()`,
  `create trigger issues_status_counts_update after update of status, squad_id on issues
     for each row when (old.status is distinct from new.status or old.squad_id is distinct from new.squad_id)
     execute function slaw_issue_counts_update()`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw('drop trigger if exists issues_status_counts_update on issues').execute(db)
  await sql.raw('drop trigger if exists issues_status_counts_insert_delete on issues').execute(db)
  await sql.raw('drop function if exists slaw_issue_counts_update()').execute(db)
  await sql.raw('drop function if exists slaw_issue_counts_insert_delete()').execute(db)
  for (const table of ['issue_status_counts', 'budget_incidents', 'cost_rollups', 'cost_events', 'workspaces', 'approval_comments', 'approval_issues', 'approvals']) {
    await sql.raw(`drop table if exists ${table} cascade`).execute(db)
  }
  await sql.raw('alter table agents drop column if exists budget_monthly_tokens').execute(db)
  await sql.raw('alter table squads drop column if exists budget_monthly_tokens').execute(db)
}
