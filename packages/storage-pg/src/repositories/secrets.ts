import { sql, type Kysely, type RawBuilder } from 'kysely'
import type {
  BindingColumnRef,
  BindingHit,
  EncryptedColumnRef,
  EncryptedRow,
  NewSecret,
  NewSecretAccessEvent,
  NewSecretProviderConfig,
  NewSecretVersion,
  SecretAccessEvent,
  SecretPatch,
  SecretProviderConfigPatch,
  SecretProviderConfigRecord,
  SecretRecord,
  SecretRepository,
  SecretVersionRecord,
} from '@slaw/core'
import type { Database } from '../schema.js'
import { guardUnique, json, now } from '../sql-helpers.js'

const secretColumns = [
  'id',
  'squadId',
  'key',
  'name',
  'provider',
  'providerConfigId',
  'status',
  'managedMode',
  'externalRef',
  'latestVersion',
  'description',
  'providerMetadata',
  'lastResolvedAt',
  'lastRotatedAt',
  'createdAt',
  'updatedAt',
] as const

/** Snake-case SQL identifiers only: registry entries name tables and columns, never user input. */
const identifier = /^[a-z_][a-z0-9_]*$/
function ident(name: string): RawBuilder<unknown> {
  if (!identifier.test(name)) throw new TypeError(`not a SQL identifier: ${name}`)
  return sql.id(name)
}

export class PgSecretRepository implements SecretRepository {
  constructor(private readonly db: () => Kysely<Database>) {}

  async insert(s: NewSecret): Promise<SecretRecord> {
    const row = await guardUnique(
      this.db()
        .insertInto('secrets')
        .values({ ...s, providerMetadata: s.providerMetadata === null ? null : json(s.providerMetadata) })
        .returningAll()
        .executeTakeFirstOrThrow(),
    )
    return row
  }

