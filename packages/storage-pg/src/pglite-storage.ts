import { mkdir, readFile, rename, writeFile, readdir } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createRequire } from 'node:module'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import type { Storage } from '@slaw/core'
import { KyselyStorage } from './kysely-storage.js'
import { migrations } from './migrations/index.js'
import { PGliteDialect } from './pglite-dialect.js'

export interface PgliteStorageOptions {
  /** A directory for the data, or `memory://` to keep everything in memory. Default `./.slaw`. */
  dataDir?: string
  /** A PGlite you own (slaw never closes it); `dataDir` is then ignored. */
  client?: PGlite
  /**
   * Where the pre-initialised, pre-migrated data-dir template is cached. PGlite's initdb takes
   * seconds; loading the template takes a fraction of that. Default: the OS temp dir.
   */
  templateDir?: string
  /** Extra PGlite options (merged over slaw's defaults). */
  pglite?: Partial<PGliteOptions>
}

/** Lean settings for an embedded database: a small buffer pool keeps idle memory low. */
const postgresqlconf = ['shared_buffers = 16MB', 'work_mem = 4MB', 'maintenance_work_mem = 16MB']

/** int8 as JS numbers (cents, counts), dates as 'YYYY-MM-DD', as with postgres.js. */
const parsers = { 20: (x: string) => Number(x), 1082: (x: string) => x }

/** The template is keyed by PGlite's version and the migration list, so it is rebuilt when either changes. */
async function templateKey(): Promise<string> {
  let version = 'unknown'
  try {
    // PGlite's exports map hides package.json; find it next to the resolved entry point. The
    // lookup runs from both module systems (import.meta.resolve does not exist in CommonJS).
    let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'))
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
    version = (JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    // Fall back to the migration list alone.
  }
  return createHash('sha256').update(version).update(Object.keys(migrations).join(',')).digest('hex').slice(0, 16)
}

async function loadOrBuildTemplate(dir: string, extra: Partial<PGliteOptions>): Promise<Blob> {
  const file = join(dir, `slaw-pglite-template-${await templateKey()}.tar.gz`)
  if (existsSync(file)) return new Blob([await readFile(file)])
  const pg = new PGlite({ ...extra, parsers, postgresqlconf })
  const storage = new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(pg) })
  await storage.migrate()
  const dump = await pg.dumpDataDir('gzip')
  await storage.close()
  await pg.close()
  const bytes = Buffer.from(await dump.arrayBuffer())
  await mkdir(dir, { recursive: true })
  // Write then rename: concurrent builders never leave a torn file behind.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(tmp, bytes)
  await rename(tmp, file)
  return new Blob([bytes])
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch {
    return true
  }
}

/**
 * Embedded storage on PGlite (PostgreSQL in WebAssembly): nothing to install. A fresh database
 * (memory:// or an empty directory) starts from a cached, migrated template. One node only.
 */
export async function pgliteStorage(options: PgliteStorageOptions = {}): Promise<Storage & { readonly db: KyselyStorage['db'] }> {
  if (options.client) return new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(options.client) })
  const dataDir = options.dataDir ?? './.slaw'
  const memory = dataDir === 'memory://'
  const fresh = memory || (await isEmptyDir(join(dataDir, 'pgdata')))
  const extra = options.pglite ?? {}
  const loadDataDir = fresh ? await loadOrBuildTemplate(options.templateDir ?? join(tmpdir(), 'slaw-pglite'), extra) : undefined
  if (!memory) await mkdir(join(dataDir, 'pgdata'), { recursive: true })
  const pg = new PGlite({
    ...(memory ? {} : { dataDir: join(dataDir, 'pgdata') }),
    ...(loadDataDir ? { loadDataDir } : {}),
    parsers,
    postgresqlconf,
    ...extra,
  })
  await pg.waitReady
  return new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(pg), onClose: () => pg.close() })
}
