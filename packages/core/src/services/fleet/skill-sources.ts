import { lstat, readFile, readdir, realpath, stat } from 'node:fs/promises'
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { SkillFileEntry } from '../../contracts/skills.js'
import { SlawError, invalid } from '../../errors.js'
import { keyFrom, readFrontMatter, skillKeyPattern, skillLimits } from './skill-content.js'

/**
 * Reading a skill to import from this machine's disk: a markdown file, a folder holding SKILL.md,
 * or a .json skill in the catalog shape. The skill service validates and stores what this reads.
 */

/** Where imports from disk may read (createInstance `skillsDir`, SVC_SKILLS_DIR). */
export interface SkillImportOptions {
  /** The skills folder; null: imports from disk are off. */
  dir: string | null
  /** Paths an import never reads, even inside the folder: the data directory, the master key file. */
  protectedPaths: string[]
}

/**
 * The absolute path an import may read for `source`, or a 403: imports are off without a skills
 * folder; the path (relative ones resolve against the folder) must lie inside the folder, reach
 * nothing through a symbolic link, and neither be nor hold nor lie under a protected path. A path
 * that does not exist passes here and fails when read (400, as before).
 */
export async function confineSkillSource(source: string, opts: SkillImportOptions): Promise<string> {
  if (!opts.dir) {
    throw new SlawError(
      'skill_import_disabled',
      'Skill imports from disk are off on this instance: start it with a skills folder (createInstance skillsDir, SVC_SKILLS_DIR), or send the skill with POST /api/squads/{id}/skills.',
    )
  }
  const refuse = (why: string) => new SlawError('skill_source_refused', `${source} may not be imported: ${why}.`, [{ path: '/source', message: why }])
  const root = resolve(opts.dir)
  const path = resolve(root, source)
  const rel = relative(root, path)
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw refuse('it is outside the skills folder')
  // Every component below the folder is checked: a link anywhere could lead outside it.
  let at = root
  for (const part of rel.split(sep).filter(Boolean)) {
    at = join(at, part)
    const info = await lstat(at).catch(() => undefined)
    if (!info) break
    if (info.isSymbolicLink()) throw refuse('it is reached through a symbolic link')
  }
  const real = join(await realpath(root).catch(() => root), rel)
  for (const p of opts.protectedPaths) {
    for (const guarded of new Set([resolve(p), await realpath(p).catch(() => resolve(p))])) {
      for (const candidate of [path, real]) {
        if (candidate === guarded || candidate.startsWith(guarded + sep) || guarded.startsWith(candidate + sep)) throw refuse("it is or holds the instance's data directory or master key")
      }
    }
  }
  return path
}

/** Largest file an import reads: a .json skill carries base64 files. */
const maxImportFileBytes = skillLimits.markdownBytes + Math.ceil((skillLimits.totalFileBytes * 4) / 3) + 64 * 1024

/** A skill file in the catalog's shape (GET /skills/{key}); descriptor fields beyond these are ignored. */
const JsonSkill = Type.Object({
  key: Type.Optional(Type.String()),
  name: Type.String(),
  description: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  markdown: Type.String(),
  files: Type.Optional(Type.Array(Type.Object({ path: Type.String(), content: Type.String(), encoding: Type.Union([Type.Literal('utf8'), Type.Literal('base64')]) }))),
  trustLevel: Type.Optional(Type.String()),
  contentHash: Type.Optional(Type.String()),
})
type JsonSkill = Static<typeof JsonSkill>

export interface ReadSkill {
  key: string | undefined
  name: string
  description: string | null
  markdown: string
  files: SkillFileEntry[]
  trustLevel: string | undefined
  contentHash: string | undefined
  /** Prefix for error detail paths pointing into the source. */
  detailBase: string
}

const sourceError = (message: string): SlawError => invalid('/source', message)

export async function readSkillSource(sourcePath: string): Promise<ReadSkill> {
  const path = resolve(sourcePath)
  const info = await stat(path).catch(() => undefined)
  if (!info) throw sourceError(`Cannot read ${sourcePath}: no such file or folder on this machine`)
  if (info.isDirectory()) return readSkillFolder(path)
  if (!info.isFile()) throw sourceError(`${sourcePath} is neither a file nor a folder`)
  if (extname(path).toLowerCase() === '.json') return readJsonSkill(path, info.size)
  if (info.size > skillLimits.markdownBytes) throw sourceError(`${sourcePath} is larger than ${skillLimits.markdownBytes} bytes`)
  const markdown = await readText(path)
  const fileName = basename(path)
  // A SKILL.md is named after its folder; any other markdown file after itself.
  const fallbackKey = /^skill\.md$/i.test(fileName) ? basename(dirname(path)) : fileName.replace(/\.[^.]*$/, '')
  return fromMarkdown(markdown, [], fallbackKey)
}

