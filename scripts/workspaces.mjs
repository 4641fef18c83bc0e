// The workspace packages, read from the root package.json's "workspaces" list (so a new package is
// covered by every script the moment it is listed there). Node 20 has no fs.globSync: a workspace
// entry is a directory or `<dir>/*`.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const rootPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))

/** Every workspace: `{ dir, abs, pkg }`, in the order of the workspaces list. */
export function workspaces() {
  const dirs = []
  for (const entry of rootPackage.workspaces) {
    if (entry.endsWith('/*')) {
      const parent = entry.slice(0, -2)
      if (!existsSync(join(root, parent))) continue
      for (const name of readdirSync(join(root, parent)).sort()) {
        const dir = `${parent}/${name}`
        if (statSync(join(root, dir)).isDirectory() && existsSync(join(root, dir, 'package.json'))) dirs.push(dir)
      }
    } else if (existsSync(join(root, entry, 'package.json'))) dirs.push(entry)
  }
  return dirs.map((dir) => ({ dir, abs: join(root, dir), pkg: JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) }))
}

/** The workspaces npm publishes (not `private`). */
export const publicWorkspaces = () => workspaces().filter((w) => !w.pkg.private)

/** Runs `fn`, prints how long it took, returns its result. */
export async function timed(label, fn) {
  const start = performance.now()
  try {
    return await fn()
  } finally {
    console.log(`[${label}] ${((performance.now() - start) / 1000).toFixed(1)} s`)
  }
}
