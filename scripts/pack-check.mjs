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
//    CJS build each start an instance on PGlite (memory://) and make HTTP calls; then the same
//    type-check again with TypeScript 7 (`typescript@7`, the native compiler) installed in the host;
// 4b. docs/getting-started.md's walk: its install line (the @slaw names from the tarballs) in an empty
//    folder, then its host.mjs block word for word, which must print the run it observed;
// 5. every example (examples/*, two at a time), copied alone into a scratch folder, its @slaw/*
//    dependencies pointed at the tarballs (`file:`), installed (third-party packages from the
//    registry, TypeScript 7 among its devDependencies), then its own `typecheck`, `build` (plugin
//    examples: dist/ with declarations, loaded through the package's exports) and `test` scripts.
//    An example that needs services runs its tests only when they are given
//    (SLAW_TEST_DATABASE_URL, SLAW_TEST_REDIS_URL, as in CI), else only the type-check and build.
// Every npm call uses --prefer-offline and the one npm cache of the user running it.
// Needs the packages built (`npm install` builds them).
// `node scripts/pack-check.mjs [--keep] [--examples]` (--examples: steps 1, 2 and 5 only).
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { publicWorkspaces, root, timed } from './workspaces.mjs'

const keep = process.argv.includes('--keep')
const examplesOnly = process.argv.includes('--examples')
/** Examples whose tests need services, and the variables that give them (else: type-check and build only). */
const exampleServices = { 'postgres-redis': ['SLAW_TEST_DATABASE_URL', 'SLAW_TEST_REDIS_URL'] }
const npmInstall = ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error']
const npmQuiet = { npm_config_fund: 'false', npm_config_audit: 'false', npm_config_update_notifier: 'false' }
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const operatorKey = 'slaw_op_pack_check_0000000000000'

