//! A fast, hand-written scanner for the identity fields of one JSON object.
//!
//! Why by hand: on the watch hot path the cache needs only `kind`, `apiVersion` and a few
//! `metadata` fields of a ~4.4 KB object, but the whole object must still be checked. A serde
//! derive spends most of its time skipping the uninteresting fields byte by byte.
//!
//! How: in two stages, like simdjson, but lazily and without allocating.
//!
//! * **Stage 1** classifies the input 64 bytes at a time into bitmasks (bit `j` of block `k` is
//!   byte `64k + j`): quotes, backslashes, `{}[],:` and whitespace — with AVX2 when the CPU has
//!   it (detected at run time), else eight bytes at a time in plain integer code (SWAR); both
//!   give the same masks. From those it derives the escaped bytes (those after an odd run of
//!   backslashes), the unescaped quotes, the bytes inside strings (a prefix XOR of the unescaped
//!   quotes) and the **structurals**: `{}[],:` outside strings, opening quotes, and the first
//!   byte of every other run of non-whitespace outside strings (a literal, a number, or garbage).
//!   State crosses block boundaries in three carries (escape, in-string, in-scalar). It also
//!   checks every escape inside a string (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, and
//!   `\uXXXX` with surrogates paired) and gives no structurals from the first bad one on.
//!   Blocks are classified eight at a time (so that the CPU overlaps them), on demand as the walk
//!   moves forward, into a fixed buffer: a scan that fails early stops early.
//! * **Stage 2** walks the grammar over the structurals only, so whitespace and the insides of
//!   strings cost nothing: skipping a string is taking one token. It checks that the tokens form
//!   exactly one object followed by nothing but whitespace, with balanced, correctly separated
//!   containers nested at most 512 deep; that each literal is spelled right and each number is
//!   made of number characters (starting with `-` or a digit and ending with a digit); and that
//!   a literal or number is followed by whitespace, a structural character or the end. The
//!   identity fields (and the keys of the top-level and `metadata` objects) are extracted as they
//!   are met: their closing quote is the next unescaped quote, their escapes (and surrogate
//!   pairs) are decoded and they are UTF-8 checked.
//!
//! What it does not check: skipped strings are not checked for raw control characters or UTF-8,
//! and number shapes are only checked roughly (as above). The typed decode (`Object::get`) checks
//! them if that part of the object is ever read. Errors say where (a byte offset, which may point
//! a little past the first bad byte) and whether the input ended before the object did (`eof`,
//! set for every strict prefix of a valid object: the watch decoder then waits for more bytes).
//! The scanner never panics on any input (property-tested against serde_json, with both kernels).

use std::borrow::Cow;

use super::head::{CowStr, FieldsV1Spans, MetaHead, ObjectHead, StrPairs};

const MAX_DEPTH: usize = 512;

/// Why a scan failed; the byte offset is where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanError {
    pub offset: usize,
    pub what: &'static str,
    /// The input ended before the object did.
    pub eof: bool,
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

// ---------------------------------------------------------------------------------------------
// Stage 1: byte classes of 64-byte blocks.

/// The raw byte classes of one block (bit `j` for byte `j`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Classes {
    quotes: u64,
    backslashes: u64,
    /// The bytes that are `{`, `}`, `,` or `:` once bit 5 is set: `{}[],:`, and also the control
    /// characters form feed (as `,`) and SUB (as `:`), which makes the AVX2 lookup one shuffle.
    /// That is harmless: those two are invalid outside strings anyway, and the walk checks each
    /// structural's actual byte (and the byte after each literal or number).
    ops: u64,
    /// Space, tab, CR and LF.
    space: u64,
}

/// How a block's [`Classes`] are computed. Both kernels give identical results (tested).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// Eight bytes at a time in plain integer code (any CPU).
    Swar,
    /// 32 bytes at a time with AVX2 (and BMI1 and PCLMULQDQ). Only constructed by
    /// [`Kernel::detect`] and `Kernel::available` (tests), after checking at run time that the CPU has
    /// those features: the `avx2` functions are sound to call only then.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

#[allow(unsafe_code)]
#[warn(clippy::undocumented_unsafe_blocks)]
impl Kernel {
    /// The fastest kernel this CPU runs.
    #[inline]
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        if avx2::detect() {
            return Kernel::Avx2;
        }
        Kernel::Swar
    }

    /// Every kernel this CPU runs (the tests compare them).
    #[cfg(test)]
    fn available() -> Vec<Kernel> {
        let mut all = vec![Kernel::Swar];
        #[cfg(target_arch = "x86_64")]
        if avx2::detect() {
            all.push(Kernel::Avx2);
        }
        all
    }

    /// Stage 1 for the blocks of `b` from block `first` on, as many as fit in `out` (fewer at the
    /// end of the input); returns how many.
    #[inline]
    fn blocks(self, b: &[u8], first: usize, carry: &mut Carry, out: &mut [Block; BATCH]) -> usize {
        match self {
            Kernel::Swar => {
                blocks(b, first, carry, out, |block, carry| stage1(swar::classify(block), carry, prefix_xor))
            }
            // SAFETY: `Avx2` only exists when the CPU has the features `avx2::blocks` is compiled
            // for (see the variant).
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { avx2::blocks(b, first, carry, out) },
        }
    }

    #[cfg(test)]
    fn classify(self, b: &[u8; 64]) -> Classes {
        match self {
            Kernel::Swar => swar::classify(b),
            // SAFETY: as in `blocks`.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { avx2::classify(b) },
        }
    }
}

/// The portable kernel: each 8-byte word compared at once (SWAR).
mod swar {
    use super::Classes;

    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;

    /// The high bit of each byte of `w` that equals `c`. Exact: no carry crosses a byte.
    #[inline(always)]
    fn eq(w: u64, c: u8) -> u64 {
        let x = w ^ (ONES * c as u64);
        !(((x & LOW7) + LOW7) | x | LOW7)
    }

    /// Packs the high bits of the eight bytes into bits 0..8 (byte `j` → bit `j`): each lands in
    /// the top byte of the product at its own position, and no two partial products overlap.
    #[inline(always)]
    fn pack(high_bits: u64) -> u64 {
        (high_bits >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56
    }

    pub(super) fn classify(b: &[u8; 64]) -> Classes {
        let mut c = Classes::default();
        for (j, w) in b.as_chunks::<8>().0.iter().enumerate() {
            let w = u64::from_le_bytes(*w);
            let shift = 8 * j as u32;
            // See `Classes::ops`.
            let b5 = w | (ONES * 0x20);
            c.quotes |= pack(eq(w, b'"')) << shift;
            c.backslashes |= pack(eq(w, b'\\')) << shift;
            c.ops |= pack(eq(b5, b'{') | eq(b5, b'}') | eq(b5, b',') | eq(b5, b':')) << shift;
            c.space |= pack(eq(w, b' ') | eq(w, b'\n') | eq(w, b'\r') | eq(w, b'\t')) << shift;
        }
        c
    }
}

/// The AVX2 kernel. Callers must make sure the CPU has the features (see [`detect`](avx2::detect)).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[warn(clippy::undocumented_unsafe_blocks)]
mod avx2 {
    use std::arch::is_x86_feature_detected;
    use std::arch::x86_64::{
        __m256i, _mm_clmulepi64_si128, _mm_cvtsi128_si64, _mm_set_epi64x, _mm_set1_epi8, _mm256_cmpeq_epi8,
        _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_or_si256, _mm256_set1_epi8, _mm256_setr_epi8,
        _mm256_shuffle_epi8,
    };

    use super::{BATCH, Block, Carry, Classes};

    /// Bit `j` set where byte `j` of `m` is all ones.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn bits(m: __m256i) -> u64 {
        _mm256_movemask_epi8(m) as u32 as u64
    }

    /// The classes of 32 bytes (in the low half of each field).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn half(v: __m256i) -> Classes {
        let eq = |c: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(c as i8));
        // A byte is in a class when looking its low nibble up in a table (the shuffle; it gives 0
        // for bytes with the high bit set) gives back the byte itself (whitespace) or the byte
        // with bit 5 set (ops; see `Classes::ops`). Both tables hold bytes with distinct low
        // nibbles, and 0 elsewhere.
        let table = |t: [u8; 16]| {
            let t = t.map(|b| b as i8);
            _mm256_setr_epi8(
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15],
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13], t[14], t[15],
            )
        };
        let space = table([b' ', 0, 0, 0, 0, 0, 0, 0, 0, b'\t', b'\n', 0, 0, b'\r', 0, 0]);
        let ops = table([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b':', b'{', b',', b'}', 0, 0]);
        let space = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(space, v), v);
        let ops = _mm256_cmpeq_epi8(_mm256_shuffle_epi8(ops, v), _mm256_or_si256(v, _mm256_set1_epi8(0x20)));
        Classes { quotes: bits(eq(b'"')), backslashes: bits(eq(b'\\')), ops: bits(ops), space: bits(space) }
    }

    /// Whether the CPU has everything [`blocks`] is compiled for.
    pub(super) fn detect() -> bool {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("bmi1") && is_x86_feature_detected!("pclmulqdq")
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn classify(b: &[u8; 64]) -> Classes {
        let p = b.as_ptr().cast::<__m256i>();
        // SAFETY: the two unaligned 32-byte loads read bytes 0..32 and 32..64 of `b`.
        let (lo, hi) = unsafe { (half(_mm256_loadu_si256(p)), half(_mm256_loadu_si256(p.add(1)))) };
        Classes {
            quotes: lo.quotes | hi.quotes << 32,
            backslashes: lo.backslashes | hi.backslashes << 32,
            ops: lo.ops | hi.ops << 32,
            space: lo.space | hi.space << 32,
        }
    }

    /// The prefix XOR as a carry-less multiplication by all ones.
    #[target_feature(enable = "pclmulqdq")]
    #[inline]
    fn prefix_xor(x: u64) -> u64 {
        let product = _mm_clmulepi64_si128::<0>(_mm_set_epi64x(0, x as i64), _mm_set1_epi8(-1));
        _mm_cvtsi128_si64(product) as u64
    }

    /// [`Kernel::blocks`](super::Kernel::blocks), compiled with AVX2, BMI1 and PCLMULQDQ.
    #[target_feature(enable = "avx2,bmi1,pclmulqdq")]
    pub(super) fn blocks(b: &[u8], first: usize, carry: &mut Carry, out: &mut [Block; BATCH]) -> usize {
        super::blocks(b, first, carry, out, |block, carry| super::stage1(classify(block), carry, |x| prefix_xor(x)))
    }
}

