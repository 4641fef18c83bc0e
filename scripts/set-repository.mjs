#!/usr/bin/env node
// Writes the repository's address into the root and every published package.json, once, before the
// first release: `npm run set-repository -- https://github.com/<owner>/<name>`.
//
// Why a script and not a literal: the package READMEs link to docs/ with relative links, which npm's
// registry page resolves against `repository` (with its `directory`). The address is the publisher's
// to choose, so it is set in one step, the same way in every package, and `npm publish` refuses to
// pack a package without it (scripts/prepack.mjs) rather than ship dead links. docs/packages.md.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { publicWorkspaces, root } from './workspaces.mjs'

/** `https://host/owner/name` (no `.git`, no trailing slash), or a thrown reason. */
export function repositoryAddress(input) {
  let url
  try {
    url = new URL(
      String(input ?? '')
        .replace(/\/+$/, '')
        .replace(/\.git$/, ''),
    )
  } catch {
    throw new Error(`not a URL: ${JSON.stringify(input)}`)
  }
  if (url.protocol !== 'https:') throw new Error(`use an https:// address (got ${url.protocol})`)
  if (url.search || url.hash || url.username || url.password) throw new Error('the address takes no query, fragment or credentials')
  if (!/^\/[^/]+\/[^/]+$/.test(url.pathname)) throw new Error(`expected https://<host>/<owner>/<name>, got ${url.href}`)
  return `${url.origin}${url.pathname}`
}

/** The fields a package carries for `address`; `dir` is its folder in the repository ('' at the root). */
export function repositoryFields(address, dir) {
  return {
    repository: { type: 'git', url: `git+${address}.git`, ...(dir ? { directory: dir } : {}) },
    homepage: dir ? `${address}/tree/main/${dir}#readme` : `${address}#readme`,
    bugs: { url: `${address}/issues` },
  }
}

function write(file, fields) {
  const pkg = JSON.parse(readFileSync(file, 'utf8'))
  const next = { ...pkg, ...fields }
  writeFileSync(file, `${JSON.stringify(next, null, 2)}\n`)
}

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    const address = repositoryAddress(process.argv[2])
    write(join(root, 'package.json'), repositoryFields(address, ''))
    for (const w of publicWorkspaces()) write(join(w.abs, 'package.json'), repositoryFields(address, w.dir))
    console.log(`repository ${address}: written to package.json and ${publicWorkspaces().length} packages`)
  } catch (err) {
    console.error(`set-repository: ${err instanceof Error ? err.message : String(err)}`)
    process.exitCode = 1
  }
}
