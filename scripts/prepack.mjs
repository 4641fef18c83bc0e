#!/usr/bin/env node
// `prepack` of every published package (npm runs it in the package's directory before `npm pack`
// and `npm publish`): copies the repository's one LICENSE into the package, so each tarball carries
// it while the text lives in one file. The copies are git-ignored. Refuses to pack a package whose
// README is missing or whose "license" field is not the root LICENSE's (MIT), and a real publish of
// a package without `repository`: its README's relative links to docs/ would be dead on the
// registry's page (`npm run set-repository -- <url>` writes it everywhere; docs/packages.md).
import { copyFileSync, existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dir = process.cwd()
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
const fail = (why) => {
  console.error(`prepack ${pkg.name}: ${why}`)
  process.exit(1)
}
if (dir === root) fail('run inside a workspace package, not at the repository root')
if (pkg.license !== 'MIT' || !/^MIT License/.test(readFileSync(join(root, 'LICENSE'), 'utf8'))) fail(`"license" is ${JSON.stringify(pkg.license)}; the root LICENSE is MIT`)
if (!existsSync(join(dir, 'README.md'))) fail('no README.md (install, the smallest working example, the options, a link to docs/)')
const publishing = process.env.npm_command === 'publish' && process.env.npm_config_dry_run !== 'true'
if (publishing && !pkg.repository)
  fail('no "repository": its README links to docs/ would be dead on the registry. Run `npm run set-repository -- https://<host>/<owner>/<name>` once, commit, then publish')
copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'))
