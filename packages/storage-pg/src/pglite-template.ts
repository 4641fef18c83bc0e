import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'

/**
 * PGlite's initdb takes seconds; loading a data directory takes a fraction of that. A fresh
 * embedded database starts from a cached dump of an initialised, migrated one. Both slaw's storage
 * and the tower use this; each names its template and says what keys it.
 */
export interface PgliteTemplate {
  /** The cache file's prefix, e.g. `slaw-pglite-template`. */
  name: string
  /** What decides the schema (the migrations): a change builds a new template. PGlite's version is added. */
  keyParts: string[]
  /** Options of the PGlite the template is built in (parsers, settings). */
  options?: PGliteOptions
  /** Migrates a fresh database. */
  build(pg: PGlite): Promise<void>
}

/** PGlite's version, or `unknown` when its package.json cannot be found. */
async function pgliteVersion(): Promise<string> {
  try {
    // PGlite's exports map hides package.json; find it next to the resolved entry point. The
    // lookup runs from both module systems (import.meta.resolve does not exist in CommonJS).
    let dir = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'))
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir)
    return (JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return 'unknown'
  }
}

/** The template's cache file in `dir`. */
export async function pgliteTemplateFile(dir: string, template: PgliteTemplate): Promise<string> {
  const hash = createHash('sha256').update(await pgliteVersion())
  for (const part of template.keyParts) hash.update('\0').update(part)
  return join(dir, `${template.name}-${hash.digest('hex').slice(0, 16)}.tar.gz`)
}

/** The template's dump, from the cache in `dir` or built (and cached) now. */
export async function loadPgliteTemplate(dir: string, template: PgliteTemplate): Promise<Blob> {
  const file = await pgliteTemplateFile(dir, template)
  if (existsSync(file)) return new Blob([await readFile(file)])
  const pg = new PGlite(template.options ?? {})
  await template.build(pg)
  const bytes = Buffer.from(await (await pg.dumpDataDir('gzip')).arrayBuffer())
  await pg.close()
  await mkdir(dir, { recursive: true })
  // Write then rename: concurrent builders never leave a torn file behind.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(tmp, bytes)
  await rename(tmp, file)
  return new Blob([bytes])
}

/** True when `dir` is missing or empty: a database there starts from the template. */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch {
    return true
  }
}
