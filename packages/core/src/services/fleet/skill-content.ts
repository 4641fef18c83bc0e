import { createHash } from 'node:crypto'
import type { SkillFileEntry } from '../../contracts/skills.js'
import type { ErrorDetail } from '../../errors.js'

/**
 * Skill content: the content hash, the rules a skill's markdown and files follow, and the small
 * front matter reader imports use. No storage, no HTTP: the tower can compute the same hash.
 */

/** A squad skill key: lowercase, starts with a letter or digit, at most 100 characters. */
export const skillKeyPattern = /^[a-z0-9][a-z0-9._-]{0,99}$/
/** A trust level label set locally. */
export const trustLevelPattern = /^[a-z][a-z0-9_-]{0,63}$/

/** Limits on locally written skills (create, import, edit). Catalog content is the tower's call. */
export const skillLimits = {
  /** UTF-8 bytes of the markdown. */
  markdownBytes: 512 * 1024,
  files: 100,
  /** Characters of a file path. */
  pathLength: 500,
  /** Decoded bytes of one file. */
  fileBytes: 1024 * 1024,
  /** Decoded bytes of all files together. */
  totalFileBytes: 4 * 1024 * 1024,
  nameLength: 200,
  descriptionLength: 4000,
} as const

/**
 * The content hash of a skill, version 1: lowercase hex SHA-256 over this byte sequence
 *
 *   "markdown\n" <byte length of markdown in UTF-8, decimal> "\n" <markdown as UTF-8>
 *   then for every file, in ascending order of the UTF-8 bytes of its path:
 *   "file\n" <path as UTF-8> "\n" <byte length of the decoded content, decimal> "\n" <decoded content>
 *
 * A file's decoded content is its UTF-8 bytes (`encoding: "utf8"`) or the bytes its base64 stands
 * for (`encoding: "base64"`), so the same bytes hash the same whichever encoding carried them.
 * Names, descriptions and other descriptor fields are not part of the hash.
 */
export function skillContentHash(markdown: string, files: readonly SkillFileEntry[]): string {
  const h = createHash('sha256')
  const md = Buffer.from(markdown, 'utf8')
  h.update(`markdown\n${md.length}\n`)
  h.update(md)
  const sorted = files.map((f) => ({ path: Buffer.from(f.path, 'utf8'), bytes: decodeSkillFile(f) })).sort((a, b) => Buffer.compare(a.path, b.path))
  for (const f of sorted) {
    h.update('file\n')
    h.update(f.path)
    h.update(`\n${f.bytes.length}\n`)
    h.update(f.bytes)
  }
  return h.digest('hex')
}

function decodeSkillFile(f: SkillFileEntry): Buffer {
  return f.encoding === 'base64' ? Buffer.from(f.content, 'base64') : Buffer.from(f.content, 'utf8')
}

const base64Pattern = /^[A-Za-z0-9+/]*={0,2}$/

/** Canonical base64 only: right alphabet, padding, and no stray bits (it must re-encode to itself). */
function isCanonicalBase64(s: string): boolean {
  if (s.length % 4 !== 0 || !base64Pattern.test(s)) return false
  return Buffer.from(s, 'base64').toString('base64') === s
}

// eslint-disable-next-line no-control-regex
const controlChars = /[\u0000-\u001f\u007f]/

/** Why `path` is not a safe relative file path, or undefined when it is. */
function filePathProblem(path: string): string | undefined {
  if (!path) return 'must not be empty'
  if (path.length > skillLimits.pathLength) return `must be at most ${skillLimits.pathLength} characters`
  if (controlChars.test(path)) return 'must not contain control characters'
  if (path.includes('\\')) return 'must use "/" as separator'
  if (path.startsWith('/') || path.startsWith('~') || /^[A-Za-z]:/.test(path)) return 'must be relative'
  for (const segment of path.split('/')) {
    if (!segment) return 'must not have empty segments'
    if (segment === '.' || segment === '..') return 'must not contain "." or ".." segments'
  }
  return undefined
}

/**
 * Problems with a skill's markdown and files, as error details (empty when none). `limits: false`
 * checks only what storage and safety need (catalog content sized by the tower).
 */