/// Bytes 0, 2, 4, … of a block.
const EVEN: u64 = 0x5555_5555_5555_5555;

/// The backslashes of a block that escape the byte after them, given all its backslashes and
/// whether its first byte is escaped by the block before (`carry`); and whether the first byte
/// of the next block is escaped.
///
/// In a maximal run of backslashes beginning at byte `s` (one not itself escaped), the
/// backslashes at `s`, `s + 2`, … each escape the byte after them.
#[inline]
fn escapers(backslashes: u64, carry: bool) -> (u64, bool) {
    let bs = backslashes & !(carry as u64); // an escaped backslash escapes nothing
    let run_starts = bs & !(bs << 1);
    // Adding a run's first bit to `bs` clears the whole run (the carry ripples out past its end,
    // which is not a backslash), so the cleared bits are the runs that begin on an even byte.
    let even_runs = bs & !bs.wrapping_add(run_starts & EVEN);
    let escapers = (even_runs & EVEN) | (bs & !even_runs & !EVEN);
    (escapers, escapers >> 63 != 0)
}

/// Bit `j` is the XOR of bits `0..=j`: turns opening/closing quotes into "inside a string" (the
/// opening quote included, the closing one not).
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// Stage 1's view of one block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Block {
    structurals: u64,
    /// Unescaped quotes (opening and closing).
    quotes: u64,
    /// Backslashes inside strings that escape the next byte.
    escapes: u64,
}

/// How many blocks stage 1 classifies at once. One at a time, stage 1 is bound by its latency (a
/// few dozen cycles a block); a batch lets the CPU overlap the blocks.
const BATCH: usize = 8;

/// Runs `block` (stage 1 for one block) over the blocks of `b` from block `first` on, as many as
/// fit in `out`; returns how many. The last block is padded with whitespace.
#[inline(always)]
fn blocks(
    b: &[u8],
    first: usize,
    carry: &mut Carry,
    out: &mut [Block; BATCH],
    block: impl Fn(&[u8; 64], &mut Carry) -> Block,
) -> usize {
    let mut c = *carry;
    let mut n = 0;
    for (o, k) in out.iter_mut().zip(first..) {
        let rest = b.get(k * 64..).unwrap_or_default();
        *o = match rest.first_chunk::<64>() {
            Some(full) => block(full, &mut c),
            None if rest.is_empty() => break,
            None => {
                let mut padded = [b' '; 64];
                padded[..rest.len()].copy_from_slice(rest);
                block(&padded, &mut c)
            }
        };
        n += 1;
    }
    *carry = c;
    n
}

/// What one block hands to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Carry {
    /// The next block's first byte is escaped.
    escaped: bool,
    /// All ones when the block ended inside a string.
    in_string: u64,
    /// 1 when the block ended inside a literal, number or garbage (anything else outside strings
    /// that is not whitespace or `{}[],:`).
    scalar: u64,
}

/// Derives a block's structurals from its byte classes and the previous block's carry.
#[inline(always)]
fn stage1(c: Classes, carry: &mut Carry, prefix_xor: impl FnOnce(u64) -> u64) -> Block {
    let (escapers, escaped_carry) =
        if c.backslashes == 0 && !carry.escaped { (0, false) } else { escapers(c.backslashes, carry.escaped) };
    let escaped = (escapers << 1) | carry.escaped as u64;
    let quotes = c.quotes & !escaped;
    let in_string = prefix_xor(quotes) ^ carry.in_string;
    // Outside strings, not whitespace, not `{}[],:` and not a (closing) quote.
    let scalar = !(c.space | c.ops | quotes | in_string);
    let structurals = (c.ops & !in_string) | (quotes & in_string) | (scalar & !((scalar << 1) | carry.scalar));
    *carry = Carry { escaped: escaped_carry, in_string: ((in_string as i64) >> 63) as u64, scalar: scalar >> 63 };
    Block { structurals, quotes, escapes: escapers & in_string }
}

/// The 64 bytes of the block at `base` (whitespace-padded past the end of the input).
#[inline]
fn block_bytes<'t>(b: &'t [u8], base: usize, tail: &'t mut [u8; 64]) -> &'t [u8; 64] {
    let rest = b.get(base..).unwrap_or_default();
    match rest.first_chunk::<64>() {
        Some(block) => block,
        None => {
            let n = rest.len().min(64);
            tail[..n].copy_from_slice(&rest[..n]);
            tail[n..].fill(b' ');
            tail
        }
    }
}

/// Whether `s` is ASCII: like `<[u8]>::is_ascii`, but with a few overlapping word reads for short
/// strings (keys) instead of a byte loop.
#[inline]
fn is_ascii(s: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let any = if let Some(last) = s.last_chunk::<8>() {
        let (words, _) = s.as_chunks::<8>();
        words.iter().fold(u64::from_le_bytes(*last), |a, w| a | u64::from_le_bytes(*w))
    } else if let (Some(first), Some(last)) = (s.first_chunk::<4>(), s.last_chunk::<4>()) {
        u64::from(u32::from_le_bytes(*first) | u32::from_le_bytes(*last))
    } else {
        s.iter().fold(0, |a, &b| a | u64::from(b))
    };
    any & HIGH == 0
}

/// Whether a byte may follow a literal or a number.
#[inline]
fn ends_scalar(c: Option<&u8>) -> bool {
    c.is_none_or(|c| matches!(c, b' ' | b'\n' | b'\r' | b'\t' | b',' | b':' | b'[' | b']' | b'{' | b'}' | b'"'))
}

// ---------------------------------------------------------------------------------------------
// Stage 2: the grammar walk over structurals.

/// Stage 2's state: the input, the token cursor, and stage 1's output around it.
pub(super) struct Scanner<'a> {
    b: &'a [u8],
    /// Where the last token taken is (the input's length once they are all taken).
    pub(super) i: usize,
    kernel: Kernel,
    /// Stage 1's output for a batch of blocks: `batch_len` of them from block `batch_first` on.
    batch: [Block; BATCH],
    batch_first: usize,
    batch_len: usize,
    /// The current block's index in the batch.
    batch_at: usize,
    /// The current block's first byte.
    base: usize,
    /// Its structurals not taken yet.
    bits: u64,
    /// Its unescaped quotes.
    quotes: u64,
    /// Its escaping backslashes inside strings.
    escapes: u64,
    carry: Carry,
    /// A low-surrogate escape here was checked with the high one before it.
    paired: usize,
    /// Where stage 1 found a bad escape (`usize::MAX`: nowhere yet); no structural is given from
    /// there on.
    stop: usize,
    /// What was wrong there.
    stop_what: &'static str,
    /// Numbers are checked exactly against JSON's grammar (the typed decoder, [`super::de`]),
    /// not roughly (the head scan).
    strict: bool,
}

type R<T> = Result<T, ScanError>;

impl<'a> Scanner<'a> {
    fn new(b: &'a [u8]) -> Self {
        Self::with_kernel(b, Kernel::detect())
    }

    fn with_kernel(b: &'a [u8], kernel: Kernel) -> Self {
        Scanner {
            b,
            i: 0,
            kernel,
            batch: [Block::default(); BATCH],
            batch_first: 0,
            batch_len: 0,
            batch_at: 0,
            base: usize::MAX,
            bits: 0,
            quotes: 0,
            escapes: 0,
            carry: Carry::default(),
            paired: usize::MAX,
            stop: usize::MAX,
            stop_what: "",
            strict: false,
        }
    }

    /// A scanner for the typed decoder: numbers are checked exactly, also in skipped values.
    pub(super) fn strict(b: &'a [u8]) -> Self {
        Scanner { strict: true, ..Self::new(b) }
    }

    #[cold]
    fn err<T>(&self, what: &'static str) -> R<T> {
        if self.i >= self.stop {
            return Err(ScanError { offset: self.stop, what: self.stop_what, eof: false });
        }
        Err(ScanError { offset: self.i, what, eof: self.i >= self.b.len() })
    }

    /// Moves to the next block; false at the end of the input (or at a bad escape).
    #[inline]
    fn next_block(&mut self) -> bool {
        if self.batch_at + 1 < self.batch_len {
            self.batch_at += 1;
        } else if !self.refill() {
            return false;
        }
        let block = self.batch[self.batch_at];
        self.base = (self.batch_first + self.batch_at) * 64;
        self.bits = block.structurals;
        self.quotes = block.quotes;
        self.escapes = block.escapes;
        true
    }

