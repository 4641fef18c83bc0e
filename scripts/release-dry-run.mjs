#!/usr/bin/env node
// A release, rehearsed (CI runs this after pack-check; see docs/packages.md): copies the repository
// (built dist included, node_modules linked) to a scratch directory, runs `changeset version` there
// through scripts/version.mjs (the pending changesets become versions and changelogs), checks every @slaw range still holds,
// then `npm publish --dry-run` for each published workspace. The real release is `npm run version-packages`, a commit, then `npm run release`.
// `node scripts/release-dry-run.mjs`.
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { publicWorkspaces, root, timed } from './workspaces.mjs'

const semver = createRequire(import.meta.url)('semver')

function run(cmd, args, cwd) {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } })
  if (res.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${res.status}\n${res.stdout}${res.stderr}`)
  return `${res.stdout}${res.stderr}`
}

const scratch = mkdtempSync(join(tmpdir(), 'slaw-release-'))
try {
  await timed('release dry run', async () => {
    const pendingChangesets = readdirSync(join(root, '.changeset')).filter((f) => f.endsWith('.md') && f !== 'README.md')
    cpSync(root, scratch, {
      recursive: true,
      filter: (src) => {
        const rel = relative(root, src)
        return !/(^|\/)(node_modules|\.git|\.tap|\.slaw|coverage|tmp)$/.test(rel) && !/^bench\/\.data/.test(rel)
      },
    })
    // Only the root node_modules: workspace links in it are relative and point into the scratch copy.
    symlinkSync(join(root, 'node_modules'), join(scratch, 'node_modules'), 'dir')
    for (const w of publicWorkspaces()) {
      if (existsSync(join(w.abs, 'node_modules'))) symlinkSync(join(w.abs, 'node_modules'), join(scratch, w.dir, 'node_modules'), 'dir')
    }

    // The real publish refuses a package without `repository` (prepack.mjs). Until the publisher has
    // set the address, the rehearsal writes a stand-in into the scratch copy only, so the step that
    // writes it and the check that reads it run on every CI pass.
    if (!JSON.parse(readFileSync(join(scratch, 'package.json'), 'utf8')).repository) {
      run(process.execPath, [join(scratch, 'scripts/set-repository.mjs'), 'https://example.invalid/owner/slaw'], scratch)
      console.log('repository: not set yet (rehearsed with a stand-in); `npm run release` refuses until `npm run set-repository -- <url>`')
    }
    run(process.execPath, [join(scratch, 'scripts/check-packages.mjs')], scratch)

    const before = new Map(publicWorkspaces().map((w) => [w.pkg.name, w.pkg.version]))
    run(process.execPath, [join(scratch, 'scripts/version.mjs'), scratch], scratch)
    const after = publicWorkspaces().map((w) => ({ ...w, pkg: JSON.parse(readFileSync(join(scratch, w.dir, 'package.json'), 'utf8')), abs: join(scratch, w.dir) }))
    const versions = new Map(after.map((w) => [w.pkg.name, w.pkg.version]))
    console.log(`changeset version: ${pendingChangesets.length} changeset(s) -> ${after.map((w) => `${w.pkg.name} ${before.get(w.pkg.name)} -> ${w.pkg.version}`).join(', ')}`)

    // Every @slaw range in the bumped packages must accept the bumped versions, or npm would fetch
    // an old release of a sibling (or fail) on install.
    for (const w of after) {
      for (const field of ['dependencies', 'peerDependencies', 'devDependencies']) {
        for (const [dep, range] of Object.entries(w.pkg[field] ?? {})) {
          if (versions.has(dep) && !semver.satisfies(versions.get(dep), range)) throw new Error(`${w.pkg.name} ${field}["${dep}"] is ${range}, which ${dep} ${versions.get(dep)} does not satisfy`)
        }
      }
      if (semver.major(w.pkg.version) !== semver.major(before.get(w.pkg.name)) && semver.major(before.get(w.pkg.name)) === 0)
        throw new Error(`${w.pkg.name} would leave 0.x (${w.pkg.version}); if that is meant, drop this check in the same change`)
      if (!existsSync(join(w.abs, 'CHANGELOG.md')) && before.get(w.pkg.name) !== w.pkg.version) throw new Error(`${w.pkg.name}: no CHANGELOG.md after changeset version`)
    }

    for (const w of after) {
      const out = run('npm', ['publish', '--dry-run', '--tag', 'dry-run', '-w', w.dir], scratch)
      const line = /\+ (@slaw\/\S+)/.exec(out)?.[1]
      if (line !== `${w.pkg.name}@${w.pkg.version}`) throw new Error(`npm publish --dry-run ${w.pkg.name}: expected "+ ${w.pkg.name}@${w.pkg.version}" in\n${out}`)
      console.log(`npm publish --dry-run: + ${line}`)
    }
  })
} catch (err) {
  console.error(`release dry run FAILED: ${err instanceof Error ? err.message : String(err)}`)
  process.exitCode = 1
} finally {
  rmSync(scratch, { recursive: true, force: true })
}
