import Foundation
import SaveKit

/// Reads a tar stream (ustar, pax and GNU's long names) from decompressed blocks, for bundles.
///
/// libarchive's tar reader turns every regular file's name into wide characters (`mbrtowc` a
/// character at a time) to look for a trailing slash, and copies each header through its entry
/// object: a fifth of the thread that checks the entries of a 100,000-file import. A bundle's
/// tar stream is simple (savetool writes its headers by hand, and older bundles came from
/// libarchive's pax writer), so it is read here, block by block, with every field checked:
/// a header's checksum and magic, octal and base-256 numbers, pax records and their lengths,
/// the stream's end. What this reader refuses, it names with the byte offset in the
/// decompressed stream. Anything that is not a ustar header at the start (a zip bundle) is
/// left to libarchive (``ArchiveReader``).
final class TarReader {
    private let archive: String
    /// The next decompressed block (valid until the next call), `nil` at the end or on a failure.
    private let nextBlock: () -> UnsafeRawBufferPointer?
    /// Why the blocks ended early, once they have: `nil` at a clean end.
    private let sourceFailure: () -> String?
    private var block = UnsafeRawBufferPointer(start: nil, count: 0)
    private var position = 0
    /// Bytes of the stream taken so far, for the offsets messages give.
    private var offset: Int64 = 0
    /// The current entry's data left to read, and the padding after it.
    private var remaining: Int64 = 0
    private var padding = 0
    private var currentPath: String?
    private var ended = false
    /// A header gathered from blocks that split it.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: blockSize, alignment: 8)

    static let blockSize = 512
    /// The most bytes of pax extended headers and GNU long names read before one entry,
    /// together (extended attributes are what makes a pax header long; only the few keys this
    /// reader uses are kept of it).
    static let maxExtensionSize: Int64 = 64 << 20

    init(archive: String, nextBlock: @escaping () -> UnsafeRawBufferPointer?, failure: @escaping () -> String?) {
        (self.archive, self.nextBlock, self.sourceFailure) = (archive, nextBlock, failure)
    }

    deinit { scratch.deallocate() }

    /// Whether `head`, a stream's first bytes, starts with a ustar header whose checksum holds.
    static func startsWithHeader(_ head: [UInt8]) -> Bool {
        guard head.count >= blockSize else { return false }
        return head.withUnsafeBytes { bytes in
            let header = UnsafeRawBufferPointer(rebasing: bytes[..<blockSize])
            return magic(of: header) != nil && checksumHolds(header)
        }
    }

    // MARK: - Entries