  async get(id: string): Promise<SecretRecord | undefined> {
    return this.db().selectFrom('secrets').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async list(squadId: string): Promise<SecretRecord[]> {
    // Index secrets_squad_key (partial: status <> 'deleted').
    return this.db().selectFrom('secrets').selectAll().where('squadId', '=', squadId).where('status', '<>', 'deleted').orderBy('key').execute()
  }

  async update(id: string, patch: SecretPatch): Promise<SecretRecord | undefined> {
    const { providerMetadata, ...rest } = patch
    const row = await guardUnique(
      this.db()
        .updateTable('secrets')
        .set({
          ...rest,
          ...(providerMetadata !== undefined ? { providerMetadata: providerMetadata === null ? null : json(providerMetadata) } : {}),
          updatedAt: now(),
        })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst(),
    )
    return row
  }

  async bumpVersion(id: string, at: Date): Promise<number | undefined> {
    const row = await this.db()
      .updateTable('secrets')
      .set((eb) => ({ latestVersion: eb('latestVersion', '+', 1), updatedAt: at }))
      .where('id', '=', id)
      .returning('latestVersion')
      .executeTakeFirst()
    return row?.latestVersion
  }

  async insertVersion(v: NewSecretVersion): Promise<SecretVersionRecord> {
    return this.db().insertInto('secretVersions').values(v).returningAll().executeTakeFirstOrThrow()
  }

  async getVersion(secretId: string, version: number): Promise<SecretVersionRecord | undefined> {
    return this.db().selectFrom('secretVersions').selectAll().where('secretId', '=', secretId).where('version', '=', version).executeTakeFirst()
  }

  async updateVersion(secretId: string, version: number, patch: Partial<Pick<SecretVersionRecord, 'ref' | 'providerConfigId'>>): Promise<void> {
    if (!Object.keys(patch).length) return
    await this.db().updateTable('secretVersions').set(patch).where('secretId', '=', secretId).where('version', '=', version).execute()
  }

  async getForResolve(id: string, version: 'latest' | number): Promise<{ secret: SecretRecord; version: SecretVersionRecord | undefined } | undefined> {
    // One round trip: the secret and the version row (primary key) it points at.
    const wanted = version === 'latest' ? sql<number>`s.latest_version` : sql<number>`${version}::integer`
    const row = await this.db()
      .selectFrom('secrets as s')
      .leftJoin('secretVersions as v', (j) => j.onRef('v.secretId', '=', 's.id').on('v.version', '=', wanted))
      .select(secretColumns.map((c) => `s.${c}` as const))
      .select([
        'v.version as vVersion',
        'v.provider as vProvider',
        'v.providerConfigId as vProviderConfigId',
        'v.ref as vRef',
        'v.keyId as vKeyId',
        'v.providerVersionRef as vProviderVersionRef',
        'v.createdAt as vCreatedAt',
      ])
      .where('s.id', '=', id)
      .executeTakeFirst()
    if (!row) return undefined
    const { vVersion, vProvider, vProviderConfigId, vRef, vKeyId, vProviderVersionRef, vCreatedAt, ...secret } = row
    return {
      secret,
      version:
        vVersion === null || vVersion === undefined
          ? undefined
          : {
              secretId: id,
              version: vVersion,
              provider: vProvider!,
              providerConfigId: vProviderConfigId ?? null,
              ref: vRef!,
              keyId: vKeyId ?? null,
              providerVersionRef: vProviderVersionRef ?? null,
              createdAt: vCreatedAt!,
            },
    }
  }

  async listVersions(secretId: string): Promise<SecretVersionRecord[]> {
    return this.db().selectFrom('secretVersions').selectAll().where('secretId', '=', secretId).orderBy('version').execute()
  }

  async dropLocalValues(secretId: string): Promise<void> {
    await this.db().updateTable('secretVersions').set({ ref: 'revoked', keyId: null }).where('secretId', '=', secretId).where('provider', '=', 'local_encrypted').execute()
  }

  async findByKeys(squadId: string, keys: string[]): Promise<SecretRecord[]> {
    if (!keys.length) return []
    return this.db().selectFrom('secrets').selectAll().where('squadId', '=', squadId).where('status', '<>', 'deleted').where('key', 'in', keys).execute()
  }

  async findByExternalRefs(squadId: string, providerConfigId: string, refs: string[]): Promise<SecretRecord[]> {
    if (!refs.length) return []
    // Index secrets_external_ref.
    const rows = await this.db()
      .selectFrom('secrets')
      .selectAll()
      .where('squadId', '=', squadId)
      .where('providerConfigId', '=', providerConfigId)
      .where('externalRef', 'in', refs)
      .where('status', '<>', 'deleted')
      .execute()
    return rows
  }

  async recordAccess(e: NewSecretAccessEvent, resolvedAt: Date | null): Promise<void> {
    const insert = this.db().insertInto('secretAccessEvents').values(e)
    if (!resolvedAt) {
      await insert.execute()
      return
    }
    // The event and lastResolvedAt in one statement: the resolve hot path pays one round trip.
    await this.db()
      .with('e', () => insert.returning('secretId'))
      .updateTable('secrets')
      .set({ lastResolvedAt: resolvedAt })
      .where('id', '=', (eb) => eb.selectFrom('e').select('secretId'))
      .execute()
  }

  async listAccessEvents(secretId: string, page: { limit: number; before?: string }): Promise<SecretAccessEvent[]> {
    // Index secret_access_events_secret.
    let q = this.db().selectFrom('secretAccessEvents').selectAll().where('secretId', '=', secretId)
    if (page.before) q = q.where('id', '<', page.before)
    return q.orderBy('id', 'desc').limit(page.limit).execute()
  }

  // Provider configurations ---------------------------------------------------------------------

  async insertProviderConfig(c: NewSecretProviderConfig): Promise<SecretProviderConfigRecord> {
    return this.db()
      .insertInto('secretProviderConfigs')
      .values({ ...c, config: json(c.config) })
      .returningAll()
      .executeTakeFirstOrThrow()
  }

  async getProviderConfig(id: string): Promise<SecretProviderConfigRecord | undefined> {
    return this.db().selectFrom('secretProviderConfigs').selectAll().where('id', '=', id).executeTakeFirst()
  }

  async listProviderConfigs(squadId: string): Promise<SecretProviderConfigRecord[]> {
    // Index secret_provider_configs_squad.
    return this.db().selectFrom('secretProviderConfigs').selectAll().where('squadId', '=', squadId).orderBy('createdAt').orderBy('id').execute()
  }

  async updateProviderConfig(id: string, patch: SecretProviderConfigPatch): Promise<SecretProviderConfigRecord | undefined> {
    const { config, ...rest } = patch
    return this.db()
      .updateTable('secretProviderConfigs')
      .set({ ...rest, ...(config !== undefined ? { config: json(config) } : {}), updatedAt: now() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst()
  }

  async setDefaultProviderConfig(squadId: string, id: string): Promise<void> {
    // Clear first: the partial unique index allows one default per squad at any moment.
    await this.db().updateTable('secretProviderConfigs').set({ isDefault: false, updatedAt: now() }).where('squadId', '=', squadId).where('isDefault', '=', true).where('id', '<>', id).execute()
    await this.db().updateTable('secretProviderConfigs').set({ isDefault: true, updatedAt: now() }).where('id', '=', id).execute()
  }

  async deleteProviderConfig(id: string): Promise<boolean> {
    // Deleted secrets keep their row (audit) but let go of the config.
    await this.db().updateTable('secrets').set({ providerConfigId: null }).where('providerConfigId', '=', id).where('status', '=', 'deleted').execute()
    const r = await this.db().deleteFrom('secretProviderConfigs').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  async countSecretsUsingConfig(id: string): Promise<number> {
    const row = await this.db()
      .selectFrom('secrets')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('providerConfigId', '=', id)
      .where('status', '<>', 'deleted')
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  // The master key id -----------------------------------------------------------------------------

  async getMasterKeyId(): Promise<string | undefined> {
    const row = await this.db().selectFrom('slawMasterKey').select('keyId').where('id', '=', 1).executeTakeFirst()
    return row?.keyId
  }

  async claimMasterKeyId(keyId: string): Promise<string> {
    // Several nodes may start at once: the first insert wins, everyone reads the winner.
    await this.db()
      .insertInto('slawMasterKey')
      .values({ id: 1, keyId })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute()
    return (await this.getMasterKeyId())!
  }

  async setMasterKeyId(keyId: string): Promise<void> {
    await this.db()
      .insertInto('slawMasterKey')
      .values({ id: 1, keyId })
      .onConflict((oc) => oc.column('id').doUpdateSet({ keyId, updatedAt: now() }))
      .execute()
  }

  // Generic primitives for registries in core -------------------------------------------------------

  private async hasColumns(table: string, columns: readonly string[]): Promise<boolean> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from information_schema.columns
      where table_schema = current_schema() and table_name = ${table} and column_name in (${sql.join(columns.map((c) => sql`${c}`))})`.execute(this.db())
    return Number(rows[0]?.n ?? 0) === new Set(columns).size
  }

  async scanEncrypted(ref: EncryptedColumnRef, keyId: string, limit: number): Promise<EncryptedRow[]> {
    const columns = [...ref.idColumns, ref.column, ...ref.aadColumns, ...Object.keys(ref.where ?? {})]
    if (!(await this.hasColumns(ref.table, columns))) return []
    // Positional aliases: the CamelCasePlugin renames result columns, these names survive it.
    const wanted = [...new Set([...ref.idColumns, ...ref.aadColumns])]
    const select = wanted.map((c, i) => sql`${ident(c)} as ${sql.id(`c${i}`)}`)
    const filters = Object.entries(ref.where ?? {}).map(([c, v]) => sql`and ${ident(c)} = ${v}`)
    const { rows } = await sql<Record<string, unknown>>`
      select ${sql.join(select)}, ${ident(ref.column)} as envelope from ${ident(ref.table)}
      where ${ident(ref.column)} like ${`v1.${keyId}.%`} ${sql.join(filters, sql` `)}
      limit ${limit}`.execute(this.db())
    const value = (r: Record<string, unknown>, c: string) => r[`c${wanted.indexOf(c)}`]
    return rows.map((r) => ({
      id: Object.fromEntries(ref.idColumns.map((c) => [c, value(r, c)])),
      envelope: String(r.envelope),
      aad: Object.fromEntries(ref.aadColumns.map((c) => [c, value(r, c)])),
    }))
  }

  async writeEncrypted(ref: EncryptedColumnRef, id: Record<string, unknown>, envelope: string, keyId: string): Promise<void> {
    const sets = [sql`${ident(ref.column)} = ${envelope}`, ...(ref.keyIdColumn ? [sql`${ident(ref.keyIdColumn)} = ${keyId}`] : [])]
    const where = ref.idColumns.map((c) => sql`${ident(c)} = ${id[c] as string}`)
    await sql`update ${ident(ref.table)} set ${sql.join(sets)} where ${sql.join(where, sql` and `)}`.execute(this.db())
  }

  async findBindings(ref: BindingColumnRef, squadId: string, secretId: string): Promise<BindingHit[]> {
    if (!(await this.hasColumns(ref.table, ['id', 'squad_id', ref.column, ref.nameColumn]))) return []
    const env = ref.path.length ? sql`${ident(ref.column)} #> ${`{${ref.path.join(',')}}`}::text[]` : sql`${ident(ref.column)}`
    const { rows } = await sql<{ id: string; name: string; envName: string; version: unknown }>`
      select t.id::text as id, t.${ident(ref.nameColumn)}::text as name, e.key as env_name, e.value -> 'version' as version
      from ${ident(ref.table)} t
      cross join lateral jsonb_each(case when jsonb_typeof((${env})::jsonb) = 'object' then (${env})::jsonb else '{}'::jsonb end) e
      where t.squad_id = ${squadId} and jsonb_typeof(e.value) = 'object' and e.value ->> 'type' = 'secret_ref' and e.value ->> 'secretId' = ${secretId}
      order by t.id, e.key`.execute(this.db())
    return rows.map((r) => ({ id: r.id, name: r.name, envName: r.envName, version: typeof r.version === 'number' ? r.version : 'latest' }))
  }
}
