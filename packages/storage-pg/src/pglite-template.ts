import { createHash } from 'node:crypto'
import { existsSync, openAsBlob } from 'node:fs'
import { cp, link, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { PGlite, type PGliteOptions } from '@electric-sql/pglite'

/**
 * PGlite's initdb takes seconds; loading a data directory takes a fraction of that. A fresh
 * embedded database starts from a cached copy of an initialised, migrated one. Both slaw's storage
 * and the tower use this; each names its template and says what keys it.
 *
 * The cache holds the template twice, both made once from a database that was shut down cleanly
 * (so that opening a copy runs no crash recovery): as a data directory, which a fresh on-disk
 * database copies with the file system, and as an uncompressed tarball, which PGlite loads into
 * memory for `memory://` (gunzipping 40 MB took longer than reading it).
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

/** How the cache is laid out (a clean data directory without template databases, plus its tarball); part of every key. */
const cacheFormat = 'clean-dir+tar-2'

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

async function templateKey(template: PgliteTemplate): Promise<string> {
  const hash = createHash('sha256')
    .update(await pgliteVersion())
    .update('\0')
    .update(cacheFormat)
  for (const part of template.keyParts) hash.update('\0').update(part)
  return `${template.name}-${hash.digest('hex').slice(0, 16)}`
}

/** The template's tarball in the cache `dir` (its data directory is the same path without `.tar`). */
export async function pgliteTemplateFile(dir: string, template: PgliteTemplate): Promise<string> {
  return join(dir, `${await templateKey(template)}.tar`)
}

/**
 * The template's data directory in the cache `dir`, built now when missing: a database that was
 * migrated and shut down cleanly. Never opened again; a fresh database is a copy of it.
 */
export async function pgliteTemplateDir(dir: string, template: PgliteTemplate): Promise<string> {
  const target = join(dir, await templateKey(template))
  if (existsSync(join(target, 'PG_VERSION'))) return target
  await mkdir(dir, { recursive: true })
  // Built aside, then renamed into place: a reader never sees half a template, and of concurrent
  // builders the first rename wins (the others find the directory there and drop their own).
  const work = await mkdtemp(join(dir, `${template.name}-build-`))
  try {
    const pg = new PGlite({ ...template.options, dataDir: join(work, 'pgdata') })
    try {
      await template.build(pg)
      await dropTemplateDatabases(pg)
    } finally {
      await pg.close()
    }
    try {
      await rename(join(work, 'pgdata'), target)
    } catch (err) {
      if (!existsSync(join(target, 'PG_VERSION'))) throw err
    }
  } finally {
    await rm(work, { recursive: true, force: true })
  }
  return target
}

/**
 * PGlite serves one database (`postgres`); initdb's template0 and template1 are two thirds of the
 * files a fresh database loads (a 43 MB tarball becomes 28 MB, and a memory:// start ~130 ms
 * faster). Nothing in PGlite creates a database from them.
 */
async function dropTemplateDatabases(pg: PGlite): Promise<void> {
  await pg.exec(`update pg_database set datistemplate = false where datname in ('template0', 'template1')`)
  // One statement each: DROP DATABASE refuses to run inside a multi-statement string.
  await pg.exec('drop database template0')
  await pg.exec('drop database template1')
}

/**
 * The template as a tarball for PGlite's `loadDataDir`, from the cache in `dir` or made (and cached)
 * now. The Blob is backed by the file, not by memory: PGlite keeps its options (this Blob with
 * them) for its whole life, and a copy in memory would hold the template's 40 MB as long.
 */
export async function loadPgliteTemplate(dir: string, template: PgliteTemplate): Promise<Blob> {
  const file = await pgliteTemplateFile(dir, template)
  if (existsSync(file)) return openAsBlob(file)
  const bytes = await tarDirectory(await pgliteTemplateDir(dir, template))
  // Written aside, then linked into place: a reader never sees a torn file, and once the file is
  // there it is never replaced. A file-backed Blob fails (NotReadableError) when its file changes,
  // so a concurrent builder that renamed its own copy over the file would break every process
  // reading the first one; with link, the first builder wins and the others use its file.
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`
  await writeFile(tmp, bytes)
  try {
    await link(tmp, file)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    await rm(tmp, { force: true })
  }
  return openAsBlob(file)
}

/**
 * Makes `dataDir` (missing or empty) a copy of the template: the file system copies the cached
 * data directory, which is faster than PGlite writing a tarball out file by file. The copy is made
 * aside and renamed into place, so an interrupted start leaves no half database behind.
 */
export async function copyPgliteTemplate(templateDir: string, dataDir: string): Promise<void> {
  const work = `${dataDir}.copy-${process.pid}-${Date.now()}`
  try {
    await cp(templateDir, work, { recursive: true })
    await rm(dataDir, { recursive: true, force: true })
    await rename(work, dataDir)
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** True when `dir` is missing or empty: a database there starts from the template. */
export async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0
  } catch {
    return true
  }
}

/**
 * A POSIX ustar archive of the directories and regular files under `root` (names relative to it),
 * the format PGlite's `loadDataDir` reads. Data directories hold short paths only; a longer one is
 * an error rather than a silently truncated name.
 */
export async function tarDirectory(root: string): Promise<Buffer> {
  const blocks: Buffer[] = []
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(join(root, rel))).sort()) {
      const path = rel ? `${rel}/${name}` : name
      const stat = await lstat(join(root, path))
      if (stat.isDirectory()) {
        blocks.push(tarHeader(path, stat.mode, 0, stat.mtimeMs, '5'))
        await walk(path)
      } else if (stat.isFile()) {
        const data = await readFile(join(root, path))
        blocks.push(tarHeader(path, stat.mode, data.length, stat.mtimeMs, '0'), data)
        if (data.length % 512) blocks.push(Buffer.alloc(512 - (data.length % 512)))
      }
    }
  }
  await walk('')
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

function tarHeader(name: string, mode: number, size: number, mtimeMs: number, type: '0' | '5'): Buffer {
  if (Buffer.byteLength(name) > 99) throw new Error(`tarDirectory: path too long for a tar header: ${name}`)
  const h = Buffer.alloc(512)
  const octal = (value: number, at: number, width: number) => h.write(`${value.toString(8).padStart(width - 1, '0')}\0`, at, 'ascii')
  h.write(name, 0, 'utf8')
  octal(mode & 0o7777, 100, 8)
  octal(0, 108, 8)
  octal(0, 116, 8)
  octal(size, 124, 12)
  octal(Math.floor(mtimeMs / 1000), 136, 12)
  h.write(type, 156, 'ascii')
  h.write('ustar\u000000', 257, 'ascii')
  // The checksum is the byte sum of the header with its own field read as spaces.
  h.fill(' ', 148, 156)
  let sum = 0
  for (const byte of h) sum += byte
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii')
  return h
}
