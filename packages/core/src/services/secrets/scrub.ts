/**
 * Replaces every occurrence of the given secret values in `text` with `[REDACTED]`: the values
 * as they are, and as they appear inside a JSON string (an agent printing its environment as
 * JSON escapes quotes, backslashes and newlines). Values under 4 characters are left alone: they
 * would blank out ordinary output, and are not secrets worth the name.
 */
export function scrubSecretValues(text: string, values: Iterable<string>): string {
  return replaceForms(text, secretForms(values))
}

/** The forms of the values that are scrubbed, longest first (a value that contains another is replaced whole). */
function secretForms(values: Iterable<string>): string[] {
  const forms = new Set<string>()
  for (const v of values) {
    if (v.length < 4) continue
    forms.add(v)
    const json = JSON.stringify(v).slice(1, -1)
    if (json !== v) forms.add(json)
  }
  return [...forms].sort((a, b) => b.length - a.length)
}

function replaceForms(text: string, forms: readonly string[]): string {
  if (!forms.length || !text) return text
  let out = text
  for (const f of forms) if (out.includes(f)) out = out.split(f).join('[REDACTED]')
  return out
}

/**
 * Scrubs a stream that arrives in chunks (a run's live stdout or stderr), where a value may be cut
 * across two chunks: the end of a chunk that could begin a value is held back until the next chunk
 * (or `flush()` at the end) shows whether it does. Output that cannot begin a value passes at once.
 */
export function streamScrubber(values: Iterable<string>): { push(text: string): string; flush(): string } {
  const forms = secretForms(values)
  let held = ''
  return {
    push(text) {
      if (!forms.length) return text
      const scrubbed = replaceForms(held + text, forms)
      const keep = heldBackLength(scrubbed, forms)
      held = scrubbed.slice(scrubbed.length - keep)
      return scrubbed.slice(0, scrubbed.length - keep)
    },
    flush() {
      const rest = held
      held = ''
      return rest
    },
  }
}

/** The length of the longest end of `text` that is the start of a form (but not a whole one: those are replaced). */
function heldBackLength(text: string, forms: readonly string[]): number {
  let longest = 0
  for (const f of forms) {
    for (let n = Math.min(f.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(f.slice(0, n))) {
        longest = n
        break
      }
    }
  }
  return longest
}
