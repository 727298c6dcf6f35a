/**
 * JSON parsed from chunks of bytes (a run file read piece by piece), so that a run of 100,000
 * iterations per step never exists as one string beside its parsed tree: `JSON.parse` needs the
 * whole text (a 400 MB file is a 400–800 MB string) while the tree's numbers take 8 bytes each.
 *
 * The value built is the one `JSON.parse` of the UTF-8 text gives: the same numbers (each number's
 * text is read by `Number`, which rounds as `JSON.parse` does), strings (any string with an
 * escape, a control character or a non-ASCII byte is read by `JSON.parse` itself), key order, the
 * last of duplicate keys, and a `"__proto__"` key as an own property (never the prototype). Arrays
 * of numbers are built at their exact length with unboxed elements (8 bytes per value). Pure: no
 * I/O (client/runRead.ts feeds it a file's chunks).
 */

/** A JSON syntax error: what was found where (a byte offset from the start of the input). */
export class JsonStreamError extends SyntaxError {
  constructor(
    message: string,
    /** Byte offset of the problem from the start of the input. */
    readonly position: number,
  ) {
    super(message);
    this.name = 'JsonStreamError';
  }
}

/** What the parser may keep ({@link JsonStreamParser}); each bound absent: none. */
export interface JsonLimits {
  /** The most numbers anywhere in the value (8 bytes each in an array). */
  maxNumbers?: number;
  /** The most other values and object keys (strings, objects, arrays, true/false/null). */
  maxValues?: number;
  /** The most bytes of string text (keys included) in all; also the longest one string. */
  maxStringBytes?: number;
}

/** The input holds more than a {@link JsonLimits} bound allows: `what` ("numbers", "other values", "bytes of strings") and the bound. */
export class JsonLimitError extends RangeError {
  constructor(
    readonly what: 'numbers' | 'other values' | 'bytes of strings',
    readonly limit: number,
  ) {
    super(`more than ${limit} ${what}`);
    this.name = 'JsonLimitError';
  }
}

type Container = { obj: Record<string, unknown>; arr?: undefined; key: string | undefined } | { arr: unknown[] | undefined; obj?: undefined; nums: number };

// Byte codes.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;

/** What the parser expects next. */
const enum Want {
  /** A value (the top, after `:`, after `,` in an array, or the first of an array). */
  Value,
  /** A value or `]` (just after `[`). */
  ValueOrEnd,
  /** A key (after `,` in an object). */
  Key,
  /** A key or `}` (just after `{`). */
  KeyOrEnd,
  /** `:` after a key. */
  Colon,
  /** `,` or the end of the container; at the top, only whitespace. */
  After,
}

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isNumberByte = (c: number): boolean => isDigit(c) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;
/** The most bytes of a series of numbers read by one JSON.parse. */
const RUN_BYTES = 32 * 1024;
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * An incremental JSON parser: {@link push} each chunk of the input's bytes in order, then
 * {@link end} for the value. Memory: the tree being built, one scratch buffer as long as the
 * longest array of numbers so far, and at most one unfinished token carried between chunks.
 */
export class JsonStreamParser {
  private readonly stack: Container[] = [];
  private want: Want = Want.Value;
  private done = false;
  private result: unknown;
  /** Bytes of a token cut by the end of a chunk (a number, a string, a literal). */
  private carry: Buffer | undefined;
  /** Offset in the whole input of the current chunk's first byte. */
  private base = 0;
  /** The numbers of the innermost array while every element so far is a number. */
  private scratch = new Float64Array(1024);
  /** Numbers, other values (keys included) and bytes of string text kept so far. */
  private numbersKept = 0;
  private valuesKept = 0;
  private stringBytes = 0;
  private readonly maxNumbers: number;
  private readonly maxValues: number;
  private readonly maxStringBytes: number;

