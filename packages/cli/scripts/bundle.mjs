// Bundles the `slaw` command into one CommonJS file, dist/slaw.bundle.cjs, that dist/bin.cjs runs
// with a V8 code cache (src/bundled-program.ts; why: docs/startup-and-memory.md). Built from the
// TypeScript sources of the @slaw packages and the ES module builds of the rest, so that esbuild
// leaves out what nothing uses. Run by `npm run build` after tsup.
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { escapeBeyondLatin1 } from '../../../scripts/latin1.mjs'

const cliDir = join(dirname(fileURLToPath(import.meta.url)), '..')
const outfile = join(cliDir, 'dist/slaw.bundle.cjs')
const marker = '//# slawBundleId=' // bundled-program.ts reads it

// A first-party module sees `import.meta.url` as if it ran from its own package's dist/, as it does
// unbundled: core reads its package.json beside it, the console serves dist/app, PGlite and ws
// are resolved from the package that depends on them.
const ownUrls = {
  name: 'slaw-package-urls',
  setup(b) {
    b.onLoad({ filter: /\/packages\/[^/]+\/src\/.*\.ts$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      if (!text.includes('import.meta.url')) return undefined
      const pkgDir = args.path.slice(0, args.path.indexOf('/src/'))
      const { name } = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'))
      return { contents: text.replaceAll('import.meta.url', `__slawPackageUrl(${JSON.stringify(name)})`), loader: 'ts' }
    })
  },
}

const result = await build({
  entryPoints: [join(cliDir, 'src/run.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  conditions: ['slaw-source'],
  tsconfig: join(cliDir, '../../tsconfig.base.json'),
  // PGlite finds its WebAssembly and data files beside its own module: it stays a package.
  external: ['@electric-sql/pglite', '@electric-sql/pglite/*'],
  plugins: [ownUrls],
  // import() becomes require(): V8 loses a script's dynamic-import callback when the script comes
  // from a code cache, and what stays outside the bundle (PGlite, secret provider plugins) ships
  // CommonJS builds.
  supported: { 'dynamic-import': false },
  banner: {
    js: [
      '"use strict";',
      `const __slawPackageUrl = (name) => require("node:url").pathToFileURL(name === "@slaw/cli" ? __filename : require("node:path").join(require("node:path").dirname(require.resolve(name)), "index.js")).href;`,
    ].join('\n'),
  },
  legalComments: 'eof',
  logLevel: 'warning',
  metafile: true,
})
if (result.errors.length) process.exit(1)

// Latin-1 only, so that V8 holds the source one byte per character.
const code = escapeBeyondLatin1(readFileSync(outfile, 'utf8'))
const id = createHash('sha256').update(code).digest('hex').slice(0, 32)
writeFileSync(outfile, `${code}\n${marker}${id}\n`, 'latin1')
const kb = Math.round(Buffer.byteLength(code) / 1024)
console.log(`bundle: dist/slaw.bundle.cjs, ${kb} kB, ${Object.keys(result.metafile.inputs).length} modules`)
