#!/usr/bin/env node
// Compiles the TypeScript of every workspace (src/ and test/) to JavaScript once, into a mirror of
// the repository under .test-build/, so that test processes run plain JavaScript with no loader.
// Running the sources through tsx cost each of the hundred test processes about a second of start
// (every import, tap's own included, went through tsx's hooks thread); one esbuild pass over all
// files takes about a second in total. tsx and esbuild apply the same transform, so what runs is
// the same code (docs/testing.md).
//
// The mirror keeps the layout: a test's relative imports, fixtures and paths resolve as they do in
// the repository. The .ts files are copied beside their .js output (tests that read sources or
// spawn a .ts entry still find it), each workspace's package.json is copied with its "slaw-source"
// export condition pointing at the .js files, and .test-build/node_modules/@slaw/* link to the
// mirrored workspaces, so `--conditions=slaw-source` resolves @slaw/* inside the mirror.
// Third-party packages resolve from the repository's node_modules, one level up.
import { build } from 'esbuild'
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { root, workspaces } from './workspaces.mjs'

export const testBuildDir = join(root, '.test-build')

/** Directories of a workspace that hold code to mirror. */
const codeDirs = ['src', 'test', 'fixtures']

function walk(dir, out = []) {
  if (!existsSync(dir)) return out
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path, out)
    else out.push(path)
  }
  return out
}

/** The "slaw-source" condition of an exports map, pointed at the compiled .js. */
function compiledExports(exports) {
  if (typeof exports === 'string') return exports
  if (!exports || typeof exports !== 'object') return exports
  return Object.fromEntries(Object.entries(exports).map(([k, v]) => [k, k === 'slaw-source' && typeof v === 'string' ? v.replace(/\.ts$/, '.js') : compiledExports(v)]))
}

export async function buildTests() {
  const started = Date.now()
  rmSync(testBuildDir, { recursive: true, force: true })
  const entryPoints = []
  /** Copies a directory's files into the mirror and queues its TypeScript for the compile. */
  const mirror = (dir) => {
    for (const file of walk(join(root, dir))) {
      cpSync(file, join(testBuildDir, relative(root, file)))
      if (file.endsWith('.ts') && !file.endsWith('.d.ts')) entryPoints.push(file)
    }
  }
  for (const { dir: ws, pkg } of workspaces()) {
    const out = join(testBuildDir, ws)
    mkdirSync(out, { recursive: true })
    if (pkg.exports) pkg.exports = compiledExports(pkg.exports)
    writeFileSync(join(out, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
    // A workspace's own dependencies (npm puts some under the workspace) resolve as in the repository.
    if (existsSync(join(root, ws, 'node_modules'))) symlinkSync(join(root, ws, 'node_modules'), join(out, 'node_modules'), 'dir')
    if (pkg.name) {
      const link = join(testBuildDir, 'node_modules', pkg.name)
      mkdirSync(dirname(link), { recursive: true })
      symlinkSync(relative(dirname(link), out), link, 'dir')
    }
    for (const dir of codeDirs) mirror(join(ws, dir))
  }
  // nodeEntry(), shared by the tests of several packages that start child processes.
  cpSync(join(root, 'scripts/node-entry.ts'), join(testBuildDir, 'scripts/node-entry.ts'))
  entryPoints.push(join(root, 'scripts/node-entry.ts'))
  // Files that tests read from the repository root by relative path.
  for (const name of ['docs', 'package.json', 'tsconfig.base.json']) symlinkSync(join(root, name), join(testBuildDir, name))
  await build({
    entryPoints,
    outbase: root,
    outdir: testBuildDir,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // External maps cost nothing unless asked for (NODE_OPTIONS=--enable-source-maps when debugging).
    sourcemap: 'external',
    logLevel: 'warning',
  })
  console.log(`Compiled ${entryPoints.length} TypeScript files into .test-build/ in ${Date.now() - started} ms.`)
  return testBuildDir
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildTests()
