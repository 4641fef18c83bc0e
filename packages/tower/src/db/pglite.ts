import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import { Kysely } from 'kysely'
import { PGliteDialect } from '@slaw/storage-pg/pglite'
import { migrations } from '../migrations/index.js'
import type { TowerDatabase } from './schema.js'

/** int8 as JS numbers (cents, counts, versions), as postgresTypes does for postgres.js. */
const parsers = { 20: (x: string) => Number(x) }

/**
 * Keyed by PGlite's version and the migrations: either changing builds a new template. The
 * version is looked up from the working directory (this file is built for ESM and CJS alike, so it
 * cannot use import.meta); when that fails, a template that no longer loads is rebuilt anyway.
 */
async function templateKey(): Promise<string> {
  let version = 'unknown'
  try {
    const entry = createRequire(join(process.cwd(), 'noop.js')).resolve('@electric-sql/pglite')
    let dir = dirname(entry)
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
    version = (JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    // The migrations alone then.
  }
  const hash = createHash('sha256').update(version)
  // The migrations' source too, so a migration edited during development never loads a stale template.
  for (const [name, migration] of Object.entries(migrations)) hash.update(name).update(migration.up.toString())
  return hash.digest('hex').slice(0, 16)
}

/**
 * PGlite's initdb takes seconds; loading a data directory takes a fraction of that. A fresh tower
 * database starts from a cached dump of an initialised, migrated one (built once per PGlite version
 * and migration list, in the OS temp dir).
 */
async function template(dir: string, migrate: (db: Kysely<TowerDatabase>) => Promise<void>): Promise<{ file: string; blob: Blob }> {
  const file = join(dir, `slaw-tower-pglite-${await templateKey()}.tar.gz`)
  if (existsSync(file)) return { file, blob: new Blob([await readFile(file)]) }
  const pg = await PGlite.create({ parsers })
  const db = new Kysely<TowerDatabase>({ dialect: new PGliteDialect(pg) })
  await migrate(db)
  const bytes = Buffer.from(await (await pg.dumpDataDir('gzip')).arrayBuffer())
  await db.destroy()
  await pg.close()
  await mkdir(dir, { recursive: true })
  // Write then rename: concurrent builders never leave a torn file behind.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(tmp, bytes)
  await rename(tmp, file)
  return { file, blob: new Blob([bytes]) }
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch {
    return true
  }
}

/** An embedded database in `dataDir` (a directory, or `memory://`), migrated by the caller afterwards. */
export async function openPglite(dataDir: string, migrate: (db: Kysely<TowerDatabase>) => Promise<void>, templateDir = join(tmpdir(), 'slaw-tower-pglite')): Promise<PGlite> {
  const memory = dataDir === 'memory://'
  if (!memory && !(await isEmptyDir(dataDir))) return PGlite.create({ dataDir, parsers })
  if (!memory) await mkdir(dataDir, { recursive: true })
  const options: PGliteOptions = { ...(memory ? {} : { dataDir }), parsers }
  let cached: { file: string; blob: Blob } | null = null
  try {
    cached = await template(templateDir, migrate)
    return await PGlite.create({ ...options, loadDataDir: cached.blob })
  } catch {
    // A template that does not load (or cannot be built) is dropped; initdb the slow way.
    if (cached) await rm(cached.file, { force: true }).catch(() => undefined)
    if (!memory) await rm(dataDir, { recursive: true, force: true }).then(() => mkdir(dataDir, { recursive: true }))
    return PGlite.create(options)
  }
}
