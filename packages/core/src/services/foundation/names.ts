import { invalid } from '../../errors.js'

/**
 * Characters a display name may not hold: controls (Cc) and invisible format characters (Cf), which
 * include the bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069, U+200E/F, U+061C) and the
 * zero-width ones (U+200B–U+200D, U+2060, U+FEFF). With them a name can render as another
 * (`alice` + U+200B, or a right-to-left override) in mentions and UIs.
 */
const hidden = /[\p{Cc}\p{Cf}]/u

/** The trimmed name, or 400 `invalid_payload` at `path` (blank, or holding a hidden character). */
export function checkName(path: string, raw: string): string {
  const name = raw.trim()
  if (!name) throw invalid(path, 'name must not be blank')
  const found = hidden.exec(name)
  if (found) {
    const code = `U+${found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`
    throw invalid(path, `name must not contain invisible, control or text-direction characters (${code} at position ${found.index})`)
  }
  return name
}
