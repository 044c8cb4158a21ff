#!/usr/bin/env python3
"""Write a gzip quine (a .gz file that decompresses to itself) and verify it.

Usage: gzip_quine.py OUTPUT_PATH

Construction after Russ Cox, "Zip Files All The Way Down". The DEFLATE stream
uses only two kinds of op, each a whole number of bytes starting on a byte
boundary, so that copying the compressed bytes gives the exact same ops:
  L[n]  a stored block: 5 header bytes, then n bytes that are output as-is;
  R[n]  fixed-Huffman block(s) that copy the last n output bytes (distance n).
With P = gzip header and S = gzip trailer, the stream is laid out so that the
output is exactly P + stream + S (see build_stream for the layout).
"""
import gzip
import itertools
import struct
import sys
import zlib

# (first code, base length, extra bits) for the DEFLATE length codes 257..284.
LEN_CODES = [(257 + i, 3 + i, 0) for i in range(8)] + [
    (265 + 4 * e + j, (4 << e) + 3 + j * (1 << e), e)
    for e in range(1, 6) for j in range(4)]


class BitWriter:
    """DEFLATE packs bits LSB-first; Huffman codes go in MSB-first."""

    def __init__(self):
        self.bits = []

    def put(self, value, n):                      # n bits, LSB first
        self.bits += [(value >> i) & 1 for i in range(n)]

    def put_code(self, code, n):                  # Huffman code, MSB first
        self.bits += [(code >> (n - 1 - i)) & 1 for i in range(n)]

    def align(self):
        self.bits += [0] * (-len(self.bits) % 8)

    def to_bytes(self):
        assert len(self.bits) % 8 == 0
        return bytes(sum(b << i for i, b in enumerate(self.bits[k:k + 8]))
                     for k in range(0, len(self.bits), 8))


