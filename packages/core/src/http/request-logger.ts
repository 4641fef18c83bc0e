import type { FastifyBaseLogger } from 'fastify'

type Bindings = Record<string, unknown>
type ChildOptions = Record<string, unknown>
/** fastify's logger type with what pino adds and this module relies on. */
type PinoLike = FastifyBaseLogger & { isLevelEnabled(level: string): boolean }
const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const
type Level = (typeof levels)[number]

/**
 * fastify gives every request its own child logger (`child({ reqId })`). With slaw's redaction
 * paths, pino runs those bindings through its redactor each time: about 6 KB allocated and ~1 % of
 * a small request's CPU (bench/RESULTS.md), for a logger most requests never write to, since the
 * access line is at debug. A request's logger here makes pino's child on the first line written
 * at an enabled level, and only then.
 */
class RequestLogger {
  #child: PinoLike | undefined
  constructor(
    private readonly parent: PinoLike,
    private readonly childBindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  /** pino's child for this request, made now if it was not yet. */
  private get real(): PinoLike {
    return (this.#child ??= this.parent.child(this.childBindings, this.options) as PinoLike)
  }

  /** Once made, the child decides (its level may have been changed through `level`). */
  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.parent).isLevelEnabled(level)
  }

  write(level: Level, args: unknown[]): void {
    if (this.isLevelEnabled(level)) (this.real[level] as (...a: unknown[]) => void)(...args)
  }

  get level(): string {
    return (this.#child ?? this.parent).level
  }
  set level(level: string) {
    this.real.level = level
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.real.child(bindings, options)
  }
  bindings(): Bindings {
    return (this.real as PinoLike & { bindings(): Bindings }).bindings()
  }
}
// One method per level, each writing through `write`.
for (const level of levels) {
  Object.defineProperty(RequestLogger.prototype, level, {
    value(this: RequestLogger, ...args: unknown[]) {
      this.write(level, args)
    },
  })
}

/**
 * fastify's `childLoggerFactory`: a lazy request logger when the parent is pino-like and the
 * route sets no level of its own; otherwise fastify's own behaviour (an eager child).
 */
export function lazyRequestLogger(logger: FastifyBaseLogger, bindings: Bindings, options: object): FastifyBaseLogger {
  const opts = options as ChildOptions
  if (typeof (logger as Partial<PinoLike>).isLevelEnabled !== 'function' || opts.level !== undefined) return logger.child(bindings, opts)
  return new RequestLogger(logger as PinoLike, bindings, opts) as unknown as FastifyBaseLogger
}
