import { mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'
import type { Storage } from '@slaw/core'
import type { KyselyStorage } from './kysely-storage.js'
import { migrationFingerprint } from './migrations/index.js'
import { PGliteDialect } from './pglite-dialect.js'
import { copyPgliteTemplate, isEmptyDir, loadPgliteTemplate, pgliteTemplateDir, type PgliteTemplate } from './pglite-template.js'

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

/**
 * The repositories (and with them @slaw/core) are imported when first needed, not with this entry
 * point: a module that imports @slaw/core is evaluated only after all of core is, so PGlite could
 * not start reading and compiling its WebAssembly until then. Imported lazily, it opens while the
 * rest of slaw loads (`slaw start`'s order, docs/startup-and-memory.md).
 */
const loadKyselyStorage = () => import('./kysely-storage.js')

/**
 * Lean settings for an embedded database: a small buffer pool keeps idle memory low. PGlite
 * touches the whole pool when it starts, so each MB here is a MB of an idle instance; a page
 * that is not in it is read from the OS's page cache (docs/startup-and-memory.md). wal_buffers is
 * what the 16 MB pool gave it (1/32), so WAL writes are as before.
 */
const postgresqlconf = ['shared_buffers = 8MB', 'wal_buffers = 512kB', 'work_mem = 4MB', 'maintenance_work_mem = 16MB']

/** int8 as JS numbers (cents, counts), dates as 'YYYY-MM-DD', as with postgres.js. */
const parsers = { 20: (x: string) => Number(x), 1082: (x: string) => x }

/** slaw's schema as a template: rebuilt when PGlite's version, the migration list or their code changes. */
function storageTemplate(extra: Partial<PGliteOptions>): PgliteTemplate {
  return {
    name: 'slaw-pglite-template',
    keyParts: [migrationFingerprint()],
    options: { ...extra, parsers, postgresqlconf },
    async build(pg) {
      const { KyselyStorage } = await loadKyselyStorage()
      const storage = new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(pg) })
      await storage.migrate()
      await storage.close()
    },
  }
}

/**
 * The PGlite slaw opens for these options: a fresh database (memory:// or an empty directory) is a
 * copy of the cached, migrated template, with slaw's parsers and lean settings. For a host that
 * owns the client (`pgliteStorage({ client })`), e.g. to keep one PGlite for several storages in
 * turn; `client` in the options is ignored here.
 */
export async function openPglite(options: Omit<PgliteStorageOptions, 'client'> = {}): Promise<PGlite> {
  const dataDir = options.dataDir ?? './.slaw'
  const memory = dataDir === 'memory://'
  const pgdata = join(dataDir, 'pgdata')
  const extra = options.pglite ?? {}
  const templateDir = options.templateDir ?? join(tmpdir(), 'slaw-pglite')
  let loadDataDir: Blob | undefined
  // A fresh database is a copy of the cached template: loaded into memory from its tarball, or on
  // disk copied from its data directory.
  if (memory) loadDataDir = await loadPgliteTemplate(templateDir, storageTemplate(extra))
  else if (await isEmptyDir(pgdata)) {
    await mkdir(dataDir, { recursive: true })
    await copyPgliteTemplate(await pgliteTemplateDir(templateDir, storageTemplate(extra)), pgdata)
  }
  const pg = new PGlite({
    ...(memory ? {} : { dataDir: pgdata }),
    ...(loadDataDir ? { loadDataDir } : {}),
    parsers,
    postgresqlconf,
    ...extra,
  })
  await pg.waitReady
  return pg
}

/**
 * Embedded storage on PGlite (PostgreSQL in WebAssembly): nothing to install. A fresh database
 * (memory:// or an empty directory) starts from a cached, migrated template. One node only.
 */
export async function pgliteStorage(options: PgliteStorageOptions = {}): Promise<Storage & { readonly db: KyselyStorage['db'] }> {
  if (options.client) {
    const { KyselyStorage } = await loadKyselyStorage()
    // A PGlite without a data directory (or with memory://) keeps its data in this process only.
    const clientDir = options.client.dataDir
    const inMemory = !clientDir || clientDir.startsWith('memory://')
    return new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(options.client), inMemory })
  }
  const dataDir = options.dataDir ?? './.slaw'
  const [pg, { KyselyStorage }] = await Promise.all([openPglite(options), loadKyselyStorage()])
  return new KyselyStorage({ name: 'pglite', dialect: new PGliteDialect(pg), onClose: () => pg.close(), ...(dataDir === 'memory://' ? { inMemory: true } : { dataDir }) })
}