    /// The next entry's header, or `nil` at the end of the archive. The data left of the entry
    /// before is skipped.
    func next() throws(ArchiveError) -> ArchiveEntryInfo? {
        guard !ended else { return nil }
        try skipRest()
        var longName: [UInt8]?, longLink: [UInt8]?
        var pax: [String: [UInt8]] = [:]
        var sparse = false
        // The extensions before one entry, together: each is bounded, and so is their sum.
        var extensionBytes: Int64 = 0
        while true {
            let headerOffset = offset
            guard let header = try header() else {
                ended = true
                guard longName == nil, longLink == nil, pax.isEmpty else {
                    throw fault(at: headerOffset, "the archive ends after an extended header, expected the entry it describes")
                }
                return nil
            }
            guard let magic = Self.magic(of: header) else {
                throw fault(at: headerOffset, "a block that is not a tar header (no ustar magic), expected the next entry's header")
            }
            guard Self.checksumHolds(header) else {
                throw fault(at: headerOffset, "a tar header whose checksum does not match its bytes (a damaged archive?), expected a whole header")
            }
            let size = try number(header, 124, 12, at: headerOffset, field: "size")
            let typeflag = header[156]
            if Self.isExtension(typeflag) {
                extensionBytes += min(max(size, 0), Self.maxExtensionSize + 1)
                guard extensionBytes <= Self.maxExtensionSize else {
                    throw fault(at: headerOffset, "extended headers of more than \(Self.maxExtensionSize) bytes before one entry, expected at most that")
                }
            }
            switch typeflag {
            case UInt8(ascii: "x"), UInt8(ascii: "g"):
                let records = try extensionData(size, at: headerOffset, what: "pax extended header")
                let parsed = try Self.paxRecords(records) { message throws(ArchiveError) in throw fault(at: headerOffset, message) }
                // A global header's records hold for the whole archive; no key a bundle needs
                // may be global, so they are read (and checked) and set aside.
                if typeflag == UInt8(ascii: "x") {
                    pax.merge(parsed.records) { $1 }
                    sparse = sparse || parsed.sparse
                }
                continue
            case UInt8(ascii: "L"):
                longName = Self.trimmingNULs(try extensionData(size, at: headerOffset, what: "GNU long name"))
                continue
            case UInt8(ascii: "K"):
                longLink = Self.trimmingNULs(try extensionData(size, at: headerOffset, what: "GNU long link name"))
                continue
            default:
                break
            }
            if sparse {
                throw fault(at: headerOffset, "a file in GNU's sparse format, expected its bytes whole (a bundle keeps holes in its manifest)")
            }
            // The name: pax's, GNU's long one, or the header's (with ustar's prefix).
            var name = pax["path"] ?? longName ?? Self.field(header, 0, 100)
            if pax["path"] == nil && longName == nil && magic == .posix {
                let prefix = Self.field(header, 345, 155)
                if !prefix.isEmpty { name = prefix + [UInt8(ascii: "/")] + name }
            }
            let linkName = pax["linkpath"] ?? longLink ?? Self.field(header, 157, 100)
            var dataSize = size
            if let text = pax["size"] {
                guard let value = Self.decimal(text) else { throw fault(at: headerOffset, "a pax size that is not a decimal number, expected one") }
                dataSize = value
            }
            guard !name.isEmpty else {
                throw fault(at: headerOffset, "an entry without a name, expected every entry named")
            }
            let kind: ArchiveEntryInfo.Kind
            switch typeflag {
            case UInt8(ascii: "0"), 0, UInt8(ascii: "7"):
                kind = name.last == UInt8(ascii: "/") ? .directory : .file  // old tars mark folders so
            case UInt8(ascii: "1"): kind = .hardLink(target: ExactFileName.string(linkName))
            case UInt8(ascii: "2"): kind = .symbolicLink(target: ExactFileName.string(linkName))
            case UInt8(ascii: "3"): kind = .special("character device")
            case UInt8(ascii: "4"): kind = .special("block device")
            case UInt8(ascii: "5"): kind = .directory
            case UInt8(ascii: "6"): kind = .special("FIFO")
            default: kind = .special("entry of tar type '\(Self.printable(typeflag))'")
            }
            if kind != .file && dataSize != 0 {
                let what = ArchiveCodec.typeName(kind)
                let named = what.hasPrefix("entry") ? "an \(what)" : "a \(what) entry"
                throw fault(at: headerOffset, "\(named) with \(dataSize) bytes of data, expected none")
            }
            guard dataSize >= 0 else { throw fault(at: headerOffset, "a negative size, expected a size of 0 or more") }
            if kind == .directory {
                while name.count > 1 && name.last == UInt8(ascii: "/") { name.removeLast() }
            }
            let path = String(decoding: name, as: UTF8.self)
            let utf8 = String(validating: name, as: UTF8.self) != nil
            currentPath = utf8 ? path : ExactFileName.string(name)
            (remaining, padding) = (dataSize, Int((Int64(Self.blockSize) - dataSize % Int64(Self.blockSize)) % Int64(Self.blockSize)))
            let mode = try number(header, 100, 8, at: headerOffset, field: "mode")
            var info = ArchiveEntryInfo(path: path, kind: kind, size: dataSize, permissions: UInt16(truncatingIfNeeded: mode & 0o7777))
            if let seconds = try? number(header, 136, 12, at: headerOffset, field: "mtime") {
                info.modified = Date(timeIntervalSince1970: Double(seconds))
            }
            if !utf8 { info.rawPath = name }
            return info
        }
    }

