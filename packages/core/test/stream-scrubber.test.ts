import t from 'tap'
import { streamScrubber } from '../src/services/secrets/scrub.js'

t.test('a value cut anywhere across chunks is replaced; other output passes at once', async (t) => {
  const value = 'abcd-secret-1234'
  for (let cut = 1; cut < value.length; cut++) {
    const s = streamScrubber([value])
    const out = s.push(`x ${value.slice(0, cut)}`) + s.push(`${value.slice(cut)} y`) + s.flush()
    t.equal(out, 'x [REDACTED] y', `cut after ${cut} characters`)
  }
  const s = streamScrubber([value])
  t.equal(s.push('plain output\n'), 'plain output\n', 'output that cannot begin a value is not held')
  t.equal(s.push('ends with abc'), 'ends with ', 'a possible start of the value is held back')
  t.equal(s.push('XYZ'), 'abcXYZ', 'and released once the next chunk shows it was not one')
  t.equal(s.push('abcd-sec'), '', 'a longer possible start is held whole')
  t.equal(s.flush(), 'abcd-sec', 'flush releases what is held at the end')
  t.equal(s.flush(), '', 'once')
})

t.test('three chunks, JSON-escaped forms, and no values', async (t) => {
  const value = 'pa"ss-word-77'
  const s = streamScrubber([value])
  const json = JSON.stringify(value).slice(1, -1)
  const out = s.push(`{"p":"${json.slice(0, 3)}`) + s.push(json.slice(3, 8)) + s.push(`${json.slice(8)}"}`) + s.flush()
  t.equal(out, '{"p":"[REDACTED]"}')
  const none = streamScrubber(['abc'])
  t.equal(none.push('abc'), 'abc', 'values under 4 characters are not scrubbed, nor held')
})
