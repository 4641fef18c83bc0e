import { sql, type Kysely } from 'kysely'

/**
 * Who wrote what on a routine, so the run engine can apply the trust rules of docs/security.md when
 * the routine is used, not only when it is written:
 *
 * - `routines.created_by_agent_id`: the agent whose key created the routine (null: an Operator or
 *   the system). Agent keys may change only routines they created.
 * - `routines.env_written_by`: whether an Operator or an agent wrote the routine's `env` last.
 *   Agent-written env never carries names that load code and never overrides the assignee's own
 *   configuration.
 * - `routine_triggers.created_by_agent_id`: the agent whose key added the trigger (null: an
 *   Operator). Agent keys may not change a trigger an Operator added.
 * - `routine_runs.requested_by_agent_id`: the agent whose key asked for a manual or API run (null:
 *   an Operator, a trigger or the scheduler), so a run an agent aimed at another assignee never
 *   carries an Operator's env to it.
 *
 * Existing rows are classified from their revisions: a routine any agent ever wrote counts as
 * agent-written (the safe side), and one whose first revision an agent made belongs to that agent.
 * Existing triggers count as an Operator's (the safe side: agents cannot change them).
 */
export const statements = [
  `alter table routines add column created_by_agent_id uuid`,
  `alter table routines add column env_written_by text not null default 'operator' check (env_written_by in ('operator', 'agent'))`,
  `alter table routine_runs add column requested_by_agent_id uuid`,
  `alter table routine_triggers add column created_by_agent_id uuid`,
  `update routines r set env_written_by = 'agent'
    where exists (select 1 from routine_revisions v where v.routine_id = r.id and v.actor_type = 'agent')`,
  `update routines r set created_by_agent_id = v.actor_id::uuid
     from routine_revisions v
    where v.routine_id = r.id and v.number = 1 and v.actor_type = 'agent'
      and v.actor_id ~ '^[0-9a-fA-F-]{36}$'`,
  // Agent-created routines per squad are counted for the quota (docs/routines.md).
  `create index routines_agent_created on routines (squad_id) where created_by_agent_id is not null and status <> 'archived'`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(`drop index if exists routines_agent_created`).execute(db)
  await sql.raw(`alter table routine_triggers drop column if exists created_by_agent_id`).execute(db)
  await sql.raw(`alter table routine_runs drop column if exists requested_by_agent_id`).execute(db)
  await sql.raw(`alter table routines drop column if exists env_written_by`).execute(db)
  await sql.raw(`alter table routines drop column if exists created_by_agent_id`).execute(db)
}