    /// Moves to the next block if it is in the batch, has structurals and is a full block of the
    /// input (the common case, kept small to inline); returns its structurals and bytes.
    #[inline(always)]
    fn next_full_block(&mut self) -> Option<(u64, &'a [u8; 64])> {
        let j = self.batch_at + 1;
        if j >= self.batch_len {
            return None;
        }
        let next = *self.batch.get(j)?;
        if next.structurals == 0 {
            return None;
        }
        let base = self.base + 64;
        let bytes = self.b.get(base..).and_then(<[u8]>::first_chunk::<64>)?;
        (self.batch_at, self.base, self.quotes, self.escapes) = (j, base, next.quotes, next.escapes);
        Some((next.structurals, bytes))
    }

    /// Runs stage 1 on the next batch of blocks; false at the end of the input (or at a bad
    /// escape).
    #[inline(never)]
    fn refill(&mut self) -> bool {
        if self.stop != usize::MAX {
            return false;
        }
        let first = self.batch_first + self.batch_len;
        let n = self.kernel.blocks(self.b, first, &mut self.carry, &mut self.batch);
        if n == 0 {
            return false;
        }
        (self.batch_first, self.batch_len, self.batch_at) = (first, n, 0);
        for j in 0..n {
            let escapes = self.batch[j].escapes;
            if escapes != 0 && self.check_escapes(first + j, escapes) {
                // Nothing from the bad escape on.
                self.batch[j].structurals &= (1 << (self.stop % 64)) - 1;
                self.batch_len = j + 1;
                break;
            }
        }
        true
    }

    /// Checks the escapes starting in block `k` (their backslashes); at the first bad one, records
    /// it in `stop` and returns true.
    #[inline(never)]
    fn check_escapes(&mut self, k: usize, mut escapes: u64) -> bool {
        while escapes != 0 {
            let p = k * 64 + escapes.trailing_zeros() as usize;
            escapes &= escapes - 1;
            if p == self.paired {
                continue;
            }
            if let Err(what) = self.check_escape(p) {
                self.stop = p;
                self.stop_what = what;
                return true;
            }
        }
        false
    }

