import CArchive
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where libarchive's output goes: a file descriptor, with each chunk's writeback to disk
/// started as soon as it is written, so that the fsync before the bundle is renamed into
/// place has little left to wait for.
final class DescriptorOutput {
    let descriptor: Int32
    private var offset: off_t = 0
    /// Where the bytes not yet handed to writeback start: libarchive writes 10 KiB blocks,
    /// and writeback is started a MiB at a time.
    private var unflushedStart: off_t = 0
    /// Why the last write failed (libarchive only learns that it did).
    private(set) var failure: String?

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        var written = 0
        while written < bytes.count {
            let count = Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                failure = FileError.reason(errno)
                return -1
            }
            written += count
        }
        offset += off_t(bytes.count)
        #if os(Linux)
        if offset - unflushedStart >= 1 << 20 {
            _ = posix_fadvise(descriptor, unflushedStart, offset - unflushedStart, POSIX_FADV_DONTNEED)
            unflushedStart = offset
        }
        #endif
        return bytes.count
    }

    /// Opens `archive` to write through this output (which must outlive it).
    func open(_ archive: OpaquePointer) -> Int32 {
        archive_write_open2(archive, Unmanaged.passUnretained(self).toOpaque(), nil, { _, context, buffer, length in
            let output = Unmanaged<DescriptorOutput>.fromOpaque(context!).takeUnretainedValue()
            guard let buffer else { return -1 }
            return output.write(UnsafeRawBufferPointer(start: buffer, count: length))
        }, nil, nil)
    }
}
