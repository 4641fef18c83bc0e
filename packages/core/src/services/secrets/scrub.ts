/**
 * Replaces every occurrence of the given secret values in `text` with `[REDACTED]`: the values
 * as they are, and as they appear inside a JSON string (an agent printing its environment as
 * JSON escapes quotes, backslashes and newlines). Values under 4 characters are left alone: they
 * would blank out ordinary output, and are not secrets worth the name.
 */
export function scrubSecretValues(text: string, values: Iterable<string>): string {
  const forms = new Set<string>()
  for (const v of values) {
    if (v.length < 4) continue
    forms.add(v)
    const json = JSON.stringify(v).slice(1, -1)
    if (json !== v) forms.add(json)
  }
  if (!forms.size || !text) return text
  let out = text
  // Longest first: a value that contains another is replaced whole.
  for (const f of [...forms].sort((a, b) => b.length - a.length)) if (out.includes(f)) out = out.split(f).join('[REDACTED]')
  return out
}