function fromMarkdown(markdown: string, files: SkillFileEntry[], fallbackKey: string): ReadSkill {
  const fm = readFrontMatter(markdown) ?? {}
  const key = (fm.key && skillKeyPattern.test(fm.key) ? fm.key : undefined) ?? (fm.name ? keyFrom(fm.name) : undefined) ?? keyFrom(fallbackKey)
  return {
    key,
    name: fm.name?.trim() || key || fallbackKey,
    description: fm.description?.trim() || null,
    markdown,
    files,
    trustLevel: undefined,
    contentHash: undefined,
    detailBase: '',
  }
}

async function readText(path: string): Promise<string> {
  const bytes = await readFile(path).catch((err: NodeJS.ErrnoException) => {
    throw sourceError(`Cannot read ${path}: ${err.code ?? err.message}`)
  })
  const text = utf8Text(bytes)
  if (text === undefined) throw sourceError(`${path} is not UTF-8 text`)
  return text
}

/** The bytes as text when they are valid UTF-8 without NUL, else undefined. */
function utf8Text(bytes: Buffer): string | undefined {
  try {
    // ignoreBOM keeps a byte order mark in the text, so the text encodes back to the same bytes.
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)
    return text.includes('\0') ? undefined : text
  } catch {
    return undefined
  }
}

async function readJsonSkill(path: string, size: number): Promise<ReadSkill> {
  if (size > maxImportFileBytes) throw sourceError(`${path} is larger than ${maxImportFileBytes} bytes`)
  let parsed: unknown
  try {
    parsed = JSON.parse(await readText(path))
  } catch (err) {
    if (err instanceof SlawError) throw err
    throw sourceError(`${path} is not valid JSON`)
  }
  if (!Value.Check(JsonSkill, parsed)) {
    const details = [...Value.Errors(JsonSkill, parsed)].slice(0, 10).map((e) => ({ path: `/source${e.path}`, message: e.message }))
    throw new SlawError('invalid_payload', `${path} is not a skill in the catalog shape: ${details.map((d) => `${d.path} ${d.message}`).join('; ')}`, details)
  }
  const s: JsonSkill = parsed
  return {
    key: s.key,
    name: s.name,
    description: s.description ?? null,
    markdown: s.markdown,
    files: s.files ?? [],
    trustLevel: s.trustLevel,
    contentHash: s.contentHash,
    detailBase: '/source',
  }
}

/** A folder: SKILL.md plus every other regular file below it (dot files and symlinks skipped). */
async function readSkillFolder(root: string): Promise<ReadSkill> {
  const entries = await readdir(root).catch((err: NodeJS.ErrnoException) => {
    throw sourceError(`Cannot read ${root}: ${err.code ?? err.message}`)
  })
  const main = entries.find((e) => e === 'SKILL.md') ?? entries.find((e) => /^skill\.md$/i.test(e))
  if (!main) throw sourceError(`${root} holds no SKILL.md`)
  const mainPath = join(root, main)
  const mainInfo = await lstat(mainPath)
  if (!mainInfo.isFile()) throw sourceError(`${mainPath} is not a regular file`)
  if (mainInfo.size > skillLimits.markdownBytes) throw sourceError(`${mainPath} is larger than ${skillLimits.markdownBytes} bytes`)
  const markdown = await readText(mainPath)
  const files: SkillFileEntry[] = []
  let total = 0
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      if (name.startsWith('.')) continue
      const full = join(dir, name)
      if (full === mainPath) continue
      const info = await lstat(full)
      if (info.isDirectory()) {
        await walk(full)
        continue
      }
      if (!info.isFile()) continue
      if (files.length >= skillLimits.files) throw sourceError(`${root} holds more than ${skillLimits.files} files besides SKILL.md`)
      total += info.size
      if (info.size > skillLimits.fileBytes || total > skillLimits.totalFileBytes) {
        throw sourceError(`${root} is too large: at most ${skillLimits.fileBytes} bytes a file and ${skillLimits.totalFileBytes} bytes in all`)
      }
      const bytes = await readFile(full)
      const text = utf8Text(bytes)
      const rel = relative(root, full).split(sep).join('/')
      files.push(text !== undefined ? { path: rel, content: text, encoding: 'utf8' } : { path: rel, content: bytes.toString('base64'), encoding: 'base64' })
    }
  }
  await walk(root)
  return fromMarkdown(markdown, files, basename(root))
}
