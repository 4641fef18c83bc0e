#!/usr/bin/env node
// Checks every workspace package.json against the rules a published slaw package keeps (docs/packages.md):
// - engines.node is the root package.json's, the one place the Node.js floor is written, and every
//   runtime dependency in package-lock.json accepts that floor;
// - license MIT (the root LICENSE, copied in at prepack), a README.md, files ["dist"] (no sources or
//   source maps), publishConfig.access public, the prepack script;
// - @slaw/core is a peerDependency with a caret range (plus a devDependency for the workspace) in
//   every package except core itself and the applications (cli, tower), which depend on it;
// - @electric-sql/pglite is only ever an optional peer of a library;
// - once the root package.json has a `repository` (scripts/set-repository.mjs), every package carries
//   the same address with its own `directory`.
// Exits 1 with one line per problem. `node scripts/check-packages.mjs [--fix]`: --fix first rewrites
// what is mechanical (engines, files, prepack, publishConfig, @slaw/core and PGlite as peers) in
// every published package.json; a missing README or a license other than MIT stays for a person.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { repositoryAddress, repositoryFields } from './set-repository.mjs'
import { publicWorkspaces, root, rootPackage, workspaces } from './workspaces.mjs'

const semver = createRequire(import.meta.url)('semver')
/** Packages that are programs, not plugins: they pin the core they were built with. */
const applications = new Set(['@slaw/cli', '@slaw/tower'])
/** Packages that use slaw over HTTP only, never @slaw/core itself (no peer dependency on it). */
const standalone = new Set(['@slaw/client'])
const floor = rootPackage.engines?.node
const problems = []
const problem = (name, text) => problems.push(`${name}: ${text}`)

if (!floor || !semver.validRange(floor)) problem('package.json', `engines.node must be a semver range (got ${JSON.stringify(floor)})`)
if (process.argv.includes('--fix')) fix()

