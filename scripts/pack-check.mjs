#!/usr/bin/env node
// The packages as a new user gets them (CI runs this after `npm test`; see docs/packages.md):
// 1. scripts/check-packages.mjs (package.json rules);
// 2. `npm pack` every published workspace (read from the workspaces list) and look inside each
//    tarball: LICENSE, README.md, dist, and no sources, source maps or tests; print the sizes;
// 3. a PostgreSQL host: the tarballs of every library that does not need PGlite, installed from the
//    tarballs (third-party dependencies from the registry) into a scratch app. PGlite must not be
//    installed, and `tsc --strict` with skipLibCheck: false must pass on an ESM and a CJS file that
//    import every entry point; both files then load every entry point under Node;
// 4. a full host: every tarball plus @electric-sql/pglite; the same type-check, then the ESM and the
//    CJS build each start an instance on PGlite (memory://) and make HTTP calls.
// Needs the packages built (`npm install` builds them). `node scripts/pack-check.mjs [--keep]`.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { publicWorkspaces, root, timed } from './workspaces.mjs'

const keep = process.argv.includes('--keep')
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const operatorKey = 'slaw_op_pack_check_0000000000000'

function run(cmd, args, cwd, { quiet = false } = {}) {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' } })
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${res.status}\n${res.stdout ?? ''}${res.stderr ?? ''}`)
  }
  if (!quiet && res.stdout.trim()) console.log(res.stdout.trim())
  return res.stdout
}
const fail = (message) => {
  throw new Error(message)
}
const kb = (bytes) => `${(bytes / 1024).toFixed(1)} kB`

/** What the full host's main() does after loading every entry point. */
const startBody = `  const instance = await createInstance({ storage: await pgliteStorage({ dataDir: 'memory://' }), operatorKey: '${operatorKey}', logger: false })
  try {
    const address = await instance.listen({ port: 0 })
    const res = await fetch(\`\${address}/api/squads\`, {
      method: 'POST',
      headers: { authorization: 'Bearer ${operatorKey}', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Host app' }),
    })
    const body = (await res.json()) as { squad?: { id: string } }
    if (res.status !== 201 || !body.squad?.id) throw new Error(\`POST /api/squads answered \${res.status}: \${JSON.stringify(body)}\`)
    // inject() loads fastify's light-my-request (and its ESM-only cookie) the way a host's tests do.
    const health = await instance.app.inject({ method: 'GET', url: '/api/health' })
    if (health.statusCode !== 200) throw new Error(\`inject GET /api/health answered \${health.statusCode}\`)
    console.log('host ok', address)
  } finally {
    await instance.close()
  }
`

const work = mkdtempSync(join(tmpdir(), 'slaw-pack-check-'))
try {
  await timed('pack-check total', async () => {
    run(process.execPath, [join(root, 'scripts/check-packages.mjs')], root)

    const packages = publicWorkspaces()
    for (const w of packages) if (!existsSync(join(w.abs, 'dist'))) fail(`${w.pkg.name}: no dist/; build first (npm install, or npm run build)`)

    // 2. Pack and inspect.
    const tarballDir = join(work, 'tarballs')
    mkdirSync(tarballDir)
    const packed = await timed('npm pack', () =>
      JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tarballDir, ...packages.flatMap((w) => ['-w', w.dir])], root, { quiet: true }).replace(/^[^[]*/, '')),
    )
    const tarballs = new Map()
    console.log('\n| package | packed | unpacked | files |\n|---|---|---|---|')
    for (const p of packed) {
      const files = p.files.map((f) => f.path)
      for (const needed of ['LICENSE', 'README.md', 'package.json']) if (!files.includes(needed)) fail(`${p.name}: the tarball has no ${needed}`)
      if (!files.some((f) => f.startsWith('dist/'))) fail(`${p.name}: the tarball has no dist/`)
      const stray = files.filter((f) => f.endsWith('.map') || f.startsWith('src/') || f.startsWith('test/') || f.endsWith('.test.ts'))
      if (stray.length) fail(`${p.name}: the tarball carries ${stray.slice(0, 5).join(', ')}${stray.length > 5 ? ' …' : ''}`)
      tarballs.set(p.name, join(tarballDir, p.filename))
      console.log(`| \`${p.name}\` | ${kb(p.size)} | ${kb(p.unpackedSize)} | ${p.entryCount} |`)
    }
    console.log('')

    const byName = new Map(packages.map((w) => [w.pkg.name, w.pkg]))
    /** True when the package, or a @slaw package it depends on, depends on PGlite. */
    const needsPglite = (name, seen = new Set()) => {
      const pkg = byName.get(name)
      if (!pkg || seen.has(name)) return false
      seen.add(name)
      const deps = pkg.dependencies ?? {}
      return Boolean(deps['@electric-sql/pglite']) || Object.keys(deps).some((d) => needsPglite(d, seen))
    }
    const pgHost = packages.filter((w) => !needsPglite(w.pkg.name))

    // 3. A PostgreSQL host: no PGlite anywhere.
    await timed('PostgreSQL host (install, tsc, load)', async () => {
      const dir = makeHost('pg-host', pgHost, [], { start: false })
      if (existsSync(join(dir, 'node_modules/@electric-sql/pglite'))) fail(`PostgreSQL host: @electric-sql/pglite was installed (by ${run('npm', ['explain', '@electric-sql/pglite'], dir, { quiet: true }).split('\n')[0]})`)
      console.log(`PostgreSQL host: ${pgHost.map((w) => w.pkg.name).join(', ')} without PGlite: types check, every entry point loads (ESM and CJS)`)
    })

    // 4. The full host, on PGlite.
    await timed('PGlite host (install, tsc, start, HTTP)', async () => {
      makeHost('full-host', packages, ['@electric-sql/pglite', '@types/emscripten'], { start: true })
      console.log('PGlite host: every package: types check, ESM and CJS builds start an instance and answer HTTP')
    })

    function makeHost(name, members, extra, { start }) {
      const dir = join(work, name)
      mkdirSync(join(dir, 'src'), { recursive: true })
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `slaw-${name}`, private: true, type: 'module' }, null, 2))
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify(
          {
            // PGlite's declarations use the Emscripten namespace without depending on its types: a
            // PGlite host adds @types/emscripten (docs/packages.md).
            compilerOptions: { strict: true, skipLibCheck: false, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2023', 'DOM'], types: start ? ['node', 'emscripten'] : ['node'], outDir: 'out', rootDir: 'src', noEmitOnError: true },
            include: ['src'],
          },
          null,
          2,
        ),
      )
      // A PostgreSQL host leaves out the entry points built on PGlite (`@slaw/storage-pg/pglite`).
      const usesPglite = (w, sub) => readFileSync(join(w.abs, w.pkg.exports[sub].import.types), 'utf8').includes('@electric-sql/pglite')
      const entries = members.flatMap((w) =>
        Object.keys(w.pkg.exports)
          .filter((sub) => start || !usesPglite(w, sub))
          .map((sub) => (sub === '.' ? w.pkg.name : `${w.pkg.name}/${sub.slice(2)}`)),
      )
      const imports = entries.map((spec, i) => `import * as m${i} from '${spec}'`).join('\n')
      const list = `export const modules = [${entries.map((_, i) => `m${i}`).join(', ')}]\nexport const names = ${JSON.stringify(entries)}`
      writeFileSync(join(dir, 'src/esm.mts'), `${imports}\nimport { main } from './main.mjs'\n${list}\nawait main(names, modules)\n`)
      writeFileSync(join(dir, 'src/cjs.cts'), `${imports}\nimport { main } from './main-cjs.cjs'\n${list}\nvoid main(names, modules).catch((err: unknown) => {\n  console.error(err)\n  process.exit(1)\n})\n`)
      const body = start ? startBody : ''
      const main = `${start ? "import { createInstance } from '@slaw/core'\nimport { pgliteStorage } from '@slaw/storage-pg/pglite'\n" : ''}export async function main(names: string[], modules: object[]): Promise<void> {
  names.forEach((n, i) => {
    if (Object.keys(modules[i] ?? {}).length === 0) throw new Error(\`\${n} exports nothing\`)
  })
${body}}\n`
      writeFileSync(join(dir, 'src/main.mts'), main)
      writeFileSync(join(dir, 'src/main-cjs.cts'), main)
      run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...members.map((w) => tarballs.get(w.pkg.name)), '@types/node@^20', ...extra], dir, { quiet: true })
      run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir)
      for (const file of ['out/esm.mjs', 'out/cjs.cjs']) {
        const out = run(process.execPath, [file], dir, { quiet: true })
        if (start && !out.includes('host ok')) fail(`${name} ${file}: no "host ok" in its output:\n${out}`)
      }
      return dir
    }
  })
} catch (err) {
  console.error(`pack-check FAILED: ${err instanceof Error ? err.message : String(err)}`)
  process.exitCode = 1
} finally {
  if (!keep) rmSync(work, { recursive: true, force: true })
  else console.log(`scratch apps kept in ${work}`)
}
