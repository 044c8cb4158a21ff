import CArchive
import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads an archive entry by entry, streaming: only the current block of the current entry
/// is in memory, whatever the size of the archive.
///
/// ```swift
/// let reader = try ArchiveReader(path: "backup.tar.gz")
/// while let entry = try reader.next() {
///     var buffer = [UInt8](repeating: 0, count: 1 << 16)
///     while case let count = try reader.read(into: &buffer), count > 0 { … }
/// }
/// ```
///
/// Nothing is left to libarchive's bidding, which would stack filter on filter without end
/// (a gzip whose content is itself) and start external programs (`lzop -d`, `lrzip -d`) for
/// some formats. The compression layers are read from the magic bytes here and set
/// explicitly, each one in-process or refused:
/// - ``Reading/bundle``: at most one layer of gzip, zstd or xz (or none) over tar or zip;
/// - ``Reading/anyArchive``: up to ``maxLayers`` in-process layers (bzip2, lz4, compress …
///   too) over any format libarchive reads in-process (7z, rar, cpio, iso, ar …).
/// What the layers expand to is bounded by ``maxExpansion`` times the archive's size. Every
/// libarchive warning is an error (a zip CRC mismatch comes only as one), except a name that
/// is not UTF-8, which is kept byte for byte (``ArchiveEntryInfo/rawPath``).
///
/// A bundle read from a file is decompressed on a thread of its own (``DecompressionPipeline``),
/// as `tar -xz` reads from a `gzip` process, and a tar stream so decompressed is read by
/// ``TarReader`` rather than libarchive's reader.
public final class ArchiveReader {
    public let path: String
    private let archive: OpaquePointer
    private let entry: OpaquePointer
    private var currentPath: String?
    /// The archive's own size, against which expansion is bounded.
    private let compressedSize: Int64
    /// Bundles are bounded by their manifest's declared sizes instead (checked by the importer).
    private var boundsExpansion = true

    /// What an archive may be.
    public enum Reading: Sendable {
        /// A save bundle: tar or zip, under at most one layer of gzip, zstd or xz.
        case bundle
        /// Anything libarchive reads in-process, for `inspect` and `convert`.
        case anyArchive
    }

    /// The most compression layers read in ``Reading/anyArchive`` (a `.tar.gz.xz` has two).
    public static let maxLayers = 3
    /// The most bytes the layers may expand to, per byte of archive, beyond a first 64 MiB.
    public static let maxExpansion: Int64 = 200

    public init(path: String, reading: Reading = .bundle) throws(ArchiveError) {
        let size: Int64, head: [UInt8]
        (size, head) = try Self.head(of: path)
        let layers = try Self.layers(head: head, name: path, reading: reading) { layers throws(ArchiveError) in
            try Self.probe(layers, name: path) { archive in archive_read_open_filename(archive, path, 1 << 16) }
        }
        // A bundle's one layer is decompressed on a thread of its own.
        let decompressing = reading == .bundle && layers.count == 1
        (self.path, archive, entry) = try Self.allocate(name: path, layers: decompressing ? [] : layers, reading: reading)
        compressedSize = size
        boundsExpansion = reading == .anyArchive
        let status: Int32
        if decompressing {
            let pipeline = DecompressionPipeline(path: path, layer: layers[0])
            self.pipeline = pipeline
            if let refusal = pipeline.refusal { throw .malformed(archive: path, entry: nil, message: refusal) }
            if TarReader.startsWithHeader(pipeline.peek(TarReader.blockSize)) {
                tar = TarReader(archive: path, nextBlock: pipeline.nextBlock, failure: { pipeline.failure })
                status = ARCHIVE_OK
            } else {
                status = UTF8Locale.run { pipeline.open(archive) }  // a zip, or what libarchive names best
            }
        } else {
            status = UTF8Locale.run { archive_read_open_filename(archive, path, 1 << 16) }
        }
        if status != ARCHIVE_OK {
            // Every stored property is set, so deinit runs and frees both.
            let text = pipeline?.failure ?? Self.message(archive)
            throw .malformed(archive: path, entry: nil, message: Self.openFailure(text, reading: reading, layers: layers))
        }
    }

    /// Decompression on a thread of its own, for a bundle read from a file.
    private var pipeline: DecompressionPipeline?
    /// The reader of a decompressed tar stream, which then takes libarchive's place.
    private var tar: TarReader?

