import { isRecord } from './config-checks.js'

/** A line of a JSON event stream, or undefined for a line that is not a JSON object. */
export function jsonLine(line: string): Record<string, unknown> | undefined {
  const text = line.trim()
  if (!text.startsWith('{')) return undefined
  try {
    const value: unknown = JSON.parse(text)
    return isRecord(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** One event of a CLI's JSON-lines output: an object with a string `type`. */
export type JsonEvent = Record<string, unknown> & { type: string }

/**
 * What a CLI that prints JSON lines (`claude --output-format stream-json`, `codex exec --json`)
 * said, read line by line: blank lines are skipped, each event goes to `event()`, and any other
 * line is counted as garbage. Subclasses gather what their CLI's events say.
 */
export abstract class JsonEventStream {
  /** Events read. */
  events = 0
  /** Non-empty stdout lines that were not JSON events. */
  garbage = 0

  line(line: string): void {
    if (!line.trim()) return
    const event = jsonLine(line)
    if (!event || typeof event.type !== 'string') {
      this.garbage += 1
      return
    }
    this.events += 1
    this.event(event as JsonEvent)
  }

  protected abstract event(event: JsonEvent): void
}