    /// Checks the escape whose backslash is at `p`. One cut short by the end of the input is not
    /// an error here: its string is unterminated, which the walk reports as the end of input.
    fn check_escape(&mut self, p: usize) -> Result<(), &'static str> {
        let b = self.b;
        match b.get(p + 1) {
            None | Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(()),
            Some(b'u') => {
                let Some(hi) = hex4(b, p + 2)? else { return Ok(()) };
                if (0xDC00..0xE000).contains(&hi) {
                    return Err("lone surrogate");
                }
                if !(0xD800..0xDC00).contains(&hi) {
                    return Ok(());
                }
                // A high surrogate must be followed by an escaped low surrogate.
                match (b.get(p + 6), b.get(p + 7)) {
                    (Some(b'\\'), Some(b'u')) => {}
                    (None, _) | (Some(b'\\'), None) => return Ok(()),
                    _ => return Err("lone surrogate"),
                }
                let Some(lo) = hex4(b, p + 8)? else { return Ok(()) };
                if !(0xDC00..0xE000).contains(&lo) {
                    return Err("invalid surrogate pair");
                }
                self.paired = p + 6;
                Ok(())
            }
            Some(_) => Err("invalid escape"),
        }
    }

    /// Takes the next structural: returns its byte and leaves `self.i` at it. At the end of the
    /// input returns 0 with `self.i` at the end (a NUL byte in the input is a structural too, but
    /// before the end); at a bad escape returns 0 with `self.i` there.
    #[inline(always)]
    pub(super) fn tok(&mut self) -> u8 {
        if self.bits == 0 {
            return self.tok_far();
        }
        self.i = self.base + self.bits.trailing_zeros() as usize;
        self.bits &= self.bits - 1;
        self.b.get(self.i).copied().unwrap_or(0)
    }

    #[inline(never)]
    fn tok_far(&mut self) -> u8 {
        while self.bits == 0 {
            if !self.next_block() {
                self.i = self.stop.min(self.b.len());
                return 0;
            }
        }
        self.tok()
    }

    /// The closing quote of the string whose opening quote is the last token taken, and whether
    /// the string may have escapes.
    #[inline]
    pub(super) fn closing_quote(&mut self) -> R<(usize, bool)> {
        let from = self.i + 1;
        if from.wrapping_sub(self.base) < 64 {
            let on = u64::MAX << (from - self.base);
            let quotes = self.quotes & on;
            if quotes != 0 {
                let before = (quotes & quotes.wrapping_neg()) - 1;
                return Ok((self.base + quotes.trailing_zeros() as usize, self.escapes & on & before != 0));
            }
        }
        // The string runs past the current block, so no structural is left in it: move on to
        // the block with the closing quote (whose structurals all come after it).
        loop {
            if !self.next_block() {
                self.i = self.stop.min(self.b.len());
                return self.err("unterminated string");
            }
            if self.quotes != 0 {
                return Ok((self.base + self.quotes.trailing_zeros() as usize, true));
            }
        }
    }

    /// The contents of the string whose opening quote is the last token taken if it ends in the
    /// current block and has no escapes (the common case, kept small to inline).
    #[inline(always)]
    pub(super) fn plain_string(&mut self) -> Option<&'a [u8]> {
        let from = self.i + 1;
        let shift = from.wrapping_sub(self.base);
        if shift >= 64 {
            return None;
        }
        let on = u64::MAX << shift;
        let quotes = self.quotes & on;
        let before = (quotes & quotes.wrapping_neg()).wrapping_sub(1);
        if quotes == 0 || self.escapes & on & before != 0 {
            return None;
        }
        let end = self.base + quotes.trailing_zeros() as usize;
        let s = self.b.get(from..end)?;
        self.i = end;
        Some(s)
    }

    /// The contents of the string whose opening quote is the last token taken, escapes decoded
    /// (borrowed as is if it has none).
    #[inline(never)]
    fn string_bytes(&mut self) -> R<Cow<'a, [u8]>> {
        let mut decoded = Vec::new();
        Ok(match self.string_or_decoded(&mut decoded)? {
            Some(raw) => Cow::Borrowed(raw),
            None => Cow::Owned(decoded),
        })
    }

    /// The string whose opening quote is the last token taken: its bytes if it has no escapes,
    /// else `None` with its escapes decoded into `out` (cleared first; the typed decoder reuses
    /// one buffer).
    #[inline(never)]
    pub(super) fn string_or_decoded(&mut self, out: &mut Vec<u8>) -> R<Option<&'a [u8]>> {
        let start = self.i + 1;
        let (end, maybe_escapes) = self.closing_quote()?;
        let raw = &self.b[start..end];
        if !maybe_escapes || !raw.contains(&b'\\') {
            self.i = end;
            return Ok(Some(raw));
        }
        out.clear();
        self.decode_into(start, end, out)?;
        Ok(None)
    }

    /// Decodes the escapes of the string from `start` to its closing quote at `end`, appending
    /// to `out`.    /// [`Scanner::decode`], appending to `out`.
    fn decode_into(&mut self, start: usize, end: usize, out: &mut Vec<u8>) -> R<()> {
        let b = self.b;
        out.reserve(end - start);
        self.i = start;
        while let Some(p) = b.get(self.i..end).and_then(|s| memchr::memchr(b'\\', s)) {
            out.extend_from_slice(&b[self.i..self.i + p]);
            self.i += p;
            self.escape(out)?;
        }
        // Valid escapes never cover an unescaped quote, so they end before `end`.
        if self.i > end {
            return self.err("invalid escape");
        }
        out.extend_from_slice(&b[self.i..end]);
        self.i = end;
        Ok(())
    }

    /// Decodes the escape at `self.i` (a backslash), appending its value to `out`.
    fn escape(&mut self, out: &mut Vec<u8>) -> R<()> {
        let Some(&c) = self.b.get(self.i + 1) else {
            self.i = self.b.len();
            return self.err("unterminated string");
        };
        let simple = match c {
            b'"' => Some(b'"'),
            b'\\' => Some(b'\\'),
            b'/' => Some(b'/'),
            b'b' => Some(8),
            b'f' => Some(12),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'u' => None,
            _ => return self.err("invalid escape"),
        };
        if let Some(v) = simple {
            out.push(v);
            self.i += 2;
            return Ok(());
        }
        let hi = self.hex4(self.i + 2)?;
        self.i += 6;
        let cp = if (0xD800..0xDC00).contains(&hi) {
            // A high surrogate must be followed by an escaped low surrogate.
            if self.b.get(self.i) == Some(&b'\\') && self.b.get(self.i + 1) == Some(&b'u') {
                let lo = self.hex4(self.i + 2)?;
                if !(0xDC00..0xE000).contains(&lo) {
                    return self.err("invalid surrogate pair");
                }
                self.i += 6;
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            } else {
                return self.err("lone surrogate");
            }
        } else if (0xDC00..0xE000).contains(&hi) {
            return self.err("lone surrogate");
        } else {
            hi
        };
        let ch = char::from_u32(cp).ok_or(ScanError { offset: self.i, what: "invalid code point", eof: false })?;
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    fn hex4(&self, at: usize) -> R<u32> {
        match hex4(self.b, at) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(ScanError { offset: self.b.len(), what: "unterminated escape", eof: true }),
            Err(what) => Err(ScanError { offset: at, what, eof: false }),
        }
    }

    /// The string whose opening quote is the last token taken, decoded and UTF-8 checked.
    fn string(&mut self) -> R<Cow<'a, str>> {
        let start = self.i + 1;
        let invalid = |_| ScanError { offset: start, what: "invalid UTF-8 in string", eof: false };
        let s = match self.plain_string() {
            Some(s) => Cow::Borrowed(s),
            None => self.string_bytes()?,
        };
        match s {
            Cow::Borrowed(s) => std::str::from_utf8(s).map(Cow::Borrowed).map_err(invalid),
            Cow::Owned(s) => String::from_utf8(s).map(Cow::Owned).map_err(|e| invalid(e.utf8_error())),
        }
    }

    /// A string or null (the next token).
    fn opt_string(&mut self) -> R<Option<CowStr<'a>>> {
        match self.tok() {
            b'"' => self.string().map(|s| Some(CowStr(s))),
            b'n' => self.literal(b"null").map(|()| None),
            _ => self.err("expected a string"),
        }
    }

    /// Checks the literal `lit` at the last token taken.
    pub(super) fn literal<const N: usize>(&mut self, lit: &[u8; N]) -> R<()> {
        let end = self.i + N;
        match self.b.get(self.i..).and_then(<[u8]>::first_chunk::<N>) {
            Some(s) if s == lit => {
                if ends_scalar(self.b.get(end)) {
                    return Ok(());
                }
                self.i = end;
                self.err("invalid literal")
            }
            None if lit.starts_with(self.b.get(self.i..).unwrap_or_default()) => {
                self.i = self.b.len();
                self.err("unexpected end of input")
            }
            _ => self.err("invalid literal"),
        }
    }

    /// Checks the literal or number at the last token taken (its first byte `c`).
    #[inline(never)]
    fn scalar(&mut self, c: u8) -> R<()> {
        match c {
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(|_| ()),
            _ => self.err("expected a value"),
        }
    }

    /// Checks the number at the last token taken; returns where it ends.
    pub(super) fn number(&mut self) -> R<usize> {
        let start = self.i;
        let mut end = start;
        while let Some(&c) = self.b.get(end) {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
                end += 1;
            } else {
                break;
            }
        }
        // Cheap shape check: starts with '-' or a digit and ends with a digit (or, strict, the
        // exact grammar).
        let n = &self.b[start..end];
        let shaped = if self.strict {
            is_json_number(n)
        } else {
            n.last().is_some_and(u8::is_ascii_digit) && (n[0] == b'-' || n[0].is_ascii_digit())
        };
        if shaped {
            if ends_scalar(self.b.get(end)) {
                return Ok(end);
            }
            self.i = end;
            return self.err("invalid number");
        }
        self.i = end;
        if end >= self.b.len() { self.err("unexpected end of input") } else { self.err("invalid number") }
    }

    /// Skips the value whose first token `c` was just taken. `depth` is the value's nesting depth
    /// (members of the top-level object are at 1).
    #[inline]
    pub(super) fn skip_value(&mut self, c: u8, depth: usize) -> R<()> {
        if depth > MAX_DEPTH {
            return self.err("nesting too deep");
        }
        // A string is skipped already (stage 1 checked its escapes).
        if c == b'"' { Ok(()) } else { self.skip_nested(c, depth) }
    }

    /// [`Scanner::skip_value`] for anything but a string. Iterative, with the token cursor in
    /// locals: this loop takes most of the tokens of an object.
    #[inline(never)]
    fn skip_nested(&mut self, c: u8, depth: usize) -> R<()> {
        let b = self.b;
        // The token cursor: the current token is at `base + t`.
        let (mut bits, mut base) = (self.bits, self.base);
        let mut t = self.i.wrapping_sub(base);
        // The current block's bytes (so that reading a token's byte needs no bounds check).
        let mut tail = [b' '; 64];
        let mut cur = block_bytes(b, base, &mut tail);
        // Takes the next structural: its byte (as `Scanner::tok`).
        macro_rules! tok {
            () => {
                if bits != 0 {
                    t = bits.trailing_zeros() as usize % 64;
                    bits &= bits - 1;
                    cur[t]
                } else if let Some((next, block)) = self.next_full_block() {
                    (bits, cur) = (next, block);
                    base += 64;
                    t = bits.trailing_zeros() as usize % 64;
                    bits &= bits - 1;
                    cur[t]
                } else {
                    self.bits = 0;
                    let c = self.tok_far();
                    (bits, base) = (self.bits, self.base);
                    t = self.i.wrapping_sub(base);
                    cur = block_bytes(b, base, &mut tail);
                    c
                }
            };
        }
        macro_rules! fail {
            ($what:expr) => {{
                self.i = base.wrapping_add(t);
                return self.err($what);
            }};
        }
        // The flags "is an object" of the open containers (bit `n` for the `n`-th, outermost
        // first); the innermost one's also in `in_object`.
        let mut objects = [0u64; MAX_DEPTH / 64];
        let mut open = 0usize;
        let mut in_object = false;
        macro_rules! push {
            ($object:expr) => {
                // Only non-empty containers are pushed: their members are one level deeper.
                if depth + open >= MAX_DEPTH {
                    fail!("nesting too deep");
                }
                if $object {
                    objects[open / 64] |= 1 << (open % 64);
                } else {
                    objects[open / 64] &= !(1 << (open % 64));
                }
                open += 1;
                in_object = $object;
            };
        }
        let mut c = c;
        'value: loop {
            // Most values are strings; then objects (an if chain: a jump table costs more here).
            if c == b'"' {
            } else if c == b'{' {
                c = tok!();
                if c == b'"' {
                    push!(true);
                    if tok!() != b':' {
                        fail!("expected ':'");
                    }
                    c = tok!();
                    continue 'value;
                } else if c != b'}' {
                    fail!("expected a key");
                }
            } else if c == b'[' {
                c = tok!();
                if c != b']' {
                    push!(false);
                    continue 'value;
                }
            } else {
                self.i = base.wrapping_add(t);
                self.scalar(c)?;
            }
            // A value ended: continue its container.
            while open > 0 {
                c = tok!();
                if c == b',' {
                    c = tok!();
                    if in_object {
                        if c != b'"' {
                            fail!("expected a key");
                        }
                        if tok!() != b':' {
                            fail!("expected ':'");
                        }
                        c = tok!();
                    }
                    continue 'value;
                }
                if c != if in_object { b'}' } else { b']' } {
                    fail!(if in_object { "expected ',' or '}'" } else { "expected ',' or ']'" });
                }
                open -= 1;
                if let Some(top) = open.checked_sub(1) {
                    in_object = objects[top / 64] & (1 << (top % 64)) != 0;
                }
            }
            self.bits = bits;
            self.i = base.wrapping_add(t);
            return Ok(());
        }
    }

    /// Walks the object whose `{` may be the token `c`, calling `f(key, scanner)` to consume each
    /// member's value (from its first token on). Keys are decoded and UTF-8 checked.
    fn object(&mut self, c: u8, f: impl FnMut(&[u8], &mut Self) -> R<()>) -> R<()> {
        self.members(c, true, f)
    }

    /// [`Scanner::object`], its keys UTF-8 checked only if `utf8` (as for skipped strings when not).
    fn members(&mut self, c: u8, utf8: bool, mut f: impl FnMut(&[u8], &mut Self) -> R<()>) -> R<()> {
        if c != b'{' {
            return self.err("expected an object");
        }
        let mut c = self.tok();
        if c == b'}' {
            return Ok(());
        }
        loop {
            if c != b'"' {
                return self.err("expected a string");
            }
            let key = if utf8 { self.key()? } else { self.raw_key()? };
            if self.tok() != b':' {
                return self.err("expected ':'");
            }
            f(&key, self)?;
            match self.tok() {
                b',' => c = self.tok(),
                b'}' => return Ok(()),
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// A member's key (its opening quote is the last token taken), decoded and UTF-8 checked.
    #[inline]
    fn key(&mut self) -> R<Cow<'a, [u8]>> {
        let start = self.i + 1;
        let key = self.raw_key()?;
        if !is_ascii(&key) && std::str::from_utf8(&key).is_err() {
            return Err(ScanError { offset: start, what: "invalid UTF-8 in string", eof: false });
        }
        Ok(key)
    }

    /// A member's key (its opening quote is the last token taken), decoded but not UTF-8 checked.
    #[inline]
    fn raw_key(&mut self) -> R<Cow<'a, [u8]>> {
        match self.plain_string() {
            Some(key) => Ok(Cow::Borrowed(key)),
            None => self.string_bytes(),
        }
    }

    /// A map of strings, or null (the next token).
    fn pairs(&mut self, out: &mut Option<StrPairs<'a>>) -> R<()> {
        let pairs = out.insert(StrPairs::default());
        if !self.map_of_strings(|k, v| pairs.0.push((k, v)), Self::string)? {
            *out = None;
        }
        Ok(())
    }

    /// Checks a map of strings (or null) like [`Scanner::pairs`] but without decoding it.
    fn skip_pairs(&mut self) -> R<()> {
        self.map_of_strings(|(), ()| {}, |_| Ok(())).map(|_| ())
    }

    /// Walks a map of strings or null (the next token), reading each string with `read` and
    /// handing each pair to `pair`; false for null.
    fn map_of_strings<T>(&mut self, mut pair: impl FnMut(T, T), read: impl Fn(&mut Self) -> R<T>) -> R<bool> {
        match self.tok() {
            b'n' => return self.literal(b"null").map(|()| false),
            b'{' => {}
            _ => return self.err("expected an object"),
        }
        let mut c = self.tok();
        if c == b'}' {
            return Ok(true);
        }
        loop {
            if c != b'"' {
                return self.err("expected a string");
            }
            let k = read(self)?;
            if self.tok() != b':' {
                return self.err("expected ':'");
            }
            if self.tok() != b'"' {
                return self.err("expected a string");
            }
            let v = read(self)?;
            pair(k, v);
            match self.tok() {
                b',' => c = self.tok(),
                b'}' => return Ok(true),
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    /// After the top-level value: only whitespace may follow.
    pub(super) fn end(&mut self, what: &'static str) -> R<()> {
        self.tok();
        if self.i < self.b.len() {
            return self.err(what);
        }
        Ok(())
    }
}

/// Whether `n` is exactly a JSON number: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
pub(super) fn is_json_number(n: &[u8]) -> bool {
    let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(n.first() == Some(&b'-'));
    match n.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => i += digits(&n[i..]),
        _ => return false,
    }
    if n.get(i) == Some(&b'.') {
        let d = digits(&n[i + 1..]);
        if d == 0 {
            return false;
        }
        i += 1 + d;
    }
    if matches!(n.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(n.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let d = digits(n.get(i..).unwrap_or_default());
        if d == 0 {
            return false;
        }
        i += d;
    }
    i == n.len()
}

/// The value of four hex digits at `at`; `None` if the input ends first.
fn hex4(b: &[u8], at: usize) -> Result<Option<u32>, &'static str> {
    let mut v = 0u32;
    for k in at..at + 4 {
        let Some(&c) = b.get(k) else { return Ok(None) };
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err("invalid \\u escape"),
        };
        v = v * 16 + d as u32;
    }
    Ok(Some(v))
}

/// Whether a head scan decodes `metadata.annotations` (only watch bookmarks need them) or only
/// checks that they are a map of strings (their values can be large, e.g. kubectl's
/// `last-applied-configuration`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Annotations {
    Decode,
    Skip,
}

