import { rm, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { Kysely } from 'kysely'
import { PGliteDialect, isEmptyDir, loadPgliteTemplate, pgliteTemplateFile, type PgliteTemplate } from '@slaw/storage-pg/pglite'
import { migrations } from '../migrations/index.js'
import type { TowerDatabase } from './schema.js'

/** int8 as JS numbers (cents, counts, versions), as postgresTypes does for postgres.js. */
const parsers = { 20: (x: string) => Number(x) }

/** The tower's schema as a template (storage-pg's loader), keyed by the migrations' source too. */
function towerTemplate(migrate: (db: Kysely<TowerDatabase>) => Promise<void>): PgliteTemplate {
  return {
    name: 'slaw-tower-pglite',
    // The source, so a migration edited during development never loads a stale template.
    keyParts: Object.entries(migrations).map(([name, migration]) => `${name}:${migration.up.toString()}`),
    options: { parsers },
    async build(pg) {
      const db = new Kysely<TowerDatabase>({ dialect: new PGliteDialect(pg) })
      await migrate(db)
      await db.destroy()
    },
  }
}

/** An embedded database in `dataDir` (a directory, or `memory://`), migrated by the caller afterwards. */
export async function openPglite(dataDir: string, migrate: (db: Kysely<TowerDatabase>) => Promise<void>, templateDir = join(tmpdir(), 'slaw-tower-pglite')): Promise<PGlite> {
  const memory = dataDir === 'memory://'
  if (!memory && !(await isEmptyDir(dataDir))) return PGlite.create({ dataDir, parsers })
  if (!memory) await mkdir(dataDir, { recursive: true })
  const options: PGliteOptions = { ...(memory ? {} : { dataDir }), parsers }
  const template = towerTemplate(migrate)
  try {
    return await PGlite.create({ ...options, loadDataDir: await loadPgliteTemplate(templateDir, template) })
  } catch {
    // A template that does not load (or cannot be built) is dropped; initdb the slow way.
    await rm(await pgliteTemplateFile(templateDir, template), { force: true }).catch(() => undefined)
    if (!memory) await rm(dataDir, { recursive: true, force: true }).then(() => mkdir(dataDir, { recursive: true }))
    return PGlite.create(options)
  }
}
