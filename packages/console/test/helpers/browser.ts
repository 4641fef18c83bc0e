import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright-core'

export const chromiumPath = '/usr/bin/chromium'
/** Why the browser tests skip, or null when Debian's Chromium is there. */
export const browserSkip = existsSync(chromiumPath) ? null : `${chromiumPath} is missing (apt-get install chromium): the console's browser tests need it`

/**
 * The package's folder in the repository. `npm test` runs a compiled mirror of src/ and test/ under
 * .test-build/, which holds no app/: the app is always built from the repository's own source.
 */
const packageRoot = fileURLToPath(new URL('../..', import.meta.url)).replace(`${sep}.test-build${sep}`, sep)
const require = createRequire(import.meta.url)

/** Builds the app from its current source into a fresh folder (so a test never serves a stale build). */
export async function buildApp(): Promise<string> {
  const outDir = mkdtempSync(join(tmpdir(), 'slaw-console-app-'))
  const vite = join(dirname(require.resolve('vite/package.json')), 'bin', 'vite.js')
  await new Promise<void>((resolve, reject) =>
    execFile(
      process.execPath,
      [vite, 'build', '--config', 'app/vite.config.ts', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'],
      { cwd: packageRoot, timeout: 180_000 },
      (err, _out, stderr) => (err ? reject(new Error(`vite build failed: ${stderr || err.message}`)) : resolve()),
    ),
  )
  return outDir
}

/** Debian's Chromium, headless, with nothing reaching out to the network. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
}

/** axe-core's script, injected into a page to check accessibility. */
export const axeScriptPath = join(dirname(require.resolve('axe-core/package.json')), 'axe.min.js')
