import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The regular files under the paths a command was given, found one directory at a time.
///
/// Nothing is collected: a directory's names are listed, sorted and walked before the next is
/// read, so memory depends on the largest directory, not on how many files there are. Names
/// starting with `.` are skipped; a symbolic link to a file is followed, one to a directory is
/// not (so a link cannot lead the walk in circles).
public struct FileWalk: Sendable {
    public struct File: Sendable {
        public var path: String
        /// The path relative to the argument it was found under (its name, for a file argument).
        public var relative: String
        /// Which of `paths` it was found under.
        public var argument: Int
        /// Why this entry cannot be handled: a folder that cannot be read, a name that is not
        /// UTF-8. A batch counts it as failed and goes on; a silent skip would report success
        /// for files nobody looked at.
        public var problem: String? = nil
        /// The problem is a name that is not UTF-8 (shown in ``path`` with its bytes as `\xE9`).
        public var nameIsNotUTF8 = false

        /// The whole path, made absolute: what a kind's `files` patterns are matched against
        /// (a pattern matches the end of it), so that `migrate Documents` and `migrate .` inside
        /// it recognise the same files.
        public var claimPath: String { Self.claimPath(of: path) }

        /// `path` made absolute and standard, as ``claimPath`` is.
        public static func claimPath(of path: String) -> String {
            // A path without `.`, `..` or empty segments is standard as it is: only made
            // absolute (Foundation's URL for every file was 9% of a batch migration's samples).
            guard isStandard(path) else { return URL(fileURLWithPath: path).standardizedFileURL.path }
            if path.hasPrefix("/") { return path }
            return FileWalk.currentDirectory == "/" ? "/" + path : FileWalk.currentDirectory + "/" + path
        }

        /// Whether no segment of `path` is empty (but a leading one: `/` begins an absolute
        /// path), `.` or `..`; read as bytes, with nothing split out.
        static func isStandard(_ path: String) -> Bool {
            var segmentLength = 0, dots = 0, first = true
            for byte in path.utf8 {
                if byte == UInt8(ascii: "/") {
                    if (segmentLength == 0 && !first) || (segmentLength > 0 && segmentLength == dots && dots <= 2) { return false }
                    (segmentLength, dots, first) = (0, 0, false)
                } else {
                    segmentLength += 1
                    if byte == UInt8(ascii: ".") { dots += 1 }
                }
            }
            return (segmentLength > 0 || first) && !(segmentLength > 0 && segmentLength == dots && dots <= 2)
        }
    }

    /// The working directory, once: a command does not change it while it walks.
    public static let currentDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path

    /// A file by device and inode, whatever path leads to it.
    public struct Identity: Hashable, Sendable {
        public var device: UInt64, inode: UInt64
        public init(_ info: stat) { (device, inode) = (UInt64(info.st_dev), UInt64(info.st_ino)) }
    }

    public var paths: [String]

    /// A folder given with a final slash (`saves/`, as shells complete it) is walked as
    /// `saves`, so that the paths found read `saves/a.json`, not `saves//a.json`.
    public init(paths: [String]) {
        self.paths = paths.map { path in
            var trimmed = Substring(path)
            while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
            return String(trimmed)
        }
    }
    /// Files the walk leaves out, by name and identity: a report being written among the files
    /// walked is not one of them.
    public var leavesOut: [(name: String, identity: Identity)] = []
    /// Removes the temporary files a killed savetool left in the walked directories (a run that
    /// rewrites files in place, where no other savetool should be writing).
    public var removesAbandonedTemporaryFiles = false

    /// Checks that every path exists, before anything is done.
    public func checkPathsExist() throws(FileError) {
        for path in paths where !FileManager.default.fileExists(atPath: path) {
            throw FileError.unreadable(path: path, reason: "no such file or directory")
        }
    }

    /// The directory each argument's relative paths start from: itself, or a file's folder.
    public func root(of argument: Int) -> String {
        let path = paths[argument]
        return isDirectory(path, followingLinks: true) ? path : FileIO.parentDirectory(of: path)
    }


    /// Calls `body` with every file, in a stable order; `false` from `body` stops the walk.
    public func forEach(_ body: (File) throws -> Bool) throws {
        for (argument, path) in paths.enumerated() {
            if isDirectory(path, followingLinks: true) {
                guard try walk(path, relative: "", argument: argument, body) else { return }
            } else {
                guard try body(File(path: path, relative: URL(fileURLWithPath: path).lastPathComponent, argument: argument)) else { return }
            }
        }
    }