def put_copy(w, length, dist):
    code, base, extra = next(c for c in reversed(LEN_CODES) if c[1] <= length)
    if code <= 279:                               # fixed lit/len code lengths
        w.put_code(code - 256, 7)
    else:
        w.put_code(0xC0 + code - 280, 8)
    w.put(length - base, extra)
    dcode = next(c for c in range(29, -1, -1) if dist_base(c) <= dist)
    w.put_code(dcode, 5)
    w.put(dist - dist_base(dcode), max(0, (dcode - 2) // 2))


def dist_base(c):
    return c + 1 if c < 4 else (2 + (c & 1) << ((c - 2) // 2)) + 1


def fixed_block(w, copies, dist, final=False):
    w.put(int(final), 1)
    w.put(1, 2)                                   # BTYPE 01: fixed Huffman
    for length in copies:
        put_copy(w, length, dist)
    w.put_code(0, 7)                              # end-of-block (256)


def lit(n):
    """Stored-block header announcing n literal bytes (5 bytes: aligned)."""
    return bytes([0]) + struct.pack('<HH', n, n ^ 0xFFFF)


def repeat(n, size):
    """Encode "copy the last n bytes" (n=0: a no-op) in exactly `size` bytes.

    The bit cost of one copy is rarely a byte multiple, so we search for some
    split of n into copies, plus empty fixed blocks (10 bits each) and an
    optional empty stored block (which pads to a byte boundary by itself)
    that lands exactly on `size` bytes. Returns None if there is none.
    """
    for k in range(0 if n == 0 else 1, 5):
        for parts in itertools.product(range(3, 259), repeat=k):
            if sum(parts) != n:
                continue
            for empties in range(8):
                for stored in (False, True):
                    w = BitWriter()
                    if parts:
                        fixed_block(w, parts, n)
                    for _ in range(empties):
                        fixed_block(w, [], 1)
                    if stored:                    # empty stored block
                        w.put(0, 3)
                        w.align()
                        w.bits += [0] * 32
                        w.bits[-16:] = [1] * 16   # NLEN = ~0
                    if len(w.bits) == 8 * size:
                        return w.to_bytes()
        if n and k * 3 > n:
            break
    return None


def final_repeat(n):
    """Last block: copy n bytes with BFINAL set; trailing pad bits are free."""
    w = BitWriter()
    fixed_block(w, [n], n, final=True)
    w.align()
    return w.to_bytes()


def build_stream(p, s):
    """Return a function (P, S) -> stream whose inflated output is P+stream+S.

    Layout (A, B: repeat ops of a and b bytes; N: no-op filler; F: final op):
      L[p+5] P L[p+5] | A=R[p+5] | L[a] A | L[5] L[a] | L[a+15] A L[5] L[a] L[a+15]
      B=R[a+15] | L[m] B L[m] B L[m] | B | L[m] B N L[s+f] | B | N | L[s+f] F S | F
    Each L outputs the bytes it wraps; each R re-emits the bytes just emitted,
    which are by then the same bytes as the ops that follow it. The second B
    copies m = 2b+10 bytes, so a+15 must equal 2b+10; N fills the third L[m].
    """
    for b in range(5, 40):
        a = 2 * b - 5
        A, B, N = repeat(p + 5, a), repeat(a + 15, b), repeat(0, b + 5)
        if A and B and N:
            break
    else:
        raise SystemExit('no layout found')
    f = next(f for f in range(1, 16) if len(final_repeat(s + f)) == f)
    F, m = final_repeat(s + f), 2 * b + 10
    Lm, Lf = lit(m), lit(s + f)

    def stream(P, S):
        return b''.join([
            lit(p + 5), P, lit(p + 5), A,
            lit(a), A,
            lit(5), lit(a),
            lit(a + 15), A, lit(5), lit(a), lit(a + 15),
            B, Lm, B, Lm, B, Lm, B,
            Lm, B, N, Lf,
            B, N,
            Lf, F, S, F])
    return stream


def crc_solve(make):
    """Find the 4 CRC bytes c with crc32(make(c)) == c.

    CRC32 is affine over GF(2): crc(make(c)) = base ^ M.c, where column j of M
    is the CRC change caused by flipping bit j of the field. Solve
    (M + I) c = base by Gaussian elimination. Returns None if singular.
    """
    base = zlib.crc32(make(0))
    cols = [zlib.crc32(make(1 << j)) ^ base ^ (1 << j) for j in range(32)]
    # rows[i]: bit j = coefficient of c_j in equation i; bit 32 = right side.
    rows = [sum(((cols[j] >> i) & 1) << j for j in range(32))
            | (((base >> i) & 1) << 32) for i in range(32)]
    for col in range(32):
        piv = next((r for r in range(col, 32) if rows[r] >> col & 1), None)
        if piv is None:
            return None
        rows[col], rows[piv] = rows[piv], rows[col]
        for r in range(32):
            if r != col and rows[r] >> col & 1:
                rows[r] ^= rows[col]
    return sum(((rows[i] >> 32) & 1) << i for i in range(32))


def build():
    p, s = 10, 8
    stream = build_stream(p, s)
    # OS byte is the only header byte we may vary if the CRC system is
    # singular; 255 ("unknown") is tried first.
    for os_byte in [255] + list(range(255)):
        P = b'\x1f\x8b\x08\x00' + b'\0\0\0\0' + b'\x00' + bytes([os_byte])
        size = p + len(stream(P, bytes(s))) + s  # independent of S's value

        def make(crc):
            S = struct.pack('<II', crc, size & 0xFFFFFFFF)
            return P + stream(P, S) + S
        crc = crc_solve(make)
        if crc is not None:
            return make(crc)
    raise SystemExit('CRC system unsolvable for every OS byte')


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: gzip_quine.py OUTPUT_PATH')
    data = build()
    with open(sys.argv[1], 'wb') as fh:
        fh.write(data)
    with open(sys.argv[1], 'rb') as fh:
        data = fh.read()
    try:
        ok_gzip = gzip.decompress(data) == data
        d = zlib.decompressobj(31)
        ok_zlib = d.decompress(data) + d.flush() == data and d.eof \
            and not d.unused_data
    except (OSError, EOFError, zlib.error) as exc:
        sys.exit(f'verification failed: {exc}')
    if not (ok_gzip and ok_zlib):
        sys.exit(f'verification failed: gzip={ok_gzip} zlib={ok_zlib}')
    print(f'wrote {len(data)}-byte gzip quine to {sys.argv[1]}: '
          f'gzip.decompress and zlib(wbits=31) reproduce it exactly')


if __name__ == '__main__':
    main()
