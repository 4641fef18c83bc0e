import type { FastifyBaseLogger } from 'fastify'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>
type ChildOptions = Record<string, unknown>
/** What pino adds to fastify's logger type, and this module relies on. */
type PinoLike = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean }

/**
 * fastify gives every request its own child logger (`child({ reqId })`). With slaw's redaction
 * paths, pino runs those bindings through its redactor each time: about 6 KB allocated and ~1 % of
 * a small request's CPU (bench/RESULTS.md), for a logger most requests never write to, since the
 * access line is at debug. A request's logger here makes pino's child on the first line written
 * at an enabled level, and only then.
 */
class RequestLogger {
  #child: FastifyBaseLogger | undefined
  constructor(
    private readonly parent: PinoLike & { isLevelEnabled(level: string): boolean },
    private readonly childBindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** pino's child for this request, made now if it was not yet. */
  private get real(): FastifyBaseLogger {
    return (this.#child ??= this.parent.child(this.childBindings, this.options))
  }

  private write(level: Level, args: unknown[]): void {
    // Once made, the child decides (its level may have been changed through `level`).
    if (this.#child) (this.#child[level] as (...a: unknown[]) => void)(...args)
    else if (this.parent.isLevelEnabled(level)) (this.real[level] as (...a: unknown[]) => void)(...args)
  }

  get level(): string {
    return this.#child?.level ?? this.parent.level
  }
  set level(level: string) {
    this.real.level = level
  }
  isLevelEnabled(level: string): boolean {
    return this.#child ? (this.#child as PinoLike).isLevelEnabled?.(level) ?? true : this.parent.isLevelEnabled(level)
  }
  fatal(...args: unknown[]): void {
    this.write('fatal', args)
  }
  error(...args: unknown[]): void {
    this.write('error', args)
  }
  warn(...args: unknown[]): void {
    this.write('warn', args)
  }
  info(...args: unknown[]): void {
    this.write('info', args)
  }
  debug(...args: unknown[]): void {
    this.write('debug', args)
  }
  trace(...args: unknown[]): void {
    this.write('trace', args)
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.real.child(bindings, options)
  }
  bindings(): Bindings {
    return (this.real as FastifyBaseLogger & { bindings(): Bindings }).bindings()
  }
}

/**
 * fastify's `childLoggerFactory`: a lazy request logger when the parent is pino-like and the
 * route sets no level of its own; otherwise fastify's own behaviour (an eager child).
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  const parent = logger as PinoLike
  const opts = options as ChildOptions
  if (typeof parent.isLevelEnabled !== 'function' || opts.level !== undefined) return logger.child(bindings, opts)
  return new RequestLogger(parent as PinoLike & { isLevelEnabled(level: string): boolean }, bindings, opts) as unknown as FastifyBaseLogger
}