/// Scans one JSON object for its head, annotations included.
pub(crate) fn scan_head(json: &[u8]) -> Result<ObjectHead<'_>, ScanError> {
    scan_head_with(json, Annotations::Decode)
}

/// Scans one JSON object for its head.
pub(crate) fn scan_head_with(json: &[u8], annotations: Annotations) -> Result<ObjectHead<'_>, ScanError> {
    scan_whole(Scanner::new(json), annotations)
}

fn scan_whole(mut s: Scanner<'_>, annotations: Annotations) -> Result<ObjectHead<'_>, ScanError> {
    let mut head = ObjectHead::default();
    let c = s.tok();
    head_at(&mut s, c, annotations, &mut head)?;
    s.end("trailing characters after the object")?;
    Ok(head)
}

/// The metadata of a list response.
#[derive(Debug, Default)]
pub(crate) struct ListHead<'a> {
    pub kind: Option<CowStr<'a>>,
    pub resource_version: Option<CowStr<'a>>,
    pub continue_token: Option<CowStr<'a>>,
    pub remaining_item_count: Option<i64>,
}

/// Scans a list response in one pass, calling `item(head, bytes)` for each element of `items`.
/// Reads the members [`ListStream`] keeps, and is its reference in tests.
pub(crate) fn scan_list<'a, E: From<ScanError>>(
    json: &'a [u8],
    item: impl FnMut(&ObjectHead<'a>, &'a [u8]) -> Result<(), E>,
) -> Result<ListHead<'a>, E> {
    scan_list_with(Scanner::new(json), item)
}

fn scan_list_with<'a, E: From<ScanError>>(
    mut s: Scanner<'a>,
    mut item: impl FnMut(&ObjectHead<'a>, &'a [u8]) -> Result<(), E>,
) -> Result<ListHead<'a>, E> {
    let json = s.b;
    let mut list = ListHead::default();
    let mut outer: Result<(), E> = Ok(());
    let c = s.tok();
    let r = s.object(c, |key, s| {
        match key {
            b"kind" => list.kind = s.opt_string()?,
            b"metadata" => {
                let c = s.tok();
                if c == b'n' {
                    return s.literal(b"null");
                }
                s.object(c, |k, s| {
                    match k {
                        b"resourceVersion" => list.resource_version = s.opt_string()?,
                        b"continue" => list.continue_token = s.opt_string()?,
                        b"remainingItemCount" => {
                            if s.tok() == b'n' {
                                s.literal(b"null")?;
                            } else {
                                let start = s.i;
                                let end = s.number()?;
                                list.remaining_item_count =
                                    std::str::from_utf8(&json[start..end]).ok().and_then(|n| n.parse().ok());
                            }
                        }
                        _ => {
                            let c = s.tok();
                            s.skip_value(c, 2)?;
                        }
                    }
                    Ok(())
                })?;
            }
            b"items" => {
                match s.tok() {
                    b'n' => return s.literal(b"null"),
                    b'[' => {}
                    _ => return s.err("expected an array of items"),
                }
                let mut c = s.tok();
                if c == b']' {
                    return Ok(());
                }
                loop {
                    let start = s.i;
                    let mut head = ObjectHead::default();
                    head_at(s, c, Annotations::Skip, &mut head)?;
                    if outer.is_ok() {
                        // `s.i` is at the item's closing brace.
                        outer = item(&head, &json[start..s.i + 1]);
                    }
                    match s.tok() {
                        b',' => c = s.tok(),
                        b']' => return Ok(()),
                        _ => return s.err("expected ',' or ']'"),
                    }
                }
            }
            _ => {
                let c = s.tok();
                s.skip_value(c, 1)?;
            }
        }
        Ok(())
    });
    r?;
    outer?;
    s.end("trailing characters after the list")?;
    Ok(list)
}

/// A list response scanned as its bytes arrive: each element of `items` is handed out as soon as
/// it is complete, so a LIST never needs its whole body in memory (only the item being read).
///
/// Invariants: [`ListStream::feed`] consumes whole items and whole top-level members only, and
/// every position it stops at is between tokens, outside any string, so scanning resumes from
/// there with a fresh scanner; an error is final; input that ends inside a value is not an error
/// until [`ListStream::finish`]. The list's other members (`kind`, `metadata`, ...) are kept,
/// re-assembled as a small document, and read at the end.
#[derive(Default)]
pub(crate) struct ListStream {
    phase: ListPhase,
    /// `{` then every non-`items` member seen so far, comma separated.
    rest: Vec<u8>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum ListPhase {
    /// Before the opening brace.
    #[default]
    Open,
    /// Between top-level members (`first`: none yet).
    Members { first: bool },
    /// Inside the `items` array (`first`: no element yet).
    Items { first: bool },
    /// After the closing brace.
    Done,
}

impl ListStream {
    /// Takes the complete items and members at the start of `b`, calling `item(head, bytes)` for
    /// each item; returns how many bytes were consumed (the rest must be offered again, with
    /// more input after it).
    pub(crate) fn feed<E: From<ScanError>>(
        &mut self,
        b: &[u8],
        mut item: impl FnMut(&ObjectHead<'_>, &[u8]) -> Result<(), E>,
    ) -> Result<usize, E> {
        let mut at = 0;
        while at < b.len() {
            let mut s = Scanner::new(&b[at..]);
            let step = match self.phase {
                ListPhase::Done => s.end("trailing characters after the list").map(|()| b.len() - at),
                ListPhase::Open => match s.tok() {
                    b'{' => {
                        self.rest.push(b'{');
                        self.phase = ListPhase::Members { first: true };
                        Ok(s.i + 1)
                    }
                    _ => s.err("expected an object"),
                },
                ListPhase::Members { first } => self.member(&mut s, first),
                ListPhase::Items { first } => match Self::element(&mut s, first) {
                    Ok(Some((head, start, end))) => {
                        item(&head, &s.b[start..end])?;
                        self.phase = ListPhase::Items { first: false };
                        Ok(end)
                    }
                    Ok(None) => {
                        self.phase = ListPhase::Members { first: false };
                        Ok(s.i + 1)
                    }
                    Err(e) => Err(e),
                },
            };
            match step {
                Ok(n) => at += n,
                // Input that ends inside a value: wait for more.
                Err(e) if e.eof => return Ok(at),
                Err(mut e) => {
                    e.offset += at;
                    return Err(e.into());
                }
            }
        }
        Ok(at)
    }

    /// One top-level member (or the closing brace): the bytes it took (an end-of-input error if
    /// it is not complete yet).
    fn member(&mut self, s: &mut Scanner<'_>, first: bool) -> R<usize> {
        let mut c = s.tok();
        if c == b'}' {
            self.phase = ListPhase::Done;
            self.rest.push(b'}');
            return Ok(s.i + 1);
        }
        if !first {
            if c != b',' {
                return s.err("expected ',' or '}'");
            }
            c = s.tok();
        }
        if c != b'"' {
            return s.err("expected a string");
        }
        let key_at = s.i;
        let key = s.key()?;
        if s.tok() != b':' {
            return s.err("expected ':'");
        }
        let c = s.tok();
        if &*key == b"items" {
            return match c {
                b'[' => {
                    self.phase = ListPhase::Items { first: true };
                    Ok(s.i + 1)
                }
                b'n' => {
                    s.literal(b"null")?;
                    self.phase = ListPhase::Members { first: false };
                    Ok(s.i + b"null".len())
                }
                _ => s.err("expected an array of items"),
            };
        }
        s.skip_value(c, 1)?;
        // Complete once the token after it has arrived (a number, or a string whose closing
        // quote is still to come, may go on in the next chunk).
        let next = s.tok();
        if next == 0 {
            return s.err("unexpected end of input");
        }
        if self.rest.len() > 1 {
            self.rest.push(b',');
        }
        self.rest.extend_from_slice(s.b[key_at..s.i].trim_ascii_end());
        self.phase = ListPhase::Members { first: false };
        Ok(s.i)
    }

    /// One element of `items`: its head and span, or `None` at the closing bracket (`s.i` at it).
    fn element<'b>(s: &mut Scanner<'b>, first: bool) -> R<Option<(ObjectHead<'b>, usize, usize)>> {
        let mut c = s.tok();
        if c == b']' {
            return Ok(None);
        }
        if !first {
            if c != b',' {
                return s.err("expected ',' or ']'");
            }
            c = s.tok();
        }
        let start = s.i;
        let mut head = ObjectHead::default();
        head_at(s, c, Annotations::Skip, &mut head)?;
        // `s.i` is at the item's closing brace.
        Ok(Some((head, start, s.i + 1)))
    }