  /**
   * @param limits what the value may hold ({@link JsonLimits}): the tree's memory follows its
   *   numbers, values and string text, not the input's bytes (whitespace costs nothing), so these
   *   bound it; one more is a {@link JsonLimitError}
   */
  constructor(limits: JsonLimits = {}) {
    this.maxNumbers = limits.maxNumbers ?? Infinity;
    this.maxValues = limits.maxValues ?? Infinity;
    this.maxStringBytes = limits.maxStringBytes ?? Infinity;
  }

  /**
   * Parses the bytes of `chunk` (the next piece of the input).
   * @throws JsonStreamError at the first byte that cannot continue a JSON text; JsonLimitError past
   *   a bound of {@link JsonLimits}
   */
  push(chunk: Buffer): void {
    let buf = chunk;
    let start = this.base;
    if (this.carry) {
      buf = Buffer.concat([this.carry, chunk]);
      start -= this.carry.length;
      this.carry = undefined;
    }
    const used = this.scan(buf, start, false);
    if (used < buf.length) {
      // A token cut by the chunk is carried whole: a string longer than the bound stops here, not after copying it again and again.
      if (buf.length - used > this.maxStringBytes + 2) throw new JsonLimitError('bytes of strings', this.maxStringBytes);
      this.carry = Buffer.from(buf.subarray(used));
    }
    this.base += chunk.length;
  }

  /**
   * The parsed value, once the whole input has been pushed.
   * @throws JsonStreamError when the input ends inside a value, or holds no value
   */
  end(): unknown {
    if (this.carry) {
      const buf = this.carry;
      this.carry = undefined;
      this.scan(buf, this.base - buf.length, true);
    }
    if (!this.done) throw new JsonStreamError('Unexpected end of JSON input', this.base);
    return this.result;
  }

  private fail(what: string, at: number): never {
    throw new JsonStreamError(`${what} in JSON at position ${at}`, at);
  }

  /**
   * Consumes the tokens of `buf` (whose first byte is at `start` in the input).
   * @returns how many bytes were consumed: the rest is a token cut by the chunk's end (`last`: none is)
   */
  private scan(buf: Buffer, start: number, last: boolean): number {
    const n = buf.length;
    let i = 0;
    while (i < n) {
      const c = buf[i]!;
      if (isWs(c)) {
        i++;
        continue;
      }
      if (this.done) this.fail(`Unexpected non-whitespace character after JSON`, start + i);
      switch (this.want) {
        case Want.Colon:
          if (c !== COLON) this.fail(`Expected ':' after property name`, start + i);
          this.want = Want.Value;
          i++;
          continue;
        case Want.After: {
          const top = this.stack[this.stack.length - 1]!;
          if (c === COMMA) this.want = top.obj ? Want.Key : Want.Value;
          else if (c === (top.obj ? RBRACE : RBRACKET)) this.close();
          else this.fail(`Expected ',' or '${top.obj ? '}' : ']'}' after ${top.obj ? 'property value' : 'array element'}`, start + i);
          i++;
          continue;
        }
        case Want.Key:
        case Want.KeyOrEnd:
          if (c === RBRACE && this.want === Want.KeyOrEnd) {
            this.close();
            i++;
            continue;
          }
          if (c !== QUOTE) this.fail(`Expected double-quoted property name`, start + i);
          break;
        case Want.ValueOrEnd:
          if (c === RBRACKET) {
            this.close();
            i++;
            continue;
          }
          break;
        default:
          break;
      }
      // A token: a key or a value.
      if (c === QUOTE) {
        const endQuote = stringEnd(buf, i + 1);
        if (endQuote < 0) {
          if (last) this.fail('Unterminated string', start + n);
          return i;
        }
        this.stringBytes += endQuote - i - 1;
        if (this.stringBytes > this.maxStringBytes) throw new JsonLimitError('bytes of strings', this.maxStringBytes);
        if (++this.valuesKept > this.maxValues) throw new JsonLimitError('other values', this.maxValues);
        const text = stringValue(buf, i, endQuote, start);
        i = endQuote + 1;
        if (this.want === Want.Key || this.want === Want.KeyOrEnd) {
          (this.stack[this.stack.length - 1] as { key: string | undefined }).key = text;
          this.want = Want.Colon;
        } else this.value(text);
        continue;
      }
      if (c === LBRACE || c === LBRACKET) {
        this.open(c === LBRACE);
        i++;
        continue;
      }
      if (isNumberByte(c)) {
        // A series of numbers in an array (a run's samples): read by JSON.parse a chunk's worth at a time.
        const top = this.stack[this.stack.length - 1];
        if (top && !top.obj && top.arr === undefined) {
          const used = this.numberRun(buf, i, start, last);
          if (used < 0) return i;
          i = used;
          continue;
        }
        let j = i + 1;
        while (j < n && isNumberByte(buf[j]!)) j++;
        if (j === n && !last) return i;
        const text = buf.toString('latin1', i, j);
        if (!NUMBER.test(text)) this.fail(`Unexpected number '${text}'`, start + i);
        this.number(Number(text));
        i = j;
        continue;
      }
      if (c === 0x74 || c === 0x66 || c === 0x6e) {
        const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
        if (i + word.length > n) {
          if (!last) return i;
          this.fail(`Unexpected end of JSON input`, start + n);
        }
        if (buf.toString('latin1', i, i + word.length) !== word) this.fail(`Unexpected token '${String.fromCharCode(c)}'`, start + i);
        if (++this.valuesKept > this.maxValues) throw new JsonLimitError('other values', this.maxValues);
        this.value(c === 0x74 ? true : c === 0x66 ? false : null);
        i += word.length;
        continue;
      }
      this.fail(`Unexpected token '${c < 0x80 ? String.fromCharCode(c) : `\\x${c.toString(16)}`}'`, start + i);
    }
    return n;
  }

