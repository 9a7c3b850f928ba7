/**
 * How much work a backtracking regular expression can do against a URL of a given length, bounded
 * from above, before the engine is ever given it. A list's `/regex/` rule, or a `*` rule the engine
 * compiles to `.*`, runs in JavaScript's backtracking engine, which nothing can interrupt: one rule
 * such as `/^(.+)+!$/` or `a*a*a*a*a*a*a*a*a*a*!` holds the isolate, and every request on it, for
 * minutes. The URLs asked about are few and short, so the ways an expression can try to match
 * them are finite and can be counted: a rule with more than the budget is not run.
 */

/** Ways tried at most, per rule and URL: some milliseconds of matching at worst. */
export const MATCH_BUDGET = 1_000_000;

/** A count of ways to match; past the budget, only that it is past matters. */
type Ways = number;

/**
 * An upper bound on the ways `source` can be tried against one input of `length` characters:
 * each start position, times each way each part can match from there. `Infinity` past
 * {@link MATCH_BUDGET}, and for what it cannot bound: a backreference, or syntax it does not read.
 */
export function matchWays(source: string, length: number): Ways {
  const reader = new ExpressionReader(source, length);
  try {
    const { ways, anchored } = reader.alternatives();
    if (!reader.done()) return Infinity;
    return capped((anchored ? 1 : length + 1) * ways);
  } catch {
    return Infinity;
  }
}

/**
 * Thrown where the count cannot be bounded within the budget: a backreference, syntax not read,
 * or a count past the budget. The counts only grow as parts are added (each has at least one
 * way), so the reading stops there, and a hostile expression costs no more to read than one at
 * the budget.
 */
class Unbounded extends Error {}

/** What one part of an expression can do at one position. */
interface Atom {
  ways: Ways;
  /** Matches no character (`^`, `\b`, a lookaround), so it is never repeated. */
  assertion: boolean;
  /** Matches exactly one character (`a`, `.`, `[a-z]`, `\d`). */
  single: boolean;
}

const ONE_CHARACTER: Atom = { ways: 1, assertion: false, single: true };
const ASSERTION: Atom = { ways: 1, assertion: true, single: false };

interface Range {
  least: number;
  most: number;
}

/** A recursive-descent reader of JavaScript's pattern syntax (no `u` or `v` flag, as the engine compiles). */
class ExpressionReader {
  private at = 0;
  private readonly source: string;
  private readonly length: number;

  constructor(source: string, length: number) {
    this.source = source;
    this.length = length;
  }

  done(): boolean {
    return this.at === this.source.length;
  }

  /** `a|b|c`: the sum of each one's ways; anchored when every alternative starts with `^`. */
  alternatives(): { ways: Ways; anchored: boolean } {
    let ways = 0;
    let anchored = true;
    for (;;) {
      const sequence = this.sequence();
      ways = capped(ways + sequence.ways);
      anchored &&= sequence.anchored;
      if (this.source[this.at] !== "|") return { ways, anchored };
      this.at += 1;
    }
  }

  /**
   * `abc`: the product of each part's ways, except that a run of parts of one character each
   * (`a`, `.`, `[a-z]`, `\d`, each with any quantifier) is counted together: their repetitions
   * share the input, so `a.*b.*c` has as many ways as the input has splits in three, not each
   * `.*`'s ways multiplied.
   */
  private sequence(): { ways: Ways; anchored: boolean } {
    const anchored = this.source[this.at] === "^";
    let ways = 1;
    let run = new CharacterRun(this.length);
    while (!this.done() && this.source[this.at] !== "|" && this.source[this.at] !== ")") {
      const atom = this.atom();
      const range = this.quantifier();
      if (atom.single) {
        run.add(range ? Math.min(range.least, this.length + 1) : 1, range ? Math.min(range.most, this.length) : 1);
        continue;
      }
      ways = capped(ways * run.ways() * this.repeated(atom, range));
      run = new CharacterRun(this.length);
    }
    return { ways: capped(ways * run.ways()), anchored };
  }

  /** A part `x{m,n}` of more than one character: each count from m to n (at most the input's length) of its ways. */
  private repeated(atom: Atom, range: Range | undefined): Ways {
    if (!range) return atom.ways;
    if (atom.assertion) throw new Unbounded();
    const most = Math.min(range.most, this.length);
    if (most < range.least) return 1;
    if (atom.ways === 1) return most - range.least + 1;
    let ways = 0;
    for (let count = range.least; count <= most; count += 1) ways = capped(ways + atom.ways ** count);
    return ways;
  }