    /// A reader of the formats `reading` allows, with `layers` (filter codes, outermost first) set.
    private static func allocate(name: String, layers: [Int32], reading: Reading) throws(ArchiveError) -> (String, OpaquePointer, OpaquePointer) {
        guard let archive = archive_read_new() else {
            throw .unreadable(archive: name, message: "libarchive could not allocate a reader")
        }
        // Tied to the reader, an entry's name conversions reuse one converter; an entry of its
        // own opened and closed iconv for every name asked for as UTF-8.
        guard let entry = archive_entry_new2(archive) else {
            archive_read_free(archive)
            throw .unreadable(archive: name, message: "libarchive could not allocate an entry")
        }
        if layers == [ARCHIVE_FILTER_COMPRESS] {
            // libarchive 3.6.2 crashes when compress is set explicitly: it is let bid, alone.
            archive_read_support_filter_compress(archive)
        } else {
            for layer in layers where archive_read_append_filter(archive, layer) != ARCHIVE_OK {
                // A filter that libarchive would run as an external program answers with a warning.
                let message = "its \(Compression.name(of: layer)) compression cannot be read in-process, expected one savetool reads itself"
                archive_entry_free(entry)
                archive_read_free(archive)
                throw .malformed(archive: name, entry: nil, message: message)
            }
        }
        switch reading {
        case .bundle:
            archive_read_support_format_tar(archive)
            archive_read_support_format_gnutar(archive)
            archive_read_support_format_zip(archive)
        case .anyArchive:
            archive_read_support_format_all(archive)
        }
        return (name, archive, entry)
    }

    /// Reads an archive held in memory; `bytes` must stay alive as long as the reader.
    private var memory: UnsafeMutableRawBufferPointer?