function run(cmd, args, cwd, { quiet = false } = {}) {
  const res = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...npmQuiet } })
  if (res.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${res.status}\n${res.stdout ?? ''}${res.stderr ?? ''}`)
  }
  if (!quiet && res.stdout.trim()) console.log(res.stdout.trim())
  return res.stdout
}
/** run(), without blocking: examples are checked two at a time. */
function runAsync(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, ...npmQuiet }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} (in ${cwd}) exited ${code}\n${out}`))))
  })
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
    if (!examplesOnly)
      await timed('PostgreSQL host (install, tsc, load)', async () => {
        const dir = makeHost('pg-host', pgHost, [], { start: false })
        if (existsSync(join(dir, 'node_modules/@electric-sql/pglite')))
          fail(`PostgreSQL host: @electric-sql/pglite was installed (by ${run('npm', ['explain', '@electric-sql/pglite'], dir, { quiet: true }).split('\n')[0]})`)
        console.log(`PostgreSQL host: ${pgHost.map((w) => w.pkg.name).join(', ')} without PGlite: types check, every entry point loads (ESM and CJS)`)
      })

    // 4. The full host, on PGlite; then its type-check with TypeScript 7.
    if (!examplesOnly)
      await timed('PGlite host (install, tsc, start, HTTP; tsc of TypeScript 7)', async () => {
        const dir = makeHost('full-host', packages, ['@electric-sql/pglite', '@types/emscripten'], { start: true })
        console.log('PGlite host: every package: types check, ESM and CJS builds start an instance and answer HTTP')
        run('npm', [...npmInstall, '--save-dev', 'typescript@7'], dir, { quiet: true })
        const ts7 = typescriptIn(dir, 7)
        run(ts7.tsc, ['-p', 'tsconfig.json', '--noEmit'], dir)
        console.log(`PGlite host: types check with TypeScript ${ts7.version} too (strict, skipLibCheck false)`)
      })

    // 4b. docs/getting-started.md's embedding walk, as a reader runs it: its install line and its
    //     host.mjs block, word for word, in an empty folder (the @slaw names pointed at the tarballs).
    if (!examplesOnly) await timed('getting-started walk (empty folder, install line, host.mjs)', gettingStartedWalk)

    // 5. Every example, alone; two at a time (most of it is npm install).
    const examples = readdirSync(join(root, 'examples'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(join(root, 'examples', d.name, 'package.json')))
      .map((d) => d.name)
    await timed(`examples (${examples.length}: install, typecheck, build, test)`, async () => {
      const queue = [...examples]
      const failed = []
      const worker = async () => {
        // Every example is checked; the failures are reported together at the end.
        for (let name = queue.shift(); name; name = queue.shift()) {
          const started = performance.now()
          try {
            const line = await checkExample(join(root, 'examples', name))
            console.log(`${line} [${((performance.now() - started) / 1000).toFixed(1)} s]`)
          } catch (err) {
            console.log(`example ${name}: FAILED`)
            failed.push(`example ${name}: ${err instanceof Error ? err.message : String(err)}`)
          }
        }
      }
      await Promise.all([worker(), worker()])
      if (failed.length) fail(failed.join('\n\n'))
    })

    /** The TypeScript installed in dir: its version (of the wanted major) and its tsc (the `tsc` bin, or its only one). */
    function typescriptIn(dir, major) {
      const pkg = JSON.parse(readFileSync(join(dir, 'node_modules/typescript/package.json'), 'utf8'))
      if (Number(pkg.version.split('.')[0]) !== major) fail(`${dir}: typescript ${pkg.version} is installed, not ${major}.x`)
      const bins = typeof pkg.bin === 'string' ? { tsc: pkg.bin } : (pkg.bin ?? {})
      const bin = bins.tsc ?? Object.values(bins)[0]
      if (!bin) fail(`typescript ${pkg.version} has no bin`)
      return { version: pkg.version, tsc: join(dir, 'node_modules/typescript', bin) }
    }

    /** All the @slaw packages a package needs, itself included (dependencies and peer dependencies). */
    function slawClosure(name, out = new Set()) {
      const pkg = byName.get(name)
      if (!pkg || out.has(name)) return out
      out.add(name)
      for (const d of Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies })) if (d.startsWith('@slaw/')) slawClosure(d, out)
      return out
    }

    /**
     * Copies an example alone (no node_modules, no dist), points its @slaw/* dependencies at the
     * tarballs, installs it and runs its own scripts there. Answers a line saying what passed.
     */
    async function checkExample(source) {
      const name = basename(source)
      const dir = join(work, 'examples', name)
      mkdirSync(join(work, 'examples'), { recursive: true })
      cpSync(source, dir, { recursive: true, filter: (src) => !['node_modules', 'dist', '.tap'].includes(basename(src)) })
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
      for (const script of ['typecheck', 'test']) if (!pkg.scripts?.[script]) fail(`example ${name}: no "${script}" script`)
      if (!pkg.version) fail(`example ${name}: no version (npm pack --workspaces needs one)`)
      const direct = new Set()
      for (const field of ['dependencies', 'devDependencies']) {
        for (const dep of Object.keys(pkg[field] ?? {})) {
          if (!dep.startsWith('@slaw/')) continue
          if (!tarballs.has(dep)) fail(`example ${name}: ${dep} is not a published workspace`)
          pkg[field][dep] = `file:${tarballs.get(dep)}`
          direct.add(dep)
        }
      }
      for (const dep of Object.keys(pkg.peerDependencies ?? {})) if (dep.startsWith('@slaw/') && !direct.has(dep)) fail(`example ${name}: peer dependency ${dep} is not also a devDependency`)
      // The @slaw packages those depend on come from the tarballs too (none is on the registry yet).
      const needed = new Set([...direct].flatMap((d) => [...slawClosure(d)]))
      const overrides = Object.fromEntries([...needed].filter((d) => !direct.has(d)).map((d) => [d, `file:${tarballs.get(d)}`]))
      if (Object.keys(overrides).length) pkg.overrides = { ...pkg.overrides, ...overrides }
      writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
      await runAsync('npm', npmInstall, dir)
      const ts = typescriptIn(dir, 7)
      await runAsync('npm', ['run', '--silent', 'typecheck'], dir)
      if (pkg.exports) {
        // A plugin example: built to JavaScript with declarations, loaded through its own exports.
        if (!pkg.scripts.build) fail(`example ${name}: exports but no "build" script`)
        await runAsync('npm', ['run', '--silent', 'build'], dir)
        for (const [sub, target] of Object.entries(pkg.exports)) {
          const files = typeof target === 'string' ? [target] : Object.values(target)
          for (const file of files) if (!existsSync(join(dir, file))) fail(`example ${name}: exports["${sub}"] names ${file}, which the build did not write`)
          if (files.some((f) => /\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f))) fail(`example ${name}: exports["${sub}"] is TypeScript source`)
          if (!files.some((f) => /\.d\.[cm]?ts$/.test(f))) fail(`example ${name}: exports["${sub}"] has no types`)
        }
        const loaded = await runAsync(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(pkg.name)}); console.log(Object.keys(m).join(' '))`], dir)
        if (!loaded.trim()) fail(`example ${name}: ${pkg.name} exports nothing`)
      }
      const missing = (exampleServices[name] ?? []).filter((v) => !process.env[v])
      if (missing.length) {
        return `example ${name}: TypeScript ${ts.version}: typecheck${pkg.exports ? ', build' : ''} pass; tests not run (set ${missing.join(' and ')} to run them)`
      }
      const out = await runAsync('npm', ['test'], dir)
      const summary = out.match(/# \{ total: .* \}/g)?.pop() ?? ''
      if (/skip: [1-9]/.test(summary)) fail(`example ${name}: tests skipped: ${summary}`)
      return `example ${name}: TypeScript ${ts.version}: typecheck${pkg.exports ? ', build' : ''} and tests pass ${summary}`
    }

    async function gettingStartedWalk() {
      const doc = readFileSync(join(root, 'docs/getting-started.md'), 'utf8')
      const install = /^npm install (@slaw\/core .*)$/m.exec(doc)?.[1]
      const host = /```js\n(\/\/ host\.mjs[\s\S]*?)```/.exec(doc)?.[1]
      if (!install || !host) fail('docs/getting-started.md: no `npm install @slaw/core …` line or no ```js block starting with // host.mjs')
      const dir = join(work, 'my-host')
      mkdirSync(dir)
      run('npm', ['init', '-y'], dir, { quiet: true })
      run('npm', ['pkg', 'set', 'type=module'], dir, { quiet: true })
      const names = install.split(/\s+/)
      for (const n of names) if (n.startsWith('@slaw/') && !tarballs.has(n)) fail(`getting-started installs ${n}, which is not a published workspace`)
      // None of the @slaw packages is on the registry yet: each one named, and each they need, from its tarball.
      const slaw = new Set(names.filter((n) => n.startsWith('@slaw/')).flatMap((n) => [...slawClosure(n)]))
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
      pkg.overrides = Object.fromEntries([...slaw].filter((n) => !names.includes(n)).map((n) => [n, `file:${tarballs.get(n)}`]))
      writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`)
      run('npm', [...npmInstall, ...names.map((n) => (n.startsWith('@slaw/') ? `${n}@file:${tarballs.get(n)}` : n))], dir, { quiet: true })
      writeFileSync(join(dir, 'host.mjs'), host)
      const out = run(process.execPath, ['host.mjs'], dir, { quiet: true })
      if (!/^Operator key \(shown once\): slaw_op_\S+$/m.test(out)) fail(`getting-started host.mjs printed no Operator key:\n${out}`)
      if (!/^run succeeded: hello from agent [0-9a-f-]{36}$/m.test(out)) fail(`getting-started host.mjs: the run did not succeed as the doc shows:\n${out}`)
      console.log(`getting-started walk: \`npm install ${install}\` from the tarballs, then \`node host.mjs\`: a woken agent's run observed to "succeeded"`)
    }

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
            compilerOptions: {
              strict: true,
              skipLibCheck: false,
              module: 'NodeNext',
              moduleResolution: 'NodeNext',
              target: 'ES2022',
              lib: ['ES2023', 'DOM'],
              types: start ? ['node', 'emscripten'] : ['node'],
              outDir: 'out',
              rootDir: 'src',
              noEmitOnError: true,
            },
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
      writeFileSync(
        join(dir, 'src/cjs.cts'),
        `${imports}\nimport { main } from './main-cjs.cjs'\n${list}\nvoid main(names, modules).catch((err: unknown) => {\n  console.error(err)\n  process.exit(1)\n})\n`,
      )
      const body = start ? startBody : ''
      const main = `${start ? "import { createInstance } from '@slaw/core'\nimport { pgliteStorage } from '@slaw/storage-pg/pglite'\n" : ''}export async function main(names: string[], modules: object[]): Promise<void> {
  names.forEach((n, i) => {
    if (Object.keys(modules[i] ?? {}).length === 0) throw new Error(\`\${n} exports nothing\`)
  })
${body}}\n`
      writeFileSync(join(dir, 'src/main.mts'), main)
      writeFileSync(join(dir, 'src/main-cjs.cts'), main)
      run('npm', [...npmInstall, ...members.map((w) => tarballs.get(w.pkg.name)), '@types/node@^22', ...extra], dir, { quiet: true })
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