/** Rewrites the mechanical rules into every published package.json (key order kept, new keys last). */
function fix() {
  const coreVersion = JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')).version
  for (const { dir, abs, pkg } of workspaces()) {
    if (pkg.private) continue
    const before = JSON.stringify(pkg)
    pkg.engines = { ...pkg.engines, node: floor }
    pkg.files = ['dist']
    pkg.scripts = { ...pkg.scripts, prepack: 'node ../../scripts/prepack.mjs' }
    pkg.publishConfig = { ...pkg.publishConfig, access: 'public' }
    const moveToPeer = (dep, range, optional) => {
      if (pkg.dependencies?.[dep]) delete pkg.dependencies[dep]
      pkg.peerDependencies = { ...pkg.peerDependencies, [dep]: range }
      if (optional) pkg.peerDependenciesMeta = { ...pkg.peerDependenciesMeta, [dep]: { optional: true } }
      pkg.devDependencies = { ...pkg.devDependencies, [dep]: dep === '@slaw/core' ? coreVersion : range }
    }
    if (pkg.name !== '@slaw/core' && !applications.has(pkg.name) && !standalone.has(pkg.name) && (pkg.dependencies?.['@slaw/core'] || pkg.peerDependencies?.['@slaw/core'])) {
      const peer = pkg.peerDependencies?.['@slaw/core']
      moveToPeer('@slaw/core', peer && /^\^\d/.test(peer) ? peer : `^${coreVersion}`, false)
    }
    const pglite = pkg.dependencies?.['@electric-sql/pglite']
    if (pglite && !applications.has(pkg.name)) moveToPeer('@electric-sql/pglite', pglite, true)
    if (pkg.dependencies && Object.keys(pkg.dependencies).length === 0) delete pkg.dependencies
    if (JSON.stringify(pkg) !== before) {
      writeFileSync(join(abs, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
      console.log(`check-packages --fix: rewrote ${dir}/package.json`)
    }
  }
}
const floorMin = semver.minVersion(floor)
// The address is the publisher's (set once, before the first release); until then no package has one.
let address = null
if (rootPackage.repository) {
  try {
    address = repositoryAddress(String(rootPackage.repository.url ?? rootPackage.repository).replace(/^git\+/, ''))
  } catch (err) {
    problem('package.json', `repository: ${err.message}`)
  }
}

for (const { dir, abs, pkg } of workspaces()) {
  if (pkg.private) continue
  const name = pkg.name ?? dir
  if (pkg.engines?.node !== floor) problem(name, `engines.node is ${JSON.stringify(pkg.engines?.node)}; the floor is ${JSON.stringify(floor)} (root package.json)`)
  if (pkg.license !== 'MIT') problem(name, `license is ${JSON.stringify(pkg.license)}, not MIT (the root LICENSE)`)
  if (!existsSync(join(abs, 'README.md'))) problem(name, 'no README.md')
  if (JSON.stringify(pkg.files) !== '["dist"]') problem(name, `files is ${JSON.stringify(pkg.files)}; publish ["dist"] only`)
  if (pkg.scripts?.prepack !== 'node ../../scripts/prepack.mjs') problem(name, 'scripts.prepack must be "node ../../scripts/prepack.mjs" (copies the LICENSE in)')
  if (pkg.publishConfig?.access !== 'public') problem(name, 'publishConfig.access must be "public" (a scoped package is private by default)')
  if (name !== '@slaw/core' && !standalone.has(name)) {
    const dep = pkg.dependencies?.['@slaw/core']
    const peer = pkg.peerDependencies?.['@slaw/core']
    if (applications.has(name)) {
      if (!dep) problem(name, 'an application depends on @slaw/core')
    } else {
      if (dep) problem(name, `@slaw/core is a dependency (${dep}); a plugin takes it as a peerDependency so a host has one core`)
      if (!peer || !/^\^\d/.test(peer)) problem(name, `peerDependencies["@slaw/core"] must be a caret range such as ^0.1.0 (got ${JSON.stringify(peer)})`)
      if (!pkg.devDependencies?.['@slaw/core']) problem(name, 'devDependencies["@slaw/core"] is missing (the workspace copy, for tests and builds)')
    }
  }
  if (address) {
    const want = repositoryFields(address, dir)
    for (const key of ['repository', 'homepage', 'bugs'])
      if (JSON.stringify(pkg[key]) !== JSON.stringify(want[key])) problem(name, `${key} is ${JSON.stringify(pkg[key])}; run \`npm run set-repository -- ${address}\``)
  } else if (pkg.repository) problem(name, 'has a repository but the root package.json has none: run `npm run set-repository -- <url>`')
  if (!applications.has(name) && pkg.dependencies?.['@electric-sql/pglite']) problem(name, '@electric-sql/pglite must be an optional peer dependency of a library, not a dependency')
  if (pkg.peerDependencies?.['@electric-sql/pglite'] && !pkg.peerDependenciesMeta?.['@electric-sql/pglite']?.optional)
    problem(name, '@electric-sql/pglite must be an optional peer (peerDependenciesMeta)')
}

// Every package a host installs at run time must accept the floor, or npm prints EBADENGINE.
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
for (const [path, entry] of Object.entries(lock.packages ?? {})) {
  if (!path.startsWith('node_modules/') || entry.dev || !entry.engines?.node || !floorMin) continue
  const range = typeof entry.engines.node === 'string' ? entry.engines.node : ''
  if (semver.validRange(range) && !semver.satisfies(floorMin, range))
    problem(path.replace(/^.*node_modules\//, ''), `declares Node ${range}, which the floor ${floor} does not meet (npm prints EBADENGINE)`)
}

if (problems.length) {
  console.error(`check-packages: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`)
  process.exit(1)
}
console.log(`check-packages: ${publicWorkspaces().length} published packages follow the rules (Node ${floor}).`)
