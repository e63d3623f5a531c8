// Where JSON values begin and end, in a text or in a stream that arrives in
// pieces (a gateway stream's body), found without parsing them: parseValue
// (jsonpb.mjs) checks their syntax. Go decodes one value from a body and
// ignores what follows; the streaming endpoints read values one after
// another, concatenated or whitespace-separated.
//
// A scan keeps its state (inside a string, an escape, the nesting depth)
// between pieces, so each character is looked at once however the stream is
// cut: rescanning the value in progress after every piece made a body sent a
// byte at a time cost the square of its length.

const isSpace = (c) => c === 32 || c === 9 || c === 10 || c === 13;
// {}[],:" end a bare literal (a number, true, false, null).
const isStructural = (c) => c === 123 || c === 125 || c === 91 || c === 93 || c === 44 || c === 58 || c === 34;

const LITERAL = 1;
const NESTED = 2; // an object, an array or a string

/** One scan over the values of a text or a stream, a piece at a time. */
export class ValueScan {
  /** Characters looked at so far (the tests check each is looked at once). */
  scanned = 0;
  #kind = 0; // 0: between values, or LITERAL, NESTED
  #depth = 0;
  #inString = false;
  #escaped = false;

  /** A value has begun and not ended. */
  get inValue() {
    return this.#kind !== 0;
  }

  /** A bare literal has begun and not ended (the end of the input ends it). */
  get inLiteral() {
    return this.#kind === LITERAL;
  }

  /**
   * Scans `text` from `i` on: `start`, where the value in progress is in
   * `text` (`i` if it began in an earlier piece; `text.length` if only
   * whitespace is left), and `end`, just past its end, or -1 if `text` ends
   * first.
   */
  step(text, i) {
    const n = text.length;
    if (this.#kind === 0) {
      const from = i;
      while (i < n && isSpace(text.charCodeAt(i))) i++;
      this.scanned += i - from;
      if (i === n) return { start: n, end: -1 };
      const c = text.charCodeAt(i);
      if (c === 123 || c === 91 || c === 34) {
        this.#kind = NESTED;
        this.#depth = 0;
        this.#inString = false;
        this.#escaped = false;
      } else if (isStructural(c)) {
        // A stray } ] , or : is a value of its own (parseValue refuses it).
        this.scanned++;
        return { start: i, end: i + 1 };
      } else this.#kind = LITERAL;
    }
    const start = i;
    let end = -1;
    if (this.#kind === LITERAL) {
      while (i < n && !isSpace(text.charCodeAt(i)) && !isStructural(text.charCodeAt(i))) i++;
      if (i < n) end = i;
    } else {
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (this.#escaped) this.#escaped = false;
        else if (this.#inString) {
          if (c === 92) this.#escaped = true;
          else if (c === 34) {
            this.#inString = false;
            if (this.#depth === 0) {
              end = i + 1;
              break;
            }
          }
        } else if (c === 34) this.#inString = true;
        else if (c === 123 || c === 91) this.#depth++;
        else if ((c === 125 || c === 93) && --this.#depth <= 0) {
          end = i + 1;
          break;
        }
      }
    }
    this.scanned += (end === -1 ? n : end) - start;
    if (end !== -1) this.#kind = 0;
    return { start, end };
  }

  /** The input ended: a literal in progress ends with it. */
  end() {
    if (this.#kind === LITERAL) this.#kind = 0;
  }
}

/**
 * The span of the JSON value starting at or after `i` in `text`, as
 * [start, end]; null if only whitespace is left; "partial" if the value is
 * not complete yet (with `final`, the text is all there is, so a literal
 * may end it).
 */
export function scanValue(text, i = 0, final = false) {
  const scan = new ValueScan();
  const { start, end } = scan.step(text, i);
  if (end !== -1) return [start, end];
  if (!scan.inValue) return null;
  return final && scan.inLiteral ? [start, text.length] : "partial";
}

/** The values of a stream, as text, each handed on once its last piece came. */
export class JsonStream {
  #scan = new ValueScan();
  // The value in progress, as far as earlier pieces hold it.
  #held = "";

  /** Characters looked at so far. */
  get scanned() {
    return this.#scan.scanned;
  }

  /** The length of the value in progress so far (0 between values). */
  get pending() {
    return this.#held.length;
  }

  /** A value other than a literal is cut off if the stream ends now. */
  get unfinished() {
    return this.#scan.inValue && !this.#scan.inLiteral;
  }

  /** The texts of the values `piece` completes, in order. */
  push(piece) {
    const out = [];
    for (let i = 0; i < piece.length; ) {
      const { start, end } = this.#scan.step(piece, i);
      if (end === -1) {
        if (this.#scan.inValue) this.#held += piece.slice(start);
        break;
      }
      out.push(this.#held + piece.slice(start, end));
      this.#held = "";
      i = end;
    }
    return out;
  }

  /** The stream ended: the text of the literal it ends, or null. */
  end() {
    if (!this.#scan.inLiteral) return null;
    this.#scan.end();
    const last = this.#held;
    this.#held = "";
    return last;
  }
}
