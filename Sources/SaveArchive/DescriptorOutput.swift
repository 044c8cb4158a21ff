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
    private var writeback = EarlyWriteback()
    /// Why the last write failed (libarchive only learns that it did).
    private(set) var failure: String?

    init(_ descriptor: Int32) { self.descriptor = descriptor }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        let code = FileIO.writeAll(bytes, to: descriptor)
        guard code == 0 else {
            failure = FileError.reason(code)
            return -1
        }
        writeback.wrote(bytes.count, to: descriptor)
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