  /**
   * Reads the numbers of an all-number array from `i` (a number's first byte): the longest stretch
   * of number bytes, commas and whitespace, back to its last comma when the chunk cuts it (`last`:
   * nothing does), by `JSON.parse` (which checks each number's form and rounds it), into the
   * scratch buffer. A comma that ends the stretch is left for the caller (`[1,]` stays an error).
   * @returns the index after the numbers read, or -1 when the chunk ends inside the first one
   */
  private numberRun(buf: Buffer, i: number, start: number, last: boolean, limit = RUN_BYTES): number {
    const n = buf.length;
    // At most RUN_BYTES at a time: its text and array stay small objects, which V8 frees young.
    const stop = Math.min(n, i + limit);
    let j = i + 1;
    while (j < stop) {
      const b = buf[j]!;
      if (!(isNumberByte(b) || b === COMMA || isWs(b))) break;
      j++;
    }
    if (j === stop && (stop < n || !last)) {
      const comma = buf.lastIndexOf(COMMA, j - 1);
      if (comma > i) j = comma;
      else if (stop === n) return -1;
      else return this.numberRun(buf, i, start, last, n); // one number longer than RUN_BYTES
    }
    while (j > i && isWs(buf[j - 1]!)) j--;
    if (buf[j - 1] === COMMA) j--;
    let values: number[];
    try {
      values = JSON.parse(`[${buf.toString('latin1', i, j)}]`) as number[];
    } catch (e) {
      this.fail(`Unexpected number (${(e as Error).message})`, start + i);
    }
    for (const x of values) this.number(x);
    return j;
  }

  /** Opens an object or an array as the next value. */
  private open(object: boolean): void {
    if (++this.valuesKept > this.maxValues) throw new JsonLimitError('other values', this.maxValues);
    if (object) {
      const obj: Record<string, unknown> = {};
      this.value(obj, 'object');
      this.stack.push({ obj, key: undefined });
      this.want = Want.KeyOrEnd;
    } else {
      this.value(undefined, 'array');
      this.stack.push({ arr: undefined, nums: 0 });
      this.want = Want.ValueOrEnd;
    }
  }