    /// The list's head, once the input has ended (`leftover`: what [`ListStream::feed`] did not
    /// consume). Errors if the list is not complete.
    pub(crate) fn finish(&self, leftover: &[u8]) -> Result<ListHead<'_>, ScanError> {
        if self.phase != ListPhase::Done || !leftover.iter().all(u8::is_ascii_whitespace) {
            return Err(ScanError { offset: leftover.len(), what: "unexpected end of input", eof: true });
        }
        // The one-pass scan reads the kept members (there are no items left in them).
        scan_list(&self.rest, |_, _| -> R<()> { Ok(()) })
    }

    /// The list's other members as one document (for a body that is a `Status`).
    pub(crate) fn rest(&self) -> &[u8] {
        &self.rest
    }
}

/// Reads the head of the object whose first token `c` was just taken, up to its closing brace.
fn head_at<'a>(s: &mut Scanner<'a>, c: u8, annotations: Annotations, head: &mut ObjectHead<'a>) -> R<()> {
    s.object(c, |key, s| {
        match key {
            b"kind" => head.kind = s.opt_string()?,
            b"apiVersion" => head.api_version = s.opt_string()?,
            b"metadata" => {
                let c = s.tok();
                if c == b'n' {
                    return s.literal(b"null");
                }
                let again = head.metadata.is_some();
                let m = head.metadata.insert(MetaHead::default());
                m.fields_v1.ambiguous = again;
                let mut managed_fields_seen = false;
                s.object(c, |k, s| {
                    match k {
                        b"name" => m.name = s.opt_string()?,
                        b"namespace" => m.namespace = s.opt_string()?,
                        b"resourceVersion" => m.resource_version = s.opt_string()?,
                        b"uid" => m.uid = s.opt_string()?,
                        b"labels" => s.pairs(&mut m.labels)?,
                        b"managedFields" => {
                            m.fields_v1.ambiguous |= std::mem::replace(&mut managed_fields_seen, true);
                            managed_fields(s, &mut m.fields_v1)?
                        }
                        b"annotations" => match annotations {
                            Annotations::Decode => s.pairs(&mut m.annotations)?,
                            Annotations::Skip => s.skip_pairs()?,
                        },
                        _ => {
                            let c = s.tok();
                            s.skip_value(c, 2)?;
                        }
                    }
                    Ok(())
                })?;
            }
            _ => {
                let c = s.tok();
                s.skip_value(c, 1)?;
            }
        }
        Ok(())
    })
}

