#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a writer's bytes go: memory, or a file written in large chunks as they come.
public protocol ByteOutput {
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws
}

extension ByteOutput {
    @inline(__always)
    public mutating func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }
}

/// Bytes collected in memory.
public struct ByteArrayOutput: ByteOutput {
    public var bytes: [UInt8] = []
    public init(capacity: Int = 4096) { bytes.reserveCapacity(capacity) }
    public mutating func write(_ chunk: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: chunk)
    }
}

/// Any output behind one concrete type, for writers handed an output by the caller: they write
/// in 1 MB chunks, so the indirection costs nothing.
struct ErasedByteOutput: ByteOutput {
    var base: any ByteOutput
    mutating func write(_ bytes: UnsafeRawBufferPointer) throws { try base.write(bytes) }
}

/// Writers build their text in a buffer of their own and hand it on in large chunks.
///
/// A raw buffer rather than an `[UInt8]`: appending to an array checks its uniqueness and
/// capacity on every call, which costs more than the copying itself for short tokens.
struct ChunkedBuffer<Output: ByteOutput> {
    var output: Output
    private let storage: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// Bytes buffered and not yet handed on.
    private(set) var count = 0
    /// Bytes handed on to the output so far.
    private(set) var handedOn = 0
    private let chunkSize: Int
    /// Keeps the storage alive as long as any copy of the buffer.
    private let owner: Owner
    /// The output's failure during an append, thrown by the next ``flush()``.
    private var failure: (any Error)?

    private final class Owner {
        let pointer: UnsafeMutablePointer<UInt8>
        init(_ pointer: UnsafeMutablePointer<UInt8>) { self.pointer = pointer }
        deinit { pointer.deallocate() }
    }

    init(output: Output, chunkSize: Int = 1 << 20) {
        precondition(chunkSize >= 16, "the buffer (twice the chunk) holds at least a number's 20 digits")
        self.output = output
        self.chunkSize = chunkSize
        capacity = chunkSize * 2
        storage = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        owner = Owner(storage)
    }

    /// Makes room for `extra` bytes, handing on what is buffered if need be.
    @inline(__always)
    private mutating func reserve(_ extra: Int) throws {
        if count + extra > capacity { try flush() }
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count == capacity { flushKeepingFailure() }  // cannot happen between flushIfFull() calls
        storage[count] = byte
        count += 1
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity {
            flushKeepingFailure()
            if bytes.count > capacity {
                if failure == nil {
                    do { try output.write(UnsafeRawBufferPointer(bytes)) } catch { failure = error }
                    handedOn += bytes.count
                }
                return
            }
        }
        (storage + count).update(from: base, count: bytes.count)
        count += bytes.count
    }

    /// A flush inside an append, which cannot throw: a failure is kept for the next ``flush()``
    /// to throw, and what was buffered is dropped (the output has failed; nothing more reaches
    /// it), so the buffer never overflows.
    private mutating func flushKeepingFailure() {
        do { try flush() } catch {
            failure = failure ?? error
            count = 0
        }
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { append($0) }
    }

    /// Drops the last `n` bytes written.
    mutating func removeLast(_ n: Int) { count -= min(n, count) }

    /// Passes the buffer on once it is large; call after each value.
    @inline(__always)
    mutating func flushIfFull() throws {
        if count >= chunkSize { try flush() }
    }

    mutating func flush() throws {
        if let failure { throw failure }
        guard count > 0 else { return }
        try output.write(UnsafeRawBufferPointer(start: storage, count: count))
        handedOn += count
        count = 0
    }

    /// Where the next byte lands in the whole output: what was handed on and what is buffered
    /// (a flush inside an append, or a long run written straight through, moves bytes from one
    /// to the other).
    var position: Int { handedOn + count }

    /// Decimal digits without building a String.
    mutating func appendDecimal(_ number: Int64) {
        if number < 0 {
            append(UInt8(ascii: "-"))
            appendDecimal(number.magnitude)
        } else {
            appendDecimal(UInt64(number))
        }
    }

    mutating func appendDecimal(_ number: UInt64) {
        if number < 10 { append(UInt8(number) + 48); return }
        // Counted first, then written in place from the last digit, two at a time: the
        // digits of a save's many small integers were a tenth of writing its JSON, most of it
        // a `memcpy` call for two or three bytes.
        var length = 2
        var power: UInt64 = 100
        while length < 20 && number >= power {
            length += 1
            if length < 20 { power *= 10 }
        }
        if count + length > capacity { flushKeepingFailure() }
        var at = storage + count + length
        var rest = number
        Self.digitPairs.withUTF8Buffer { pairs in
            while rest >= 100 {
                let pair = Int(rest % 100) * 2
                rest /= 100
                at -= 2
                at[0] = pairs[pair]
                at[1] = pairs[pair + 1]
            }
            if rest >= 10 {
                at -= 2
                at[0] = pairs[Int(rest) * 2]
                at[1] = pairs[Int(rest) * 2 + 1]
            } else {
                at -= 1
                at[0] = UInt8(rest) + 48
            }
        }
        count += length
    }

    private static var digitPairs: StaticString {
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
    }

    /// A newline and `spaces` spaces (at most 1,024), written in place.
    @inline(__always)
    mutating func appendNewline(indentedBy spaces: Int) {
        let spaces = min(spaces, 2 * 512)
        guard 1 + spaces <= capacity else {  // a buffer smaller than the indentation
            append(0x0A)
            return appendSpaces(spaces)
        }
        if count + 1 + spaces > capacity { flushKeepingFailure() }
        storage[count] = 0x0A
        (storage + count + 1).update(repeating: 0x20, count: spaces)
        count += 1 + spaces
    }

    /// A number with leading zeros to `width` digits (dates).
    mutating func appendPadded(_ number: Int, width: Int) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var rest = number
        while divisor > 0 {
            append(UInt8(rest / divisor % 10) + 48)
            rest %= divisor
            divisor /= 10
        }
    }

    /// `count` spaces or tabs, for indentation.
    @inline(__always)
    mutating func appendSpaces(_ count: Int) {
        indentationSpaces.withUnsafeBufferPointer { append(UnsafeBufferPointer(rebasing: $0[..<min(count, $0.count)])) }
    }

    @inline(__always)
    mutating func appendTabs(_ count: Int) {
        indentationTabs.withUnsafeBufferPointer { append(UnsafeBufferPointer(rebasing: $0[..<min(count, $0.count)])) }
    }
}

private let indentationSpaces = [UInt8](repeating: 0x20, count: 2 * 512)
private let indentationTabs = [UInt8](repeating: 0x09, count: 512)
