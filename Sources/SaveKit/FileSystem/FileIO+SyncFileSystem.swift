import CSaveToolSystem

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileIO {
    /// Puts everything written under `directory` on disk in one call: the file system's
    /// `syncfs` where there is one (an `fsync` per file costs far more for many small files),
    /// else an `fsync` of the directory.
    public static func syncFileSystem(containing directory: String) throws(FileError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .ioFailure(path: directory, operation: "flushing to disk", reason: FileError.reason(errno)) }
        defer { close(descriptor) }
        guard savetool_sync_file_system(descriptor) == 0 else {
            throw .ioFailure(path: directory, operation: "flushing to disk", reason: FileError.reason(errno))
        }
    }
}