    /// How many files the walk would visit (for a progress bar's total).
    public func count() throws -> Int {
        var total = 0
        try forEach { _ in total += 1; return true }
        return total
    }

    private func walk(_ directory: String, relative: String, argument: Int, _ body: (File) throws -> Bool) throws -> Bool {
        let entries: [(bytes: [UInt8], type: UInt8)]
        do {
            entries = try FileIO.entries(in: directory)
        } catch {
            guard case .unreadable(_, let reason) = error else { throw error }
            return try body(File(path: directory, relative: relative, argument: argument, problem: "a folder that cannot be read (\(reason)), expected one whose files can be listed"))
        }
        var names: [(name: String, type: UInt8)] = []
        names.reserveCapacity(entries.count)
        for entry in entries where !(entry.bytes.first == UInt8(ascii: ".") && !removesAbandonedTemporaryFiles) {
            guard let name = String(validating: entry.bytes, as: UTF8.self) else {
                let shownType = type(of: entry.type, at: directory + "/" + String(decoding: entry.bytes, as: UTF8.self))
                // Only what the walk would visit: a FIFO or socket is passed over whatever its name.
                if entry.bytes.first == UInt8(ascii: ".") || ![S_IFREG, S_IFDIR, S_IFLNK, 0].contains(shownType) { continue }
                let shown = ExactFileName.printable(ExactFileName.string(entry.bytes))
                let problem = "a name that is not UTF-8 (a byte that is not UTF-8 shown as \\x and two hex digits), expected UTF-8 names; rename it to include it"
                let inside = relative.isEmpty ? shown : relative + "/" + shown
                var file = File(path: directory + "/" + shown, relative: inside, argument: argument, problem: problem)
                file.nameIsNotUTF8 = true
                guard try body(file) else { return false }
                continue
            }
            if name.hasPrefix(".") {
                if removesAbandonedTemporaryFiles, FileIO.isTemporaryName(name), type(of: entry.type, at: directory + "/" + name) == S_IFREG {
                    unlink(directory + "/" + name)
                }
                continue
            }
            names.append((name, entry.type))
        }
        if !leavesOut.isEmpty {
            names.removeAll { entry in
                leavesOut.contains { left in
                    var info = stat()
                    return left.name == entry.name && stat(directory + "/" + entry.name, &info) == 0 && Identity(info) == left.identity
                }
            }
        }
        names.sort { $0.name < $1.name }
        for (name, entryType) in names {
            let path = directory + "/" + name
            let inside = relative.isEmpty ? name : relative + "/" + name
            // The folder listing says what most entries are: no `stat` per file, which on a
            // batch of small saves was two system calls of the dozen each file costs.
            switch type(of: entryType, at: path) {
            case S_IFDIR:
                // Looked at again just before going in (the listing may be a while old by now):
                // a folder swapped for a link since is not followed out of the tree.
                var info = stat()
                guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
                guard try walk(path, relative: inside, argument: argument, body) else { return false }
            case S_IFREG:
                guard try body(File(path: path, relative: inside, argument: argument)) else { return false }
            case S_IFLNK where isRegularFile(path, followingLinks: true):
                guard try body(File(path: path, relative: inside, argument: argument)) else { return false }
            default:
                continue
            }
        }
        return true
    }

    /// An entry's file type (`S_IFDIR`, `S_IFREG`, `S_IFLNK` …) from its `d_type`, asking the
    /// file system only where the listing did not say; 0 when it is gone.
    private func type(of entryType: UInt8, at path: String) -> mode_t {
        switch Int32(entryType) {
        case Int32(DT_DIR): return S_IFDIR
        case Int32(DT_REG): return S_IFREG
        case Int32(DT_LNK): return S_IFLNK
        default:
            var status = stat()
            guard lstat(path, &status) == 0 else { return 0 }
            return status.st_mode & S_IFMT
        }
    }

    private func isDirectory(_ path: String, followingLinks: Bool) -> Bool {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        return result == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    private func isRegularFile(_ path: String, followingLinks: Bool) -> Bool {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        return result == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }
}