  private quantifier(): Range | undefined {
    const char = this.source[this.at];
    let range: Range | undefined;
    if (char === "*") range = { least: 0, most: Infinity };
    else if (char === "+") range = { least: 1, most: Infinity };
    else if (char === "?") range = { least: 0, most: 1 };
    else if (char === "{") {
      const braces = /^\{(\d{1,6})(,(\d{0,6}))?\}/.exec(this.source.slice(this.at));
      // Without the `u` flag, a `{` that opens no quantifier is a literal brace.
      if (!braces) return undefined;
      const least = Number(braces[1]);
      range = { least, most: braces[2] === undefined ? least : braces[3] === "" ? Infinity : Number(braces[3]) };
      this.at += braces[0].length - 1;
    }
    if (!range) return undefined;
    this.at += 1;
    if (this.source[this.at] === "?") this.at += 1;
    return range;
  }

  private atom(): Atom {
    const char = this.source[this.at]!;
    if (char === "^" || char === "$") {
      this.at += 1;
      return ASSERTION;
    }
    if (char === "[") return this.characterClass();
    if (char === "\\") return this.escape();
    if (char === "(") return this.group();
    if ("*+?".includes(char)) throw new Unbounded();
    this.at += 1;
    return ONE_CHARACTER;
  }

  /** `\d`, `\/`, `\x2f`: one character; `\b`: an assertion; a backreference (`\1`, `\k<name>`) has no bound here. */
  private escape(): Atom {
    const next = this.source[this.at + 1];
    if (next === undefined || /[1-9k]/.test(next)) throw new Unbounded();
    this.at += 2;
    return next === "b" || next === "B" ? ASSERTION : ONE_CHARACTER;
  }

  private characterClass(): Atom {
    this.at += 1;
    while (this.source[this.at] !== "]") {
      if (this.done()) throw new Unbounded();
      this.at += this.source[this.at] === "\\" ? 2 : 1;
    }
    this.at += 1;
    return ONE_CHARACTER;
  }

  /** `(…)`, `(?:…)`, `(?<name>…)`; a lookaround (`(?=…)`, `(?<!…)`) is an assertion, its ways still counted. */
  private group(): Atom {
    const opening = /^\((\?(:|=|!|<=|<!|<[A-Za-z_$][\w$]*>))?/.exec(this.source.slice(this.at))!;
    this.at += opening[0].length;
    const { ways } = this.alternatives();
    if (this.source[this.at] !== ")") throw new Unbounded();
    this.at += 1;
    return { ways, assertion: ["=", "!", "<=", "<!"].includes(opening[2] ?? ""), single: false };
  }
}

/**
 * Parts of one character each, in a row: the ways their repetition counts can be taken while
 * they consume at most the input's length in all, kept by the characters consumed.
 */
class CharacterRun {
  /** `byLength[n]`: the ways of the run so far that consume `n` characters, besides {@link fixed}. */
  private byLength: number[];
  /** Characters every way consumes: parts without a quantifier, counted without touching the table. */
  private fixed = 0;

  constructor(length: number) {
    this.byLength = Array.from({ length: length + 1 }, (_, consumed) => (consumed === 0 ? 1 : 0));
  }

  /** One more part, repeated from `least` to `most` times. */
  add(least: number, most: number): void {
    if (least === 1 && most === 1) {
      this.fixed += 1;
      return;
    }
    // The fixed characters so far shift every count, and what no longer fits the input goes.
    const shifted = this.byLength.map((_, consumed) => (consumed < this.fixed ? 0 : this.byLength[consumed - this.fixed]!));
    this.fixed = 0;
    const sums = [0];
    for (const ways of shifted) sums.push(capped(sums[sums.length - 1]! + ways));
    this.byLength = shifted.map((_, consumed) => {
      const from = Math.max(0, consumed - most);
      const to = consumed - least;
      return to < from ? 0 : sums[to + 1]! - sums[from]!;
    });
  }

  ways(): Ways {
    let ways = 0;
    for (let consumed = 0; consumed + this.fixed < this.byLength.length; consumed += 1) ways += this.byLength[consumed]!;
    return Math.max(1, capped(ways));
  }
}

/** A count past the budget ends the reading ({@link Unbounded}). */
function capped(ways: Ways): Ways {
  if (ways > MATCH_BUDGET) throw new Unbounded();
  return ways;
}
