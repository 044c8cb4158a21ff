import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bytes written once and read back, in memory while they are few (up to 4 MiB) and in an unlinked temporary
/// file past ``memoryLimit``: how a manifest of a million entries is built and read without
/// holding it, as `sort` spills its runs.
///
/// The file is unlinked as soon as it is made, so nothing is left behind, even by a kill. It
/// lives in `TMPDIR` (else `/tmp`).
final class Spool {
    /// Past this many bytes the spool moves to a file.
    let memoryLimit: Int
    private var memory: [UInt8] = []
    private var descriptor: Int32 = -1
    private(set) var count = 0
    /// Bytes not yet written to the file (writes are gathered into 1 MiB).
    private var pending: [UInt8] = []

    init(memoryLimit: Int = 4 << 20) {
        self.memoryLimit = memoryLimit
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Whether the bytes live in a file.
    var isSpilled: Bool { descriptor >= 0 }

    /// The bytes, while they are in memory.
    var contents: [UInt8]? { descriptor < 0 ? memory : nil }

    func append<Bytes: Sequence>(contentsOf bytes: Bytes) throws where Bytes.Element == UInt8 {
        if descriptor < 0 {
            let before = memory.count
            memory.append(contentsOf: bytes)
            count += memory.count - before
            if memory.count > memoryLimit { try spill() }
            return
        }
        let before = pending.count
        pending.append(contentsOf: bytes)
        count += pending.count - before
        if pending.count >= 1 << 20 { try flush() }
    }

    func append(_ buffer: UnsafeRawBufferPointer) throws {
        try append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), count: buffer.count))
    }

    private func spill() throws {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/.savetool-spool-XXXXXX").utf8CString)
        // Close-on-exec: plugins started during an import's migration do not inherit it.
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else { throw BundleError.cannotCreate(path: directory, reason: "a temporary file: \(FileError.reason(errno))") }
        _ = fcntl(made, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        descriptor = made
        pending = memory
        memory = []
        try flush()
        // From here on only a write's worth is kept, not the capacity the memory had grown to.
        pending = []
        pending.reserveCapacity(1 << 20)
    }

    private func flush() throws {
        guard !pending.isEmpty else { return }
        let failure = pending.withUnsafeBytes { FileIO.writeAll($0, to: descriptor) }
        guard failure == 0 else { throw BundleError.ioFailure(path: "a temporary file", reason: FileError.reason(failure)) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Copies the bytes at `offset` into `buffer`; returns how many (fewer only at the end).
    func read(at offset: Int, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let wanted = max(0, min(buffer.count, count - offset))
        guard wanted > 0 else { return 0 }
        if descriptor < 0 {
            memory.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: wanted) }
            return wanted
        }
        try flush()
        var done = 0
        while done < wanted {
            let got = pread(descriptor, buffer.baseAddress! + done, wanted - done, off_t(offset + done))
            if got < 0 && errno == EINTR { continue }
            guard got > 0 else { throw BundleError.unreadable(path: "a temporary file", reason: got < 0 ? FileError.reason(errno) : "it ended early") }
            done += got
        }
        return done
    }

    /// The bytes in `range`, copied out.
    func bytes(in range: Range<Int>) throws -> [UInt8] {
        if descriptor < 0 { return Array(memory[range]) }
        return try [UInt8](unsafeUninitializedCapacity: range.count) { buffer, initialized in
            initialized = try read(at: range.lowerBound, into: UnsafeMutableRawBufferPointer(buffer))
        }
    }

    /// Calls `body` with every byte in order, a chunk at a time.
    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        if descriptor < 0 { return try memory.withUnsafeBytes(body) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < count {
            let got = try read(at: offset, into: buffer)
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<got]))
            offset += got
        }
    }

    /// Random access for ``ManifestLayout``: a window of the file kept in memory.
    var paged: SpoolBytes { SpoolBytes(self) }
}

/// A spool's bytes by index, through a 256 KiB window (the layout walks them mostly forward).
final class SpoolBytes: ManifestBytes {
    private let spool: Spool
    private let window = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 256 << 10)
    private var windowStart = 0
    private var windowCount = 0
    /// The first read failure, reported by the caller after the walk (a subscript cannot throw).
    private(set) var failure: (any Error)?

    init(_ spool: Spool) { self.spool = spool }
    deinit { window.deallocate() }

    var count: Int { spool.count }

    subscript(index: Int) -> UInt8 {
        // The layout reads every byte through here: the window's bytes without a call.
        @inline(__always) get {
            let offset = index &- windowStart
            if offset >= 0 && offset < windowCount { return window[offset] }
            return byteOutsideWindow(index)
        }
    }

    private func byteOutsideWindow(_ index: Int) -> UInt8 {
        // Back a little, so a scan that steps back a few bytes stays in the window.
        windowStart = max(0, index - 64)
        do {
            windowCount = try spool.read(at: windowStart, into: UnsafeMutableRawBufferPointer(window))
        } catch {
            failure = failure ?? error
            windowCount = 0
            return 0
        }
        return index < windowStart + windowCount ? window[index - windowStart] : 0
    }

    func bytes(in range: Range<Int>) -> [UInt8] {
        // An entry the layout has just walked is in the window: no read (one per entry was 5%
        // of a 100,000-file verify's samples).
        if range.lowerBound >= windowStart && range.upperBound <= windowStart + windowCount {
            return Array(window[(range.lowerBound - windowStart)..<(range.upperBound - windowStart)])
        }
        do { return try spool.bytes(in: range) } catch {
            failure = failure ?? error
            return []
        }
    }

    func withRun<Result>(from index: Int, atLeast: Int, _ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var offset = index &- windowStart
        // Re-windowed when the index is outside, or too near the end to hold what is asked for.
        if offset < 0 || offset >= windowCount || (windowCount - offset < atLeast && windowStart + windowCount < count) {
            windowStart = index
            do {
                windowCount = try spool.read(at: windowStart, into: UnsafeMutableRawBufferPointer(window))
            } catch {
                failure = failure ?? error
                windowCount = 0
            }
            offset = 0
        }
        return try body(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: window[offset..<max(offset, windowCount)])))
    }
}
