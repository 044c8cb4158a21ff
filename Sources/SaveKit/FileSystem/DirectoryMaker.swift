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
}
