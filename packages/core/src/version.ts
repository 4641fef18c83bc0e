import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The @slaw/core version, read from its package.json (works from src/ and dist/ alike). */
export const slawVersion: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../package.json', import.meta.url)), 'utf8')) as { version: string }
    return pkg.version
  } catch {
    return '0.0.0'
  }
})()
