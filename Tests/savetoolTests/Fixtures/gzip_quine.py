#!/usr/bin/env python3
"""Write a gzip quine (a .gz file that decompresses to itself) and verify it.

Usage: gzip_quine.py OUTPUT_PATH

After Russ Cox, "Zip Files All The Way Down": the DEFLATE stream has only two
kinds of op, each whole bytes on a byte boundary so that a copy of an op's
bytes is again that op: L[n], a stored block (5-byte header, then n bytes
output as-is), and R[n], fixed-Huffman block(s) re-emitting the last n output
bytes. They are laid out so the output is gzip header + stream + trailer.
"""
import gzip
import struct
import sys
import zlib

# (code, base length, extra bits) for the DEFLATE length codes 257..285.
LEN_CODES = [(257 + i, 3 + i, 0) for i in range(8)] + [
    (261 + 4 * e + j, (4 << e) + 3 + j * (1 << e), e)
    for e in range(1, 6) for j in range(4)] + [(285, 258, 0)]
# (code, base distance, extra bits) for the distance codes 0..29.
DIST_CODES = [(c, 1 + (c if c < 4 else (2 + c % 2) << (c // 2 - 1)),
               max(0, c // 2 - 1)) for c in range(30)]


class BitWriter:
    """DEFLATE packs values LSB-first but Huffman codes MSB-first."""

    def __init__(self):
        self.bits = []

    def put(self, value, n):
        self.bits += [(value >> i) & 1 for i in range(n)]

    def put_code(self, code, n):
        self.bits += [(code >> (n - 1 - i)) & 1 for i in range(n)]

    def align(self):
        self.bits += [0] * (-len(self.bits) % 8)

    def to_bytes(self):
        assert len(self.bits) % 8 == 0
        return bytes(sum(b << i for i, b in enumerate(self.bits[k:k + 8]))
                     for k in range(0, len(self.bits), 8))


def fixed_block(w, copies, dist, final=False):
    """One fixed-Huffman block made only of copies (no literals), all at
    `dist`; consecutive copies at the same distance continue one repeat."""
    w.put(int(final), 1)
    w.put(1, 2)                                   # BTYPE 01
    for length in copies:
        code, base, extra = max(c for c in LEN_CODES if c[1] <= length)
        if code <= 279:                           # fixed code lengths 7 / 8
            w.put_code(code - 256, 7)
        else:
            w.put_code(0xC0 + code - 280, 8)
        w.put(length - base, extra)
        dcode, base, extra = max(c for c in DIST_CODES if c[1] <= dist)
        w.put_code(dcode, 5)
        w.put(dist - base, extra)
    w.put_code(0, 7)                              # end of block


def lit(n):
    """Stored-block header for n bytes; always 5 bytes since it is aligned."""
    return b'\0' + struct.pack('<HH', n, n ^ 0xFFFF)


def splits(n, k):
    """Ways to write n as at most k copy lengths (each 3..258)."""
    if n == 0:
        yield ()
    elif k:
        if n <= 258:
            yield (n,)
        for first in range(3, min(n - 2, 259)):
            yield from ((first,) + rest for rest in splits(n - first, k - 1))


def repeat(n, size):
    """R[n] (n=0: a no-op) in exactly `size` bytes, or None if impossible.

    A copy costs an odd number of bits more often than not, and the next op
    must start on a byte boundary, so search over splitting n into several
    copies, appending empty fixed blocks (10 bits each) and optionally an
    empty stored block (which pads itself out to a byte boundary).
    """
    for parts in splits(n, 4):
        for empties in range(8):
            for stored in (False, True):
                w = BitWriter()
                if parts:
                    fixed_block(w, parts, n)
                for _ in range(empties):
                    fixed_block(w, [], 1)
                if stored:
                    w.put(0, 3)
                    w.align()
                    w.put(0xFFFF0000, 32)         # LEN 0, NLEN ~0
                if len(w.bits) == 8 * size:
                    return w.to_bytes()
    return None


def final_repeat(n):
    """Last op: nothing follows it in the stream, so pad bits are free."""
    w = BitWriter()
    fixed_block(w, [n], n, final=True)
    w.align()
    return w.to_bytes()


def build_stream(p, s):
    """Return stream(P, S): DEFLATE data that inflates to P + itself + S.

    Ops, with A = R[p+5] (a bytes), B = R[a+15] (b bytes), N a no-op and
    F = R[s+f] the final op (f bytes); "|" separates ops, each L lists the
    bytes it wraps:
      L[p+5] P L[p+5] | A | L[a] A | L[5] L[a] | L[a+15] A L[5] L[a] L[a+15] |
      B | L[m] B L[m] B L[m] | B | L[m] B N L[s+f] | B | N | L[s+f] F S | F
    Reading along, each op's output is exactly the next stretch of the file.
    The middle B repeats the m bytes just emitted yet must be the same token
    as the first B, so m = a+15 = 2b+10; N pads the third L[m] to m bytes.
    With a 10-byte header R[15] cannot be 5 bytes (the 5-byte-op layout of
    the article), hence the search for sizes with a = 2b-5.
    """
    for b in range(5, 40):
        a = 2 * b - 5
        A, B, N = repeat(p + 5, a), repeat(a + 15, b), repeat(0, b + 5)
        if A and B and N:
            break
    else:
        raise SystemExit('no layout found')
    f = next(f for f in range(1, 16) if len(final_repeat(s + f)) == f)
    F, m, Lf = final_repeat(s + f), 2 * b + 10, lit(s + f)

    def stream(P, S):
        return b''.join([
            lit(p + 5), P, lit(p + 5), A,
            lit(a), A,
            lit(5), lit(a),
            lit(a + 15), A, lit(5), lit(a), lit(a + 15),
            B, lit(m), B, lit(m), B, lit(m), B,
            lit(m), B, N, Lf,
            B, N,
            Lf, F, S, F])
    return stream


def solve_crc(make):
    """Find c with crc32(make(c)) == c.

    The field occurs twice (trailer, and its copy inside the stream), so
    solve rather than patch: CRC32 is affine over GF(2), crc32(make(c)) =
    base ^ M.c with column j of M the CRC change from flipping bit j of c.
    Gaussian elimination on (M + I).c = base; None if singular.
    """
    base = zlib.crc32(make(0))
    cols = [zlib.crc32(make(1 << j)) ^ base ^ (1 << j) for j in range(32)]
    # Row i: bit j = coefficient of c_j in equation i, bit 32 = right side.
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
    stream = build_stream(10, 8)
    # Minimal header: no flags, mtime 0. The OS byte is free, so it is the
    # fallback knob should the CRC system ever be singular.
    for os_byte in [255] + list(range(255)):
        P = b'\x1f\x8b\x08\x00\0\0\0\0\x00' + bytes([os_byte])
        size = len(P) + len(stream(P, bytes(8))) + 8

        def make(crc):
            S = struct.pack('<II', crc, size & 0xFFFFFFFF)
            return P + stream(P, S) + S
        crc = solve_crc(make)
        if crc is not None:
            return make(crc)
    raise SystemExit('CRC system singular for every OS byte')


def main():
    if len(sys.argv) != 2:
        sys.exit('usage: gzip_quine.py OUTPUT_PATH')
    with open(sys.argv[1], 'wb') as fh:
        fh.write(build())
    with open(sys.argv[1], 'rb') as fh:          # verify what is on disk
        data = fh.read()
    try:
        ok_gzip = gzip.decompress(data) == data   # checks CRC32 and ISIZE
        d = zlib.decompressobj(31)
        ok_zlib = (d.decompress(data) + d.flush() == data and d.eof
                   and not d.unused_data)
    except (OSError, EOFError, zlib.error) as exc:
        sys.exit(f'verification failed: {exc}')
    if not (ok_gzip and ok_zlib):
        sys.exit(f'verification failed: gzip={ok_gzip} zlib={ok_zlib}')
    print(f'wrote {len(data)}-byte gzip quine to {sys.argv[1]}: '
          f'gzip.decompress and zlib(wbits=31) reproduce it exactly')


if __name__ == '__main__':
    main()
