#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Output folders made once each, whichever worker needs one first: a batch writing thousands
/// of files into a hundred folders asks the file system a hundred times, not thousands.
public final class DirectoryMaker: @unchecked Sendable {
    private var made = Set<String>()
    private let lock = NSLock()

    public init() {}

    /// Makes `path` and its missing parents, unless this maker already has.
    public func make(_ path: String) throws {
        // Under the lock: two threads making folders with a shared parent never race on it.
        try lock.withLock {
            guard !made.contains(path) else { return }
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            made.insert(path)
        }
    }

    /// Makes the folder `relative` inside `root` (a batch's destination, made too if missing,
    /// with `rootMode`), each missing folder with the mode of the folder of the same relative
    /// path under `source`, as `cp -r` makes them (less the umask): a private folder's copy stays
    /// private. A link where one of those folders goes is refused, never followed: a write
    /// through it would land outside the destination.
    public func make(_ relative: String, under root: String, modesFrom source: String, rootMode: mode_t = 0o777) throws(FileError) {
        let full = relative.isEmpty ? root : root + "/" + relative
        lock.lock()
        defer { lock.unlock() }
        guard !made.contains(full) else { return }
        if !made.contains(root) {
            var info = stat()
            if stat(root, &info) != 0 {
                do {
                    try FileManager.default.createDirectory(atPath: FileIO.parentDirectory(of: root), withIntermediateDirectories: true)
                } catch {
                    throw .cannotCreate(path: root, reason: FileError.reason(of: error))
                }
                guard mkdir(root, rootMode) == 0 || errno == EEXIST else { throw .cannotCreate(path: root, reason: FileError.reason(errno)) }
            }
            made.insert(root)
        }
        var place = root, from = source
        for name in relative.split(separator: "/") {
            (place, from) = (place + "/" + name, from + "/" + name)
            guard !made.contains(place) else { continue }
            var sourceInfo = stat()
            // The owner keeps full access, or the copies could not be written into it.
            let mode = stat(from, &sourceInfo) == 0 ? sourceInfo.st_mode & 0o777 | 0o700 : 0o777
            if mkdir(place, mode) != 0 {
                // There already (or made meanwhile by another process): looked at, not followed.
                var info = stat()
                guard errno == EEXIST, lstat(place, &info) == 0 else { throw .cannotCreate(path: place, reason: FileError.reason(errno)) }
                guard info.st_mode & S_IFMT == S_IFDIR else {
                    let why = info.st_mode & S_IFMT == S_IFLNK ? " (a write through it would land outside the destination)" : ""
                    throw .cannotCreate(path: place, reason: "\(FileIO.describeType(info.st_mode)), expected a folder\(why)")
                }
            }
            made.insert(place)
        }
        made.insert(full)
    }
}