export function skillContentProblems(markdown: string, files: readonly SkillFileEntry[], opts: { limits: boolean; base?: string }): ErrorDetail[] {
  const base = opts.base ?? ''
  const out: ErrorDetail[] = []
  if (!markdown.trim()) out.push({ path: `${base}/markdown`, message: 'markdown must not be blank' })
  // PostgreSQL text cannot hold NUL; binary content belongs in a base64 file.
  if (markdown.includes('\0')) out.push({ path: `${base}/markdown`, message: 'markdown must not contain NUL characters' })
  if (opts.limits && Buffer.byteLength(markdown, 'utf8') > skillLimits.markdownBytes) {
    out.push({ path: `${base}/markdown`, message: `markdown must be at most ${skillLimits.markdownBytes} bytes` })
  }
  if (opts.limits && files.length > skillLimits.files) out.push({ path: `${base}/files`, message: `at most ${skillLimits.files} files` })
  const seen = new Set<string>()
  let total = 0
  files.forEach((f, i) => {
    const at = `${base}/files/${i}`
    const pathProblem = filePathProblem(f.path)
    if (pathProblem) out.push({ path: `${at}/path`, message: `path ${pathProblem}` })
    else if (seen.has(f.path)) out.push({ path: `${at}/path`, message: `path ${f.path} appears twice` })
    seen.add(f.path)
    if (f.encoding === 'base64' && !isCanonicalBase64(f.content)) {
      out.push({ path: `${at}/content`, message: 'content is not valid base64' })
      return
    }
    if (f.encoding === 'utf8' && f.content.includes('\0')) {
      out.push({ path: `${at}/content`, message: 'utf8 content must not contain NUL characters; send binary files as base64' })
      return
    }
    const size = f.encoding === 'base64' ? Buffer.from(f.content, 'base64').length : Buffer.byteLength(f.content, 'utf8')
    total += size
    if (opts.limits && size > skillLimits.fileBytes) out.push({ path: `${at}/content`, message: `a file must be at most ${skillLimits.fileBytes} bytes` })
  })
  if (opts.limits && total > skillLimits.totalFileBytes) out.push({ path: `${base}/files`, message: `files must be at most ${skillLimits.totalFileBytes} bytes together` })
  return out
}

/**
 * Reads the front matter of a SKILL.md: a first line `---`, then `key: value` lines up to a line
 * `---` (or `...`). Values are single-line scalars, optionally quoted, or `|` / `>` blocks of
 * indented lines. Anything else (lists, nested maps) is skipped. Returns undefined without front matter.
 */
export function readFrontMatter(markdown: string): Record<string, string> | undefined {
  const lines = markdown.replace(/^\uFEFF/, '').split(/\r?\n/)
  if (lines[0]?.trim() !== '---') return undefined
  const end = lines.findIndex((l, i) => i > 0 && (l.trim() === '---' || l.trim() === '...'))
  if (end < 0) return undefined
  const out: Record<string, string> = {}
  for (let i = 1; i < end; i++) {
    const m = /^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$/.exec(lines[i]!)
    if (!m) continue
    const [, key, raw] = m as unknown as [string, string, string]
    let value = raw.trim()
    if (/^[|>][+-]?$/.test(value)) {
      const block: string[] = []
      while (i + 1 < end && (/^\s+\S/.test(lines[i + 1]!) || !lines[i + 1]!.trim())) block.push(lines[++i]!.trim())
      while (block.length && !block[block.length - 1]) block.pop()
      value = value.startsWith('|') ? block.join('\n') : block.filter(Boolean).join(' ')
    } else if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) {
      value = value.startsWith('"') ? value.slice(1, -1).replace(/\\"/g, '"').replace(/\\\\/g, '\\') : value.slice(1, -1).replace(/''/g, "'")
    } else {
      // An unquoted scalar ends at a comment.
      value = value.replace(/\s+#.*$/, '')
    }
    out[key] = value
  }
  return out
}

/** A skill key made from free text (a name, a file or folder name), or undefined when nothing is left. */
export function keyFrom(text: string): string | undefined {
  const key = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[^a-z0-9]+/, '')
    .slice(0, 100)
    .replace(/[-.]+$/, '')
  return key && skillKeyPattern.test(key) ? key : undefined
}