/// `metadata.managedFields` (from its first token on): records the span of each entry's
/// `fieldsV1` object, from its `{` to its `}`, with the entry's index. Everything else is checked
/// and skipped as for any other member (the entries' keys are not UTF-8 checked, like every
/// skipped string).
fn managed_fields<'a>(s: &mut Scanner<'a>, out: &mut FieldsV1Spans<'a>) -> R<()> {
    let c = s.tok();
    if c != b'[' {
        return s.skip_value(c, 2);
    }
    let mut c = s.tok();
    if c == b']' {
        return Ok(());
    }
    let b = s.b;
    let mut entry = 0u32;
    loop {
        if c == b'{' {
            let mut seen = false;
            s.members(c, false, |k, s| {
                let c = s.tok();
                let start = s.i;
                s.skip_value(c, 4)?;
                if k == b"fieldsV1" {
                    out.ambiguous |= std::mem::replace(&mut seen, true);
                    if c == b'{' {
                        // `s.i` is at the value's closing brace.
                        out.spans.push((entry, &b[start..s.i + 1]));
                    }
                }
                Ok(())
            })?;
        } else {
            s.skip_value(c, 3)?;
        }
        // An array of more than 4 billion entries does not fit the input's u32 offsets anyway.
        entry = entry.saturating_add(1);
        match s.tok() {
            b',' => c = s.tok(),
            b']' => return Ok(()),
            _ => return s.err("expected ',' or ']'"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            (-1e12f64..1e12).prop_map(|f| json!(f)),
            "\\PC{0,16}".prop_map(Value::String),
            "[\"\\\\\u{1}-\u{1f}\u{e9}\u{1F600}a-z]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `managedFields` entries whose `fieldsV1` may or may not be an object (only objects are
    /// recorded), with members before and after it (serde_json's maps are sorted by key).
    fn arb_managed_fields() -> impl Strategy<Value = Value> {
        prop::collection::vec((arb_json(), arb_json()), 0..4).prop_map(|entries| {
            Value::Array(entries.into_iter().map(|(f, x)| json!({"a": "m", "fieldsV1": f, "z": x})).collect())
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        (
            prop::option::of("[a-z0-9.-]{1,12}\\PC{0,3}"),
            prop::option::of("[a-z-]{1,8}"),
            prop::option::of("[0-9]{1,6}"),
            prop::collection::btree_map("[a-z/.]{1,10}\\PC{0,2}", "\\PC{0,10}", 0..4),
            prop_oneof![arb_json(), arb_managed_fields()],
            arb_json(),
        )
            .prop_map(|(name, ns, rv, labels, extra, spec)| {
                let mut meta = serde_json::Map::new();
                meta.insert("managedFields".into(), extra);
                if let Some(n) = name {
                    meta.insert("name".into(), json!(n));
                }
                if let Some(n) = ns {
                    meta.insert("namespace".into(), json!(n));
                }
                if let Some(r) = rv {
                    meta.insert("resourceVersion".into(), json!(r));
                }
                meta.insert("labels".into(), json!(labels));
                json!({"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec})
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn scanner_agrees_with_serde_on_valid_objects(v in arb_object(), pretty in any::<bool>()) {
            let text = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
            let fast = scan_head(&text).unwrap();
            let reference = ObjectHead::parse_reference(&text).unwrap();
            prop_assert_eq!(fast, reference);
        }

        #[test]
        fn truncated_objects_are_errors(v in arb_object(), cut in 0usize..10_000) {
            let text = serde_json::to_vec(&v).unwrap();
            let cut = cut % text.len();
            let e = scan_head(&text[..cut]).unwrap_err();
            prop_assert!(e.eof, "a truncated object is reported as incomplete: {e}");
        }

        #[test]
        fn list_stream_agrees_with_the_one_pass_scan_at_any_cuts(
            items in prop::collection::vec(arb_object(), 0..5),
            extra in arb_json(),
            pretty in any::<bool>(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        ) {
            let doc = json!({"kind": "PodList", "metadata": {"resourceVersion": "9", "remainingItemCount": 123}, "x": extra, "items": items});
            let text = if pretty { serde_json::to_vec_pretty(&doc).unwrap() } else { serde_json::to_vec(&doc).unwrap() };
            let mut want = vec![];
            let head = scan_list(&text, |_, b| -> R<()> { want.push(b.to_vec()); Ok(()) }).unwrap();
            let want_head = (head.resource_version.as_deref().map(str::to_string), head.remaining_item_count);
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(text.len() + 1)).collect();
            cuts.sort_unstable();
            cuts.push(text.len());
            let (mut stream, mut carry, mut got, mut from) = (ListStream::default(), Vec::new(), vec![], 0);
            for c in cuts {
                carry.extend_from_slice(&text[from..c]);
                from = c;
                let n = stream.feed(&carry, |_, b| -> R<()> { got.push(b.to_vec()); Ok(()) }).unwrap();
                carry.drain(..n);
            }
            let head = stream.finish(&carry).unwrap();
            prop_assert_eq!((head.resource_version.as_deref().map(str::to_string), head.remaining_item_count), want_head);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..400)) {
            let _ = scan_head(&b);
        }

        /// One structural edit (a deleted or inserted `{}[],:"`) of a valid document: the scanner
        /// accepts exactly what serde_json accepts. Numbers are non-negative integers and strings
        /// have no control characters, so the only things the scanner leaves to the typed decode
        /// (number shapes, control characters, UTF-8 in skipped strings) cannot arise.
        #[test]
        fn agrees_with_serde_on_edited_documents(
            v in arb_plain_json(),
            at in any::<prop::sample::Index>(),
            edit in prop::option::of(prop::sample::select(br#"{}[],:""#.to_vec())),
        ) {
            let mut doc = br#"{"a":"#.to_vec();
            doc.extend_from_slice(&serde_json::to_vec(&v).unwrap());
            doc.push(b'}');
            let structural: Vec<usize> =
                doc.iter().enumerate().filter(|(_, c)| br#"{}[],:""#.contains(c)).map(|(i, _)| i).collect();
            let pos = structural[at.index(structural.len())];
            match edit {
                None => {
                    doc.remove(pos);
                }
                Some(c) => doc.insert(pos, c),
            }
            let serde_ok = serde_json::from_slice::<serde_json::Value>(&doc).is_ok();
            prop_assert_eq!(scan_head(&doc).is_ok(), serde_ok, "{:?}", String::from_utf8_lossy(&doc));
        }
    }

    fn arb_plain_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u32>().prop_map(|n| json!(n)),
            "\\PC{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z\"\\\\]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn managed_fields_entries_are_skipped_like_any_member() {
        // An entry key that is not UTF-8 is not checked (as anywhere outside the identity fields)...
        let doc = b"{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"\xff\":1},{\"fieldsV1\":{\"f:x\":{}}}]}}";
        let head = scan_head(doc).unwrap();
        assert_eq!(head.metadata.unwrap().fields_v1.spans[..], [(1, &b"{\"f:x\":{}}"[..])]);
        // ... nor are non-array and non-object values refused; structure still is.
        for ok in [&b"{\"metadata\":{\"managedFields\":null}}"[..], b"{\"metadata\":{\"managedFields\":[1,\"s\",[]]}}"]
        {
            assert!(scan_head(ok).unwrap().metadata.unwrap().fields_v1.spans.is_empty());
        }
        for bad in [
            &b"{\"metadata\":{\"managedFields\":[{\"fieldsV1\":{}},]}}"[..],
            b"{\"metadata\":{\"managedFields\":[{\"a\" 1}]}}",
        ] {
            assert!(scan_head(bad).is_err());
        }
    }

    #[test]
    fn rejects_structural_errors() {
        for bad in [
            &b"{\"a\":1,}"[..],
            b"{\"a\" 1}",
            b"{\"a\":[1,2}",
            b"{\"a\":tru}",
            b"{\"a\":\"\\x\"}",
            b"{\"a\":\"\\ud800\"}",
            b"{\"metadata\":{\"name\":7}}",
            b"{}{}",
            b"[]",
            b"{\"a\":-}",
        ] {
            assert!(scan_head(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(600), "]".repeat(600));
        assert_eq!(scan_head(deep.as_bytes()).unwrap_err().what, "nesting too deep");
    }

    #[test]
    fn decodes_escapes_in_extracted_strings() {
        let h = scan_head(br#"{"metadata":{"name":"a\"b\\c\u00e9\ud83d\ude00","labels":{"k\/1":"v\n"}}}"#).unwrap();
        let m = h.metadata.unwrap();
        assert_eq!(m.name.as_deref(), Some("a\"b\\c\u{e9}\u{1F600}"));
        let l = m.labels.unwrap().0;
        assert_eq!((l[0].0.as_ref(), l[0].1.as_ref()), ("k/1", "v\n"));
    }

    #[test]
    fn annotations_are_checked_but_decoded_only_on_request() {
        let j = br#"{"metadata":{"name":"a","annotations":{"k":"v\n","l":"w"}}}"#;
        assert_eq!(scan_head(j).unwrap().metadata.unwrap().annotations.unwrap().0.len(), 2);
        let lean = scan_head_with(j, Annotations::Skip).unwrap().metadata.unwrap();
        assert_eq!((lean.name.as_deref(), lean.annotations), (Some("a"), None));
        assert!(scan_head_with(br#"{"metadata":{"annotations":null}}"#, Annotations::Skip).is_ok());
        for bad in [
            &br#"{"metadata":{"annotations":{"k":1}}}"#[..],
            br#"{"metadata":{"annotations":{"k":"v",}}}"#,
            br#"{"metadata":{"annotations":{"k" "v"}}}"#,
            br#"{"metadata":{"annotations":["v"]}}"#,
            br#"{"metadata":{"annotations":{"k":"\x"}}}"#,
            br#"{"metadata":{"annotations":{"k":"v"}"#,
        ] {
            assert!(scan_head(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
            assert!(scan_head_with(bad, Annotations::Skip).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn lists_in_one_pass() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"10","continue":"x","remainingItemCount":4},"items":[{"metadata":{"name":"a"}} , {"metadata":{"name":"b"},"spec":[1,{"c":null}]}]}"#;
        let mut names = vec![];
        let l = scan_list(body, |h, bytes| -> Result<(), ScanError> {
            names.push((
                h.metadata.as_ref().unwrap().name.as_deref().unwrap().to_string(),
                String::from_utf8(bytes.to_vec()).unwrap(),
            ));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            names,
            vec![
                ("a".to_string(), r#"{"metadata":{"name":"a"}}"#.to_string()),
                ("b".to_string(), r#"{"metadata":{"name":"b"},"spec":[1,{"c":null}]}"#.to_string())
            ]
        );
        assert_eq!(
            (l.resource_version.as_deref(), l.continue_token.as_deref(), l.remaining_item_count),
            (Some("10"), Some("x"), Some(4))
        );
        assert!(scan_list(b"{\"items\":[{}", |_, _| -> Result<(), ScanError> { Ok(()) }).is_err());
    }

    // ---- Stage 1 and the two kernels ----

    /// The whole scan with every kernel this CPU runs; they must agree exactly (errors included).
    fn scan_all(json: &[u8], annotations: Annotations) -> Result<ObjectHead<'_>, ScanError> {
        let mut results =
            Kernel::available().into_iter().map(|k| (k, scan_whole(Scanner::with_kernel(json, k), annotations)));
        let (_, first) = results.next().unwrap();
        for (k, r) in results {
            assert_eq!(r, first, "{k:?} disagrees with the SWAR kernel on {:?}", String::from_utf8_lossy(json));
        }
        first
    }

    /// Stage 1 byte by byte: the structurals and the escapes inside strings.
    fn naive_stage1(b: &[u8]) -> (Vec<usize>, Vec<usize>) {
        let (mut structurals, mut escapes) = (vec![], vec![]);
        let (mut escaped, mut in_string, mut in_scalar) = (false, false, false);
        for (i, &c) in b.iter().enumerate() {
            let is_escaped = escaped;
            escaped = c == b'\\' && !is_escaped;
            if escaped && in_string {
                escapes.push(i);
            }
            if c == b'"' && !is_escaped {
                in_string = !in_string;
                if in_string {
                    structurals.push(i);
                }
                in_scalar = false;
            } else if in_string || matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                in_scalar = false;
            } else if matches!(c | 0x20, b'{' | b'}' | b',' | b':') {
                structurals.push(i);
                in_scalar = false;
            } else {
                if !in_scalar {
                    structurals.push(i);
                }
                in_scalar = true;
            }
        }
        (structurals, escapes)
    }

    /// Stage 1 with `kernel`, batch by batch.
    fn kernel_stage1(b: &[u8], kernel: Kernel) -> (Vec<usize>, Vec<usize>) {
        let (mut structurals, mut escapes) = (vec![], vec![]);
        let mut carry = Carry::default();
        let mut out = [Block::default(); BATCH];
        let mut first = 0;
        loop {
            let n = kernel.blocks(b, first, &mut carry, &mut out);
            if n == 0 {
                return (structurals, escapes);
            }
            for (j, block) in out[..n].iter().enumerate() {
                for (bits, to) in [(block.structurals, &mut structurals), (block.escapes, &mut escapes)] {
                    to.extend((0..64).filter(|t| bits >> t & 1 == 1).map(|t| (first + j) * 64 + t));
                }
            }
            first += n;
        }
    }

    /// Bytes that matter to stage 1, and some that do not.
    fn arb_stage1_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![
                4 => prop::sample::select(br#""\\\\"#.to_vec()),
                2 => prop::sample::select(b"{}[],: \t\n\ra1tu\x0c\x1a\x00\x7f\x80\xff".to_vec()),
                1 => any::<u8>(),
            ],
            0..400,
        )
    }

    /// A string body (between quotes) full of backslash runs of any length before characters
    /// that may or may not be escapable; it may also end the string early (an even run before a
    /// quote).
    fn arb_escapes() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            (
                0usize..80,
                prop::sample::select(vec![
                    "\"",
                    "n",
                    "/",
                    "\\",
                    "u00e9",
                    "ud83d\\ude00",
                    "ud800",
                    "udc00",
                    "u12",
                    "x",
                    "a"
                ])
            )
                .prop_map(|(n, c)| format!("{}{c}", "\\".repeat(n))),
            "[a-z ]{0,70}",
        ];
        prop::collection::vec(piece, 0..5).prop_map(|v| v.concat())
    }

    /// A document with `body` (raw) in an extracted and in skipped strings, shifted by `pad` bytes
    /// so that everything crosses block boundaries somewhere.
    fn escape_doc(pad: usize, body: &str) -> Vec<u8> {
        format!(
            r#"{{"kind":"{}","metadata":{{"name":"{body}","labels":{{"{body}":"{body}"}},"x":"{body}"}},"spec":["{body}",{{"{body}":1}}]}}"#,
            "p".repeat(pad)
        )
        .into_bytes()
    }

    #[test]
    fn kernels_classify_alike() {
        let all = Kernel::available();
        let mut b = [0u8; 64];
        for round in 0..4096u64 {
            // Every byte value in every position, in varied company.
            for (j, x) in b.iter_mut().enumerate() {
                *x = ((round * 64 + j as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8;
            }
            let reference = all[0].classify(&b);
            for (j, &c) in b.iter().enumerate() {
                let bit = |m: u64| m >> j & 1 == 1;
                assert_eq!(bit(reference.quotes), c == b'"');
                assert_eq!(bit(reference.backslashes), c == b'\\');
                assert_eq!(bit(reference.space), matches!(c, b' ' | b'\t' | b'\n' | b'\r'));
                assert_eq!(bit(reference.ops), matches!(c | 0x20, b'{' | b'}' | b',' | b':'), "{c:#x}");
            }
            for k in &all[1..] {
                assert_eq!(k.classify(&b), reference, "{k:?}");
            }
        }
    }

    #[test]
    fn escapers_mark_every_other_backslash_of_a_run() {
        // Runs of every length at every offset, in one block and across two.
        for start in 0..64 {
            for len in 0..=130 {
                let mut b = vec![b'a'; 200];
                b[start..start + len].fill(b'\\');
                let (_, escapes) = naive_stage1(&[b"\"".as_slice(), &b].concat());
                for k in Kernel::available() {
                    assert_eq!(kernel_stage1(&[b"\"".as_slice(), &b].concat(), k).1, escapes, "{k:?} {start} {len}");
                }
            }
        }
    }

    #[test]
    fn deep_nesting_is_limited_iteratively() {
        for depth in [510, 511, 512, 513, 100_000] {
            let doc = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
            // The value of "a" is at depth 1, so 512 arrays nest 512 deep.
            assert_eq!(scan_all(doc.as_bytes(), Annotations::Decode).is_ok(), depth <= 512, "{depth}");
            let doc = format!("{{\"a\":{}1{}}}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(scan_all(doc.as_bytes(), Annotations::Decode).is_ok(), depth < 512, "{depth}");
        }
    }

    /// A realistic pod (the benchmarks' one), pretty as stored and compact: accepted as the
    /// reference decodes it, and every truncation is an end-of-input error.
    #[test]
    fn truncated_pod_at_every_offset() {
        let pretty = include_bytes!("../../../bench/data/w1-pod.json").as_slice();
        let v: Value = serde_json::from_slice(pretty).unwrap();
        let compact = serde_json::to_vec(&v).unwrap();
        for doc in [pretty, &compact] {
            let head = scan_all(doc, Annotations::Decode).unwrap();
            let sets = &head.metadata.as_ref().unwrap().fields_v1;
            assert_eq!(sets.spans.len(), 2, "both managers' field sets are found");
            assert!(!sets.ambiguous);
            assert!(
                sets.spans
                    .iter()
                    .enumerate()
                    .all(|(i, &(e, s))| e as usize == i && s.starts_with(b"{") && s.ends_with(b"}"))
            );
            assert_eq!(head, ObjectHead::parse_reference(doc).unwrap());
            for cut in 0..doc.len() {
                let e = scan_all(&doc[..cut], Annotations::Decode).unwrap_err();
                assert!(e.eof, "cut at {cut}: {e}");
            }
        }
    }

    #[test]
    fn control_characters_classified_as_ops_are_still_errors() {
        for c in ["\x0c", "\x1a"] {
            for doc in [
                format!("{{\"a\":1{c}}}"),
                format!("{{\"a\":true{c}}}"),
                format!("{{\"a\"{c}:1}}"),
                format!("{{{c}\"a\":1}}"),
                format!("{{\"a\":[1,{c}2]}}"),
                format!("{{\"a\":{c}}}"),
            ] {
                assert!(scan_all(doc.as_bytes(), Annotations::Decode).is_err(), "{doc:?}");
            }
            assert!(scan_all(format!("{{\"a\":\"{c}\"}}").as_bytes(), Annotations::Decode).is_ok());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Both kernels' stage 1 equals a byte-by-byte model on inputs dense in quotes and
        /// backslashes (valid JSON or not).
        #[test]
        fn stage1_matches_a_byte_loop(b in arb_stage1_bytes()) {
            let expected = naive_stage1(&b);
            for k in Kernel::available() {
                prop_assert_eq!(&kernel_stage1(&b, k), &expected, "{:?}", k);
            }
        }

        /// Escape-heavy strings at every alignment: accepted exactly when serde_json accepts the
        /// document, decoded like serde_json does, and both kernels agree.
        #[test]
        fn escapes_across_blocks_agree_with_serde(pad in 0usize..130, body in arb_escapes()) {
            let doc = escape_doc(pad, &body);
            let reference = ObjectHead::parse_reference(&doc).ok();
            let serde_ok = serde_json::from_slice::<Value>(&doc).is_ok();
            match scan_all(&doc, Annotations::Decode) {
                Ok(head) => {
                    prop_assert!(serde_ok, "{:?}", body);
                    prop_assert_eq!(Some(head), reference);
                }
                Err(e) => prop_assert!(!serde_ok && !e.eof, "{:?}: {}", body, e),
            }
        }

        /// Valid escape-heavy documents cut anywhere are end-of-input errors.
        #[test]
        fn truncated_escapes_are_eof(pad in 0usize..130, s in "[\"\\\\a\u{e9}\u{1F600}\u{1}]{0,90}", cut in any::<prop::sample::Index>()) {
            let body = serde_json::to_string(&s).unwrap();
            let doc = escape_doc(pad, &body[1..body.len() - 1]);
            let name = scan_all(&doc, Annotations::Decode).unwrap().metadata.unwrap().name.unwrap();
            prop_assert_eq!(&*name, s.as_str());
            let cut = cut.index(doc.len());
            let e = scan_all(&doc[..cut], Annotations::Decode).unwrap_err();
            prop_assert!(e.eof, "cut at {}: {}", cut, e);
        }

        #[test]
        fn kernels_agree_on_objects(v in arb_object(), pretty in any::<bool>(), annotations in any::<bool>()) {
            let text = if pretty { serde_json::to_vec_pretty(&v).unwrap() } else { serde_json::to_vec(&v).unwrap() };
            let annotations = if annotations { Annotations::Decode } else { Annotations::Skip };
            scan_all(&text, annotations).unwrap();
            for cut in [text.len() / 3, text.len() / 2, text.len() - 1] {
                prop_assert!(scan_all(&text[..cut], annotations).unwrap_err().eof);
            }
        }

        #[test]
        fn kernels_agree_on_arbitrary_bytes(b in arb_stage1_bytes(), wrap in any::<bool>()) {
            let b = if wrap { [b"{\"a\":".as_slice(), &b, b"}"].concat() } else { b };
            let _ = scan_all(&b, Annotations::Decode);
        }

        #[test]
        fn kernels_agree_on_edited_documents(
            v in arb_plain_json(),
            at in any::<prop::sample::Index>(),
            edit in prop::option::of(prop::sample::select(br#"{}[],:"\ "#.to_vec())),
        ) {
            let mut doc = br#"{"a":"#.to_vec();
            doc.extend_from_slice(&serde_json::to_vec(&v).unwrap());
            doc.push(b'}');
            // At an ASCII byte other than a digit, so that no UTF-8 sequence breaks (skipped
            // strings are not UTF-8 checked) and no number gets a leading zero (number shapes are
            // checked roughly).
            let ascii: Vec<usize> = (0..doc.len()).filter(|&i| doc[i].is_ascii() && !doc[i].is_ascii_digit()).collect();
            let at = ascii[at.index(ascii.len())];
            match edit {
                None => {
                    doc.remove(at);
                }
                Some(c) => doc.insert(at, c),
            }
            let ok = scan_all(&doc, Annotations::Decode).is_ok();
            // Control characters, bad UTF-8 and odd numbers cannot arise here (see
            // `agrees_with_serde_on_edited_documents`), so serde_json is the oracle.
            prop_assert_eq!(ok, serde_json::from_slice::<Value>(&doc).is_ok(), "{:?}", String::from_utf8_lossy(&doc));
        }

        /// Skipping annotations gives the same head minus them, and checks them the same way.
        #[test]
        fn skipped_annotations_are_checked_alike(v in arb_object(), a in prop::collection::btree_map("\\PC{0,8}", arb_json(), 0..4)) {
            let mut v = v;
            v["metadata"]["annotations"] = json!(a);
            let text = serde_json::to_vec(&v).unwrap();
            let full = scan_all(&text, Annotations::Decode);
            let lean = scan_all(&text, Annotations::Skip);
            match full {
                Ok(mut full) => {
                    full.metadata.as_mut().unwrap().annotations = None;
                    prop_assert_eq!(lean.unwrap(), full);
                }
                Err(_) => prop_assert!(lean.is_err()),
            }
        }
    }

    #[test]
    fn lists_alike_with_both_kernels() {
        let pod = include_bytes!("../../../bench/data/w1-pod.json").as_slice();
        let body =
            [br#"{"kind":"PodList","metadata":{"resourceVersion":"7"},"items":["#.as_slice(), pod, b",", pod, b"]}"]
                .concat();
        for k in Kernel::available() {
            let mut items = vec![];
            let l = scan_list_with(Scanner::with_kernel(&body, k), |h, bytes| -> Result<(), ScanError> {
                items.push((h.metadata.as_ref().unwrap().name.as_deref().unwrap().to_string(), bytes.len()));
                Ok(())
            })
            .unwrap();
            assert_eq!(l.resource_version.as_deref(), Some("7"));
            assert_eq!(items.len(), 2);
            assert!(items.iter().all(|(_, n)| *n == pod.len()), "{k:?}");
            for cut in (0..body.len()).step_by(7) {
                let r =
                    scan_list_with(Scanner::with_kernel(&body[..cut], k), |_, _| -> Result<(), ScanError> { Ok(()) });
                assert!(r.unwrap_err().eof, "{k:?} cut at {cut}");
            }
        }
    }
}