  /** Ends the innermost container; an array still all numbers is made at its exact length. */
  private close(): void {
    const top = this.stack.pop()!;
    let made: unknown;
    if (!top.obj) {
      made = top.arr ?? this.numbers(top.nums);
      if (this.stack.length === 0) this.result = made;
      else this.attachArray(made as unknown[]);
    }
    this.want = Want.After;
    if (this.stack.length === 0) this.done = true;
  }

  /** The array just closed takes its place in its parent (arrays are attached when closed, objects when opened). */
  private attachArray(arr: unknown[]): void {
    const parent = this.stack[this.stack.length - 1]!;
    if (parent.obj) setKey(parent.obj, parent.key!, arr);
    else parent.arr![parent.arr!.length - 1] = arr;
  }

  /** The first `count` numbers of the scratch buffer as an array of exactly that length. */
  private numbers(count: number): number[] {
    const out = new Array<number>(count);
    const s = this.scratch;
    for (let k = 0; k < count; k++) out[k] = s[k]!;
    return out;
  }

  /** A number as the next value: kept in the scratch buffer while its array holds only numbers. */
  private number(x: number): void {
    if (++this.numbersKept > this.maxNumbers) throw new JsonLimitError('numbers', this.maxNumbers);
    const top = this.stack[this.stack.length - 1];
    if (top && !top.obj && top.arr === undefined) {
      if (top.nums === this.scratch.length) {
        const grown = new Float64Array(this.scratch.length * 2);
        grown.set(this.scratch);
        this.scratch = grown;
      }
      this.scratch[top.nums++] = x;
      this.want = Want.After;
      return;
    }
    this.value(x);
  }

  /**
   * `x` as the next value of the innermost container (or the whole input). `opening`: a container
   * is opening (the input is done only when it closes); an array's parent gets a placeholder now
   * and the array when it closes.
   */
  private value(x: unknown, opening?: 'object' | 'array'): void {
    const top = this.stack[this.stack.length - 1];
    const pendingArray = opening === 'array';
    this.want = Want.After;
    if (!top) {
      if (!pendingArray) this.result = x;
      if (!opening) this.done = true;
      return;
    }
    if (top.obj) {
      if (!pendingArray) setKey(top.obj, top.key!, x);
      return;
    }
    // The array so far was all numbers: from now on a plain array.
    if (top.arr === undefined) top.arr = this.numbers(top.nums);
    top.arr.push(pendingArray ? null : x);
  }
}

/** Sets `key` as `JSON.parse` does: an own data property, `"__proto__"` included. */
function setKey(obj: Record<string, unknown>, key: string, x: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value: x, writable: true, enumerable: true, configurable: true });
  else obj[key] = x;
}

/** Index of the quote that ends the string whose text starts at `from`, or -1 when the chunk ends first. */
function stringEnd(buf: Buffer, from: number): number {
  let j = from;
  for (;;) {
    const q = buf.indexOf(QUOTE, j);
    if (q < 0) return -1;
    // The quote is escaped when an odd number of backslashes precede it.
    let k = q - 1;
    while (k >= from && buf[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q;
    j = q + 1;
  }
}

/** The string between the quotes at `open` and `close`: plain ASCII read directly, anything else by JSON.parse. */
function stringValue(buf: Buffer, open: number, close: number, start: number): string {
  for (let k = open + 1; k < close; k++) {
    const b = buf[k]!;
    if (b < 0x20 || b >= 0x80 || b === BACKSLASH) {
      try {
        return JSON.parse(buf.toString('utf8', open, close + 1)) as string;
      } catch (e) {
        throw new JsonStreamError(`Bad string in JSON at position ${start + open} (${(e as Error).message})`, start + open);
      }
    }
  }
  return buf.toString('latin1', open + 1, close);
}