    /// Reads the current entry's data into `buffer`; returns the count, 0 at the end of the entry.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        try read(into: buffer, inside: "the data of \(currentPath.map(ExactFileName.printable) ?? "an entry")")
    }

    /// The next bytes of the current entry's data where the decompressed stream holds them,
    /// valid until the reader is next used: read without a copy. Empty after the last.
    func borrowChunk() throws(ArchiveError) -> UnsafeRawBufferPointer {
        guard remaining > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        if position == block.count { try refill(for: "the data of \(currentPath.map(ExactFileName.printable) ?? "an entry")") }
        let count = min(Int(min(remaining, Int64(Int.max))), block.count - position)
        let chunk = UnsafeRawBufferPointer(rebasing: block[position..<position + count])
        position += count
        offset += Int64(count)
        remaining -= Int64(count)
        return chunk
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer, inside what: @autoclosure () -> String) throws(ArchiveError) -> Int {
        guard remaining > 0, buffer.count > 0 else { return 0 }
        if position == block.count { try refill(for: what()) }
        let count = min(Int(min(remaining, Int64(Int.max))), block.count - position, buffer.count)
        buffer.baseAddress!.copyMemory(from: block.baseAddress! + position, byteCount: count)
        position += count
        offset += Int64(count)
        remaining -= Int64(count)
        return count
    }

    /// Skips what is left of the current entry: its data and padding.
    private func skipRest(inside what: @autoclosure () -> String? = nil) throws(ArchiveError) {
        // In two steps: a size near 2^63 and its padding would overflow as one sum.
        let (data, after) = (remaining, Int64(padding))
        (remaining, padding) = (0, 0)
        // Two calls, not a loop over an array of the two: no allocation for every entry.
        try skip(data, inside: what())
        try skip(after, inside: what())
    }

    private func skip(_ count: Int64, inside what: @autoclosure () -> String?) throws(ArchiveError) {
        var left = count
        while left > 0 {
            if position == block.count { try refill(for: what() ?? "the data of \(currentPath.map(ExactFileName.printable) ?? "an entry")") }
            let step = Int(min(left, Int64(block.count - position)))
            position += step
            offset += Int64(step)
            left -= Int64(step)
        }
    }

    /// A pax extended header (`x`, global `g`) or a GNU long name or link (`L`, `K`): what
    /// describes the entry after it. A switch, not an array's `contains`, for every header.
    private static func isExtension(_ typeflag: UInt8) -> Bool {
        switch typeflag {
        case UInt8(ascii: "x"), UInt8(ascii: "g"), UInt8(ascii: "L"), UInt8(ascii: "K"): true
        default: false
        }
    }

    // MARK: - Blocks

    /// The next 512-byte header, or `nil` at the end of the archive: a block of zeros (one
    /// is enough, as for libarchive and GNU tar), or the stream ending where a header would
    /// begin.
    private func header() throws(ArchiveError) -> UnsafeRawBufferPointer? {
        if position == block.count {
            guard try refillOrEnd() else { return nil }
        }
        let header: UnsafeRawBufferPointer
        if block.count - position >= Self.blockSize {
            header = UnsafeRawBufferPointer(rebasing: block[position..<position + Self.blockSize])
            position += Self.blockSize
        } else {
            // Split between blocks: gathered in the scratch block.
            var filled = 0
            while filled < Self.blockSize {
                if position == block.count { try refill(for: "a tar header") }
                let count = min(Self.blockSize - filled, block.count - position)
                (scratch.baseAddress! + filled).copyMemory(from: block.baseAddress! + position, byteCount: count)
                (filled, position) = (filled + count, position + count)
            }
            header = UnsafeRawBufferPointer(scratch)
        }
        offset += Int64(Self.blockSize)
        return header.allSatisfy { $0 == 0 } ? nil : header
    }

    /// The data of an extension entry (pax records, a long name), bounded.
    private func extensionData(_ size: Int64, at headerOffset: Int64, what: String) throws(ArchiveError) -> [UInt8] {
        guard (0...Self.maxExtensionSize).contains(size) else {
            throw fault(at: headerOffset, "a \(what) of \(size) bytes, expected at most \(Self.maxExtensionSize)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(size))
        (remaining, padding) = (size, Int((Int64(Self.blockSize) - size % Int64(Self.blockSize)) % Int64(Self.blockSize)))
        defer { (remaining, padding) = (0, 0) }  // refused part-way, it is no entry's data
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes { raw in
                Result { () throws(ArchiveError) -> Int in try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), inside: "a \(what)") }
            }
            filled += try count.get()
        }
        try skipRest(inside: "a \(what)")
        return bytes
    }

    private func refill(for what: String) throws(ArchiveError) {
        guard try refillOrEnd() else {
            throw fault(at: offset, "the archive ends inside \(what) (a truncated file?), expected the rest")
        }
    }

    /// Takes the next block; `false` at the stream's clean end.
    private func refillOrEnd() throws(ArchiveError) -> Bool {
        while true {
            guard let next = nextBlock() else {
                if let failure = sourceFailure() { throw fault(at: offset, failure) }
                return false
            }
            (block, position) = (next, 0)
            if next.count > 0 { return true }
        }
    }

    private func fault(at headerOffset: Int64, _ message: String) -> ArchiveError {
        let after = currentPath.map { ", after \(ExactFileName.printable($0))" } ?? ""
        return ArchiveError.malformed(archive: archive, entry: nil, message: "at byte \(headerOffset) of the tar stream\(after): \(message)")
    }

    // MARK: - Fields

    enum Magic { case posix, gnu }

    /// ustar's magic: POSIX's `ustar\0` with version `00`, or GNU's `ustar  \0`.
    static func magic(of header: UnsafeRawBufferPointer) -> Magic? {
        guard header[257] == UInt8(ascii: "u"), header[258] == UInt8(ascii: "s"), header[259] == UInt8(ascii: "t"),
            header[260] == UInt8(ascii: "a"), header[261] == UInt8(ascii: "r")
        else { return nil }
        if header[262] == 0 { return .posix }
        if header[262] == UInt8(ascii: " "), header[263] == UInt8(ascii: " "), header[264] == 0 { return .gnu }
        return nil
    }

    /// The checksum field (148, eight bytes) holds the sum of the header's bytes with the field
    /// itself counted as spaces; some old tars summed signed bytes.
    static func checksumHolds(_ header: UnsafeRawBufferPointer) -> Bool {
        guard let stored = octal(header, 148, 8) else { return false }
        let field = 8 * Int(UInt8(ascii: " "))
        var unsigned = field
        for index in 0..<148 { unsigned &+= Int(header[index]) }
        for index in 156..<blockSize { unsigned &+= Int(header[index]) }
        if stored == unsigned { return true }
        var signed = field
        for index in 0..<blockSize where !(148..<156).contains(index) { signed &+= Int(Int8(bitPattern: header[index])) }
        return stored == signed
    }

    /// A numeric field: octal digits (leading spaces, ending in a space or NUL), or GNU's
    /// base-256 (the first byte's high bit set) for what octal cannot hold.
    private func number(_ header: UnsafeRawBufferPointer, _ start: Int, _ length: Int, at headerOffset: Int64, field: String) throws(ArchiveError) -> Int64 {
        if header[start] & 0x80 != 0 {
            // Base-256, big-endian, two's complement; more than 63 bits of value is refused.
            let negative = header[start] & 0x40 != 0
            var value: Int64 = negative ? -1 : 0
            for index in start..<start + length {
                let byte = index == start ? (header[index] & 0x7F) | (negative ? 0x80 : 0) : header[index]
                guard (value >> 55) == (negative ? -1 : 0) else {
                    throw fault(at: headerOffset, "a \(field) field too large to hold, expected at most 63 bits")
                }
                value = value << 8 | Int64(byte)
            }
            return value
        }
        guard let value = Self.octal(header, start, length) else {
            throw fault(at: headerOffset, "a \(field) field that is not an octal number, expected octal digits")
        }
        return Int64(value)
    }

    private static func octal(_ header: UnsafeRawBufferPointer, _ start: Int, _ length: Int) -> Int? {
        var index = start, end = start + length
        while index < end && header[index] == UInt8(ascii: " ") { index += 1 }
        var value = 0, digits = 0
        while index < end, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(header[index]) {
            guard value < Int.max >> 3 else { return nil }
            value = value << 3 | Int(header[index] - UInt8(ascii: "0"))
            (index, digits) = (index + 1, digits + 1)
        }
        // What follows the digits: spaces or NULs only (an empty field is 0, as tars read it).
        while end > index && (header[end - 1] == 0 || header[end - 1] == UInt8(ascii: " ")) { end -= 1 }
        return index == end ? value : nil
    }

    /// A text field up to its first NUL.
    private static func field(_ header: UnsafeRawBufferPointer, _ start: Int, _ length: Int) -> [UInt8] {
        let slice = header[start..<start + length]
        return Array(slice.prefix { $0 != 0 })
    }

    private static func trimmingNULs(_ bytes: [UInt8]) -> [UInt8] {
        Array(bytes.prefix { $0 != 0 })
    }

    private static func decimal(_ bytes: [UInt8]) -> Int64? {
        guard !bytes.isEmpty, bytes.count <= 19, bytes.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int64(String(decoding: bytes, as: UTF8.self))
    }

    private static func printable(_ byte: UInt8) -> String {
        (0x21...0x7E).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true)
    }

    /// The pax keys this reader uses: the rest (times, owners, extended attributes) come from
    /// the manifest, and are only checked for their form, not kept.
    static let paxKeysKept: Set<String> = ["path", "linkpath", "size"]

    /// pax records, `"<length> <key>=<value>\n"` each, the length counting the whole record;
    /// of their keys, ``paxKeysKept`` and whether one starts with `GNU.sparse.` (`sparse`).
    static func paxRecords(_ bytes: [UInt8], fail: (String) throws(ArchiveError) -> Never) throws(ArchiveError) -> (records: [String: [UInt8]], sparse: Bool) {
        var records: [String: [UInt8]] = [:]
        var sparse = false
        var start = 0
        while start < bytes.count {
            // At most 9 digits: a record is never longer than its header's data (64 MiB).
            var index = start, length = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]), index - start < 9 {
                length = length * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                index += 1
            }
            guard index > start, index < bytes.count, bytes[index] == UInt8(ascii: " "), length > index - start + 1,
                length <= bytes.count - start, bytes[start + length - 1] == UInt8(ascii: "\n")
            else {
                try fail("a pax record at its byte \(start) whose length does not hold, expected \"<length> <key>=<value>\\n\"")
            }
            let record = bytes[(index + 1)..<(start + length - 1)]
            guard let equals = record.firstIndex(of: UInt8(ascii: "=")), equals > record.startIndex else {
                try fail("a pax record at its byte \(start) without a key, expected \"<length> <key>=<value>\\n\"")
            }
            let key = String(decoding: record[..<equals], as: UTF8.self)
            if paxKeysKept.contains(key) { records[key] = Array(record[(equals + 1)...]) }
            sparse = sparse || key.hasPrefix("GNU.sparse.")
            start += length
        }
        return (records, sparse)
    }
}