    public init(bytes: [UInt8], name: String, reading: Reading = .anyArchive) throws(ArchiveError) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
        let layers: [Int32]
        do {
            layers = try Self.layers(head: Array(bytes.prefix(Self.headLength)), name: name, reading: reading) { layers throws(ArchiveError) in
                try Self.probe(layers, name: name) { archive in archive_read_open_memory(archive, copy.baseAddress, bytes.count) }
            }
            (self.path, archive, entry) = try Self.allocate(name: name, layers: layers, reading: reading)
        } catch {
            copy.deallocate()
            throw error
        }
        memory = copy
        compressedSize = Int64(bytes.count)
        boundsExpansion = reading == .anyArchive
        let status = UTF8Locale.run { archive_read_open_memory(archive, copy.baseAddress, bytes.count) }
        if status != ARCHIVE_OK { throw .malformed(archive: name, entry: nil, message: Self.openFailure(archive, reading: reading, layers: layers)) }
    }

    // MARK: - Compression layers

    private static let headLength = 512

    /// The archive's size and first bytes.
    private static func head(of path: String) throws(ArchiveError) -> (Int64, [UInt8]) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(archive: path, message: FileError.reason(errno)) }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .unreadable(archive: path, message: FileError.reason(errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .unreadable(archive: path, message: "not a regular file, expected an archive") }
        var head = [UInt8](repeating: 0, count: headLength)
        let count = head.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, headLength) }
        guard count >= 0 else { throw .unreadable(archive: path, message: FileError.reason(errno)) }
        return (Int64(info.st_size), Array(head.prefix(count)))
    }

    /// The compression layers over the archive, outermost first, found by magic bytes: each
    /// layer's first decompressed bytes are read (`probe`) to find the next.
    private static func layers(
        head: [UInt8], name: String, reading: Reading, probe: ([Int32]) throws(ArchiveError) -> [UInt8]
    ) throws(ArchiveError) -> [Int32] {
        var layers: [Int32] = []
        var head = head
        while let compression = Compression(magic: head) {
            guard let code = compression.filter else {
                throw .malformed(archive: name, entry: nil, message: "compressed with \(compression.name), which only an external program reads; refused, since an archive must not choose a program to run")
            }
            switch reading {
            case .bundle:
                guard layers.isEmpty, [.gzip, .zstd, .xz].contains(compression) else {
                    let found = layers.isEmpty ? "compressed with \(compression.name)" : "compressed twice (\(compression.name) inside)"
                    throw .malformed(archive: name, entry: nil, message: "\(found), expected a bundle: tar or zip with at most one layer of gzip, zstd or xz")
                }
                return [code]
            case .anyArchive:
                if compression == .compress {
                    // Read by bidding (see allocate), so only as the one layer, never inside another.
                    guard layers.isEmpty else {
                        throw .malformed(archive: name, entry: nil, message: "compress (.Z) inside another compression, expected it as the only layer")
                    }
                    return [code]
                }
                guard layers.count < maxLayers else {
                    throw .malformed(archive: name, entry: nil, message: "more than \(maxLayers) layers of compression, expected an archive compressed at most \(maxLayers) times")
                }
                layers.append(code)
                head = try probe(layers)
            }
        }
        return layers
    }

    /// The first bytes of what `layers` decompress to.
    private static func probe(_ layers: [Int32], name: String, open: (OpaquePointer) -> Int32) throws(ArchiveError) -> [UInt8] {
        guard let archive = archive_read_new() else { throw .unreadable(archive: name, message: "libarchive could not allocate a reader") }
        defer { archive_read_free(archive) }
        for layer in layers where archive_read_append_filter(archive, layer) != ARCHIVE_OK {
            throw .malformed(archive: name, entry: nil, message: "its \(Compression.name(of: layer)) compression cannot be read in-process, expected one savetool reads itself")
        }
        archive_read_support_format_raw(archive)
        var entry: OpaquePointer?
        guard UTF8Locale.run({ open(archive) }) == ARCHIVE_OK, archive_read_next_header(archive, &entry) == ARCHIVE_OK else {
            // libarchive's words ("Unrecognized archive format") say neither what was found nor
            // what was expected: most often a file cut short.
            let compression = Compression.name(of: layers.last!), said = message(archive)
            let detail = said.hasPrefix("Unrecognized archive format") ? "" : " (\(said))"
            throw .malformed(
                archive: name, entry: nil,
                message: "\(compression) data that is cut short or damaged\(detail) (a truncated or damaged file?), expected a whole \(compression) stream")
        }
        var head = [UInt8](repeating: 0, count: headLength)
        var filled = 0
        while filled < headLength {
            let count = head.withUnsafeMutableBytes { archive_read_data(archive, $0.baseAddress! + filled, headLength - filled) }
            guard count > 0 else { break }
            filled += count
        }
        return Array(head.prefix(filled))
    }

    /// The compressions recognised by their magic bytes.
    enum Compression: Equatable {
        case gzip, zstd, xz, bzip2, lz4, compress, lzip
        /// Read by libarchive only through an external program: always refused.
        case external(String)

        init?(magic head: [UInt8]) {
            func starts(_ magic: [UInt8]) -> Bool { head.starts(with: magic) }
            if starts([0x1F, 0x8B]) { self = .gzip }
            else if starts([0x28, 0xB5, 0x2F, 0xFD]) { self = .zstd }
            else if starts([0xFD, 0x37, 0x7A, 0x58, 0x5A, 0x00]) { self = .xz }
            else if starts(Array("BZh".utf8)) { self = .bzip2 }
            else if starts([0x04, 0x22, 0x4D, 0x18]) { self = .lz4 }
            else if starts([0x1F, 0x9D]) { self = .compress }
            else if starts(Array("LZIP".utf8)) { self = .lzip }
            else if starts([0x89, 0x4C, 0x5A, 0x4F, 0x00, 0x0D, 0x0A, 0x1A]) { self = .external("lzop") }
            else if starts(Array("LRZI".utf8)) { self = .external("lrzip") }
            else if starts(Array("GRZipII".utf8)) { self = .external("grzip") }
            else { return nil }
        }

        var filter: Int32? {
            switch self {
            case .gzip: ARCHIVE_FILTER_GZIP
            case .zstd: ARCHIVE_FILTER_ZSTD
            case .xz: ARCHIVE_FILTER_XZ
            case .bzip2: ARCHIVE_FILTER_BZIP2
            case .lz4: ARCHIVE_FILTER_LZ4
            case .compress: ARCHIVE_FILTER_COMPRESS
            case .lzip: ARCHIVE_FILTER_LZIP
            case .external: nil
            }
        }

        var name: String {
            switch self {
            case .gzip: "gzip"
            case .zstd: "zstd"
            case .xz: "xz"
            case .bzip2: "bzip2"
            case .lz4: "lz4"
            case .compress: "compress (.Z)"
            case .lzip: "lzip"
            case .external(let name): name
            }
        }

        static func name(of filter: Int32) -> String {
            [Compression.gzip, .zstd, .xz, .bzip2, .lz4, .compress, .lzip].first { $0.filter == filter }?.name ?? "filter \(filter)"
        }
    }

    /// Why an archive could not be opened, in words: libarchive's "Unrecognized archive format"
    /// says neither what was found nor what was expected.
    private static func openFailure(_ archive: OpaquePointer, reading: Reading, layers: [Int32]) -> String {
        openFailure(message(archive), reading: reading, layers: layers)
    }

    private static func openFailure(_ text: String, reading: Reading, layers: [Int32]) -> String {
        guard text.hasPrefix("Unrecognized archive format") else { return "damaged archive: \(text)" }
        // The compression was recognised and what it holds was not: most often a file cut short.
        if let layer = layers.last, reading == .bundle {
            return "\(Compression.name(of: layer)) data that is not a tar or zip archive, or is cut short (a truncated or damaged file?), "
                + "expected a bundle (tar or zip, compressed with gzip, zstd or xz, or not at all)"
        }
        return switch reading {
        case .bundle: "not a tar or zip archive, expected a bundle (tar or zip, compressed with gzip, zstd or xz, or not at all)"
        case .anyArchive: "not an archive format savetool reads, expected tar, zip, 7z, rar, cpio, iso, ar or another libarchive reads in-process"
        }
    }

    deinit {
        archive_entry_free(entry)  // tied to the reader: freed first
        archive_read_free(archive)
        pipeline?.stop()
        memory?.deallocate()
    }

    /// The whole data of the entry named `path`, or `nil` when the archive has none.
    public func contents(of path: String, limit: Int = 256 << 20) throws(ArchiveError) -> [UInt8]? {
        while let info = try next() {
            guard info.path == path else { continue }
            switch info.kind {
            case .file: break
            case .directory: throw .malformed(archive: self.path, entry: path, message: "a folder, expected a file (name one of the files in it)")
            case .symbolicLink(let target): throw .malformed(archive: self.path, entry: path, message: "a link to \(target), expected a file")
            case .hardLink(let target): throw .malformed(archive: self.path, entry: path, message: "a hard link to \(target), expected the file it names")
            case .special(let description): throw .malformed(archive: self.path, entry: path, message: "a \(description), expected a file")
            }
            guard let data = try readEntry(limit: limit) else {
                throw .malformed(archive: self.path, entry: path, message: "larger than \(limit) bytes, expected a document")
            }
            return data
        }
        return nil
    }

    /// The rest of the current entry's data, or `nil` as soon as it grows past `limit` bytes:
    /// a header's size can be absent or wrong, so the bound is checked on what is read.
    public func readEntry(limit: Int) throws(ArchiveError) -> [UInt8]? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while case let count = try read(into: &buffer), count > 0 {
            data += buffer[..<count]
            if data.count > limit { return nil }
        }
        return data
    }

    /// The next entry's header, or `nil` at the end of the archive.
    public func next() throws(ArchiveError) -> ArchiveEntryInfo? {
        if let tar { return try tar.next() }
        // Under compression, skipping an entry means inflating it: done here, in bounded steps,
        // so that a bomb stops at the bound instead of inside libarchive's skip.
        if currentPath != nil && archive_filter_count(archive) > 1 {
            var scratch = [UInt8](repeating: 0, count: 1 << 16)
            while try read(into: &scratch) > 0 {}
        }
        let status = UTF8Locale.run { archive_read_next_header2(archive, entry) }
        if status == ARCHIVE_EOF { return nil }
        // A name in a foreign encoding (a zip written on a cp866 or cp932 system) comes as a
        // warning; it is kept byte for byte rather than refused, as bsdtar lists it.
        let foreignName = status == ARCHIVE_WARN && Self.message(archive).contains("cannot be converted")
        guard status == ARCHIVE_OK || foreignName else { throw malformed(after: currentPath) }
        try checkExpansion()
        var rawPath: [UInt8]?
        let name: String
        if let ascii = Self.asciiString(archive_entry_pathname(entry)) {
            name = ascii  // the same in every encoding: no conversion asked for
        } else if let utf8 = Self.string(UTF8Locale.run { archive_entry_pathname_utf8(entry) }) ?? Self.string(archive_entry_pathname(entry)) {
            name = utf8
        } else if let pointer = archive_entry_pathname(entry) {
            let bytes = Array(UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
            rawPath = bytes
            name = String(decoding: bytes, as: UTF8.self)
        } else {
            throw .malformed(archive: path, entry: currentPath.map { "after \($0)" }, message: "an entry without a name, expected every entry named")
        }
        currentPath = name
        let type = archive_entry_filetype(entry)
        let kind: ArchiveEntryInfo.Kind
        // Converted in the locale the header was read in: an entry tied to the reader keeps the
        // character set of its first conversion for the rest of the archive.
        if let target = Self.string(UTF8Locale.run { archive_entry_hardlink_utf8(entry) }).map(ExactFileName.carried) ?? Self.exactString(archive_entry_hardlink(entry)) {
            kind = .hardLink(target: target)
        } else {
            switch type & EntryType.mask {
            case EntryType.regular: kind = .file
            case EntryType.directory: kind = .directory
            case EntryType.symbolicLink:
                kind = .symbolicLink(target: Self.string(UTF8Locale.run { archive_entry_symlink_utf8(entry) }).map(ExactFileName.carried) ?? Self.exactString(archive_entry_symlink(entry)) ?? "")
            case EntryType.characterDevice: kind = .special("character device")
            case EntryType.blockDevice: kind = .special("block device")
            case EntryType.fifo: kind = .special("FIFO")
            case EntryType.socket: kind = .special("socket")
            default: kind = .special("entry of type 0o\(String(type, radix: 8))")
            }
        }
        var path = name
        if kind == .directory {
            while path.count > 1 && path.hasSuffix("/") { path.removeLast() }  // tar and zip store "dir/"
            while (rawPath?.count ?? 0) > 1 && rawPath?.last == UInt8(ascii: "/") { rawPath?.removeLast() }
        }
        let size = archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : nil
        let modified = archive_entry_mtime_is_set(entry) != 0
            ? Date(timeIntervalSince1970: Double(archive_entry_mtime(entry)) + Double(archive_entry_mtime_nsec(entry)) / 1e9) : nil
        var info = ArchiveEntryInfo(path: path, kind: kind, size: size, permissions: UInt16(archive_entry_perm(entry) & 0o7777), modified: modified)
        info.rawPath = rawPath
        return info
    }

    /// Reads the current entry's data into `buffer`; returns the count, 0 at the end of the entry.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> Int {
        if let tar { return try tar.read(into: buffer) }
        let count = archive_read_data(archive, buffer.baseAddress, buffer.count)
        guard count >= 0 else { throw malformed(after: currentPath) }
        try checkExpansion()
        return count
    }

    /// The next bytes of the current entry, valid until the reader is next used: where the
    /// tar reader holds them (no copy), or else read into `buffer`. Empty after the last.
    public func chunk(orInto buffer: UnsafeMutableRawBufferPointer) throws(ArchiveError) -> UnsafeRawBufferPointer {
        if let tar { return try tar.borrowChunk() }
        let count = try read(into: buffer)
        return UnsafeRawBufferPointer(rebasing: buffer[..<count])
    }

    public func read(into buffer: inout [UInt8]) throws(ArchiveError) -> Int {
        let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(ArchiveError) -> Int in try read(into: raw) } }
        return try result.get()
    }

    /// libarchive's name of the format read so far (`POSIX pax interchange format`, `7-Zip`), once an entry was read.
    public var formatName: String? { tar != nil ? "tar" : Self.string(archive_format_name(archive)) }

    /// Compression bombs stop here: what the layers expanded to is bounded by the archive's size.
    private func checkExpansion() throws(ArchiveError) {
        guard boundsExpansion else { return }
        let expanded = archive_filter_bytes(archive, 0)
        let bound = (64 << 20) + Self.maxExpansion * max(compressedSize, 1)
        guard expanded <= bound else {
            throw .malformed(archive: path, entry: currentPath, message: "expands to more than \(bound) bytes from \(compressedSize), expected at most \(Self.maxExpansion) times the archive's size (a compression bomb?)")
        }
    }

    private func malformed(after entry: String?) -> ArchiveError {
        .malformed(archive: path, entry: entry, message: pipeline?.failure ?? Self.message(archive))
    }

    static func message(_ archive: OpaquePointer) -> String {
        string(archive_error_string(archive)) ?? "damaged or truncated, expected a complete archive"
    }

    static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.flatMap { String(validatingCString: $0) }
    }

    /// The text at `pointer` when it is all ASCII (most names are); `nil` otherwise.
    static func asciiString(_ pointer: UnsafePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: strlen(pointer))
        return !bytes.isEmpty && ExactFileName.isASCII(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// A name libarchive holds as bytes (a link target that is not UTF-8), as ``ExactFileName`` carries it.
    static func exactString(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { ExactFileName.string(UnsafeRawBufferPointer(start: $0, count: strlen($0))) }
    }
}
