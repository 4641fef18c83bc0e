import { sql, type Kysely } from 'kysely'

/**
 * Skills: the squads' own skills, and the control tower's skill catalog as this instance last
 * pulled it (descriptors and content, so a catalog skill installs into a squad without a network
 * call, and content is fetched again only when its contentHash changes).
 */
export const statements = [
  `create table skills (
    id uuid primary key,
    squad_id uuid not null references squads (id) on delete cascade,
    key text not null,
    name text not null,
    description text,
    markdown text not null,
    files jsonb not null default '[]',
    source_type text not null check (source_type in ('local', 'import', 'tower')),
    trust_level text not null,
    version integer not null default 1,
    content_hash text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`,
  // The squad's skill list (by key), lookups by key, and key uniqueness within a squad.
  `create unique index skills_squad_key on skills (squad_id, key)`,
  // A catalog change reaches every squad's copy of that catalog skill.
  `create index skills_tower_key on skills (key) where source_type = 'tower'`,

  // The pulled catalog; the primary key serves the list (by key).
  `create table tower_skill_catalog (
    key text primary key,
    slug text not null,
    name text not null,
    description text,
    category text,
    trust_level text not null,
    version integer not null,
    content_hash text not null,
    has_files boolean not null,
    metadata jsonb,
    markdown text not null,
    files jsonb not null default '[]',
    updated_at timestamptz not null,
    catalog_version bigint not null,
    stored_at timestamptz not null default now()
  )`,

  // One row: the catalogVersion applied last (absent until the first pull).
  `create table tower_skill_catalog_state (
    id smallint primary key check (id = 1),
    catalog_version bigint not null,
    applied_at timestamptz not null default now()
  )`,
]

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['tower_skill_catalog_state', 'tower_skill_catalog', 'skills']) await sql.raw(`drop table if exists ${table}`).execute(db)
}
