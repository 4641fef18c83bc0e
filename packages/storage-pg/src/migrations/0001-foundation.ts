import { sql, type Kysely } from 'kysely'

/**
 * Squads, agents, keys, issues and their records, activity, outbox, jobs. Goals and projects are
 * created here too because issues point at them.
 *
 * Every list the API runs has an index below; the comment above each says which.
 */
export const statements = [
  `create table squads (
    id uuid primary key,
    name text not null,
    slug text not null,
    status text not null default 'active',
    issue_prefix text not null,
    issue_counter integer not null default 0,
    budget_monthly_cents bigint,
    budget_hard_stop boolean not null default false,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create unique index squads_slug on squads (slug)`,
  `create unique index squads_issue_prefix on squads (issue_prefix)`,

  `create table agents (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    name text not null,
    role text not null,
    title text,
    status text not null default 'active',
    adapter_type text not null,
    reports_to_agent_id uuid references agents (id) on delete set null,
    prompt text,
    desired_skills jsonb not null default '[]',
    permissions jsonb not null default '{}',
    instructions_path text,
    runtime_state jsonb not null default '{}',
    budget_monthly_cents bigint,
    pause_reason text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // Agent list per squad, and name uniqueness.
  `create unique index agents_squad_name on agents (squad_id, name)`,
  `create index agents_reports_to on agents (reports_to_agent_id) where reports_to_agent_id is not null`,

  `create table api_keys (
    id uuid primary key,
    kind text not null check (kind in ('operator', 'agent')),
    name text not null,
    agent_id uuid references agents (id) on delete cascade,
    squad_id uuid references squads (id) on delete cascade,
    token_hash text not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz,
    revoked_at timestamptz,
    last_used_at timestamptz
  )`,
  `create unique index api_keys_token_hash on api_keys (token_hash)`,
  `create index api_keys_agent on api_keys (agent_id, created_at) where agent_id is not null`,
  `create index api_keys_operator on api_keys (created_at) where kind = 'operator'`,

  `create table goals (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    title text not null,
    description text,
    status text not null default 'draft',
    due_date date,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create index goals_squad on goals (squad_id, id)`,

  `create table projects (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    name text not null,
    description text,
    status text not null default 'active',
    goal_id uuid references goals (id) on delete set null,
    budget_cents bigint,
    paused_at timestamptz,
    pause_reason text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create index projects_squad on projects (squad_id, id)`,

  `create table issues (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    number integer not null,
    identifier text not null,
    title text not null,
    description text,
    status text not null,
    priority text not null,
    priority_rank smallint not null,
    assignee_agent_id uuid references agents (id) on delete set null,
    assignee_user_id text,
    checkout_agent_id uuid references agents (id) on delete set null,
    checked_out_at timestamptz,
    parent_id uuid references issues (id) on delete set null,
    goal_id uuid references goals (id) on delete set null,
    project_id uuid references projects (id) on delete set null,
    billing_code text,
    search tsvector not null default ''::tsvector,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create unique index issues_squad_number on issues (squad_id, number)`,
  `create unique index issues_identifier on issues (identifier)`,
  // Issue list: newest first (ids are time-ordered UUIDv7), optionally by status.
  `create index issues_squad_list on issues (squad_id, id desc)`,
  `create index issues_squad_status on issues (squad_id, status, id desc)`,
  // Inbox and the assignee filter.
  `create index issues_assignee on issues (assignee_agent_id, status, priority_rank, id) where assignee_agent_id is not null`,
  `create index issues_checkout_agent on issues (checkout_agent_id) where checkout_agent_id is not null`,
  `create index issues_project on issues (project_id, id desc) where project_id is not null`,
  `create index issues_parent on issues (parent_id) where parent_id is not null`,
  `create index issues_goal on issues (goal_id) where goal_id is not null`,
  // Full-text search (q).
  `create index issues_search on issues using gin (search)`,

  `create table issue_blockers (
    issue_id uuid not null references issues (id) on delete cascade,
    blocked_by_issue_id uuid not null references issues (id) on delete cascade,
    primary key (issue_id, blocked_by_issue_id)
  )`,
  `create index issue_blockers_reverse on issue_blockers (blocked_by_issue_id)`,

  `create table comments (
    id uuid primary key,
    issue_id uuid not null references issues (id) on delete cascade,
    squad_id uuid not null references squads (id) on delete cascade,
    body text not null,
    author_type text not null,
    author_id text not null,
    created_at timestamptz not null default now()
  )`,
  `create index comments_issue on comments (issue_id, id)`,

  `create table issue_documents (
    id uuid primary key,
    issue_id uuid not null references issues (id) on delete cascade,
    key text not null,
    title text not null,
    format text not null default 'markdown',
    body text not null,
    revision_id uuid not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  `create unique index issue_documents_issue_key on issue_documents (issue_id, key)`,

  `create table interactions (
    id uuid primary key,
    issue_id uuid not null references issues (id) on delete cascade,
    squad_id uuid not null references squads (id) on delete cascade,
    kind text not null,
    payload jsonb not null,
    continuation_policy text,
    idempotency_key text,
    status text not null default 'pending',
    response jsonb,
    created_by_type text not null,
    created_by_id text not null,
    resolved_at timestamptz,
    created_at timestamptz not null default now()
  )`,
  `create index interactions_issue on interactions (issue_id, id)`,
  `create unique index interactions_idempotency on interactions (issue_id, idempotency_key) where idempotency_key is not null`,

  `create table activity (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    actor_type text not null,
    actor_id text not null,
    action text not null,
    entity_type text not null,
    entity_id text not null,
    agent_id uuid,
    run_id uuid,
    details jsonb,
    created_at timestamptz not null default now()
  )`,
  // Activity lists: by squad, by entity, by agent; newest first.
  `create index activity_squad on activity (squad_id, id desc)`,
  `create index activity_entity on activity (squad_id, entity_type, entity_id, id desc)`,
  `create index activity_agent on activity (squad_id, agent_id, id desc) where agent_id is not null`,

  // The tower outbox. txid orders rows by the writing transaction; pub_seq is assigned when a
  // row is final (its transaction and every earlier one finished), so readers never skip a row
  // that commits late. See docs/architecture.md.
  `create table outbox (
    id bigserial primary key,
    txid bigint not null default (pg_current_xact_id()::text::bigint),
    pub_seq bigint,
    kind text not null,
    entity_type text not null,
    entity_id text not null,
    squad_id uuid,
    payload jsonb not null,
    created_at timestamptz not null default now()
  )`,
  `create sequence outbox_pub_seq`,
  `create unique index outbox_pub_seq_idx on outbox (pub_seq) where pub_seq is not null`,
  `create index outbox_unpublished on outbox (txid, id) where pub_seq is null`,

  `create table jobs (
    id uuid primary key,
    kind text not null,
    squad_id uuid references squads (id) on delete cascade,
    payload jsonb not null default '{}',
    status text not null default 'queued',
    attempts integer not null default 0,
    run_at timestamptz not null default now(),
    locked_by text,
    locked_until timestamptz,
    result jsonb,
    error text,
    created_at timestamptz not null default now(),
    finished_at timestamptz
  )`,
  // Claiming due work.
  `create index jobs_due on jobs (run_at) where status in ('queued', 'running')`,

  `create table agent_wakeups (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    agent_id uuid not null references agents (id) on delete cascade,
    issue_id uuid references issues (id) on delete set null,
    reason text not null,
    status text not null default 'queued',
    created_at timestamptz not null default now()
  )`,
  `create index agent_wakeups_agent on agent_wakeups (agent_id, status, id)`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['agent_wakeups', 'jobs', 'outbox', 'activity', 'interactions', 'issue_documents', 'comments', 'issue_blockers', 'issues', 'projects', 'goals', 'api_keys', 'agents', 'squads']) {
    await sql.raw(`drop table if exists ${table} cascade`).execute(db)
  }
  await sql.raw('drop sequence if exists outbox_pub_seq').execute(db)
}
