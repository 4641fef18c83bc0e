import t from 'tap'
import { OutputTail } from '../src/output-tail.js'

t.test('memory stays bounded however much is written', async (t) => {
  const tail = new OutputTail(64 * 1024)
  const chunk = Buffer.alloc(16 * 1024, 'a')
  let most = 0
  for (let i = 0; i < 6400; i++) {
    tail.write(chunk) // 100 MiB in all
    most = Math.max(most, tail.retained)
  }
  tail.write('the end\n')
  t.equal(tail.total, 6400 * 16 * 1024 + 8)
  t.ok(most < 64 * 1024 + chunk.length, `never more than the limit plus one chunk held (${most})`)
  const text = tail.text()
  t.equal(Buffer.byteLength(text), 64 * 1024, 'the text is the last 64 KiB')
  t.equal(text.slice(-12), 'aaaathe end\n', 'ending with what was written last')
})

t.test('a chunk larger than the limit keeps its end', async (t) => {
  const tail = new OutputTail(10)
  tail.write('0123456789abcdefghij')
  t.equal(tail.text(), 'abcdefghij')
  t.equal(tail.retained, 10)
})

t.test('a character cut in half at the start is dropped, not mangled', async (t) => {
  const tail = new OutputTail(4)
  tail.write('aé✓') // 1 + 2 + 3 bytes: the last 4 start inside é
  t.equal(tail.text(), '✓')
  const small = new OutputTail(100)
  small.write('ünï')
  t.equal(small.text(), 'ünï', 'nothing is dropped when nothing was cut')
})
