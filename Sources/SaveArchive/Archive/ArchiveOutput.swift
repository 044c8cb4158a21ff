import CArchive
import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where libarchive's output goes: a file descriptor, with each chunk's writeback to disk
/// started as soon as it is written (so that the fsync before a bundle is renamed into place
/// has little left to wait for), or any ``ByteOutput`` (an upload, as the bundle is made).
public final class ArchiveOutput {
    private enum Target {
        case descriptor(Int32, EarlyWriteback?)
        case sink(any ByteOutput)
    }

    private var target: Target
    /// The compressor's thread writes, and the writer's reads what went wrong: guarded.
    private let lock = NSLock()
    private var failureText: String?
    private var firstSinkError: (any Error)?

    /// Why the first failed write failed (libarchive only learns that it did).
    var failure: String? { lock.withLock { failureText } }
    /// The error a sink threw, as it was, for the caller to rethrow.
    public var sinkError: (any Error)? { lock.withLock { firstSinkError } }

    /// Writes to `descriptor`, which stays open. With `earlyWriteback` false, written bytes are
    /// left in the page cache for a while: for a spool that is read back soon after.
    public init(descriptor: Int32, earlyWriteback: Bool = true) { target = .descriptor(descriptor, earlyWriteback ? EarlyWriteback() : nil) }

    /// Writes to `sink`.
    public init(sink: any ByteOutput) { target = .sink(sink) }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        switch target {
        case .descriptor(let descriptor, var writeback):
            let code = FileIO.writeAll(bytes, to: descriptor)
            guard code == 0 else {
                lock.withLock { if failureText == nil { failureText = FileError.reason(code) } }
                return -1
            }
            if writeback != nil {
                writeback!.wrote(bytes.count, to: descriptor)
                target = .descriptor(descriptor, writeback)
            }
        case .sink(var sink):
            do {
                try sink.write(bytes)
                target = .sink(sink)
            } catch {
                // The first error is the one that stopped the writing; later ones follow from it.
                lock.withLock { if firstSinkError == nil { (failureText, firstSinkError) = ("\(error)", error) } }
                return -1
            }
        }
        return bytes.count
    }

    /// Opens `archive` to write through this output (which must outlive it).
    func open(_ archive: OpaquePointer) -> Int32 {
        archive_write_open2(archive, Unmanaged.passUnretained(self).toOpaque(), nil, { _, context, buffer, length in
            let output = Unmanaged<ArchiveOutput>.fromOpaque(context!).takeUnretainedValue()
            guard let buffer else { return -1 }
            return output.write(UnsafeRawBufferPointer(start: buffer, count: length))
        }, nil, nil)
    }
}
