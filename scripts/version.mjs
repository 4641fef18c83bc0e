#!/usr/bin/env node
// `npm run version-packages`: `changeset version`, keeping the plugins' peer ranges on @slaw/core
// true without a major bump. Changesets bumps every peer dependent of a package a major step when
// that package gets a minor bump, so in 0.x (where a minor is the breaking step) a core 0.2.0 would
// push every plugin to 1.0.0. The @slaw packages are released together (linked), so instead the peer
// ranges step aside while changesets plans, and afterwards every plugin takes `^<new core version>`.
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = process.argv[2] ?? process.cwd()
const rootPkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
const { workspaces } = await import(join(dir, 'scripts/workspaces.mjs'))
const peerDependents = workspaces().filter((w) => w.pkg.peerDependencies?.['@slaw/core'])
const write = (w, pkg) => writeFileSync(join(dir, w.dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)

for (const w of peerDependents) write(w, { ...w.pkg, peerDependencies: { ...w.pkg.peerDependencies, '@slaw/core': '*' } })
const res = spawnSync(process.execPath, [join(dir, 'node_modules/@changesets/cli/bin.js'), 'version'], { cwd: dir, stdio: 'inherit' })
const core = JSON.parse(readFileSync(join(dir, 'packages/core/package.json'), 'utf8'))
for (const w of peerDependents) {
  const pkg = JSON.parse(readFileSync(join(dir, w.dir, 'package.json'), 'utf8'))
  // On failure the old range comes back; on success the range follows the released core.
  pkg.peerDependencies['@slaw/core'] = res.status === 0 ? `^${core.version}` : w.pkg.peerDependencies['@slaw/core']
  write(w, pkg)
}
if (res.status !== 0) process.exit(res.status ?? 1)
console.log(`${rootPkg.name}: @slaw/core ${core.version}; peer ranges ^${core.version} in ${peerDependents.map((w) => w.pkg.name).join(', ')}`)
