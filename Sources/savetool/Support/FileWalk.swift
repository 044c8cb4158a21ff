import Foundation
import SaveKit

/// The regular files under the paths a command was given, found one directory at a time.
///
/// Nothing is collected: a directory's names are listed, sorted and walked before the next is
/// read, so memory depends on the largest directory, not on how many files there are. Names
/// starting with `.` are skipped; a symbolic link to a file is followed, one to a directory is
/// not (so a link cannot lead the walk in circles).
struct FileWalk {
    struct File {
        var path: String
        /// The path relative to the argument it was found under (its name, for a file argument).
        var relative: String
    }

    var paths: [String]

    /// Checks that every path exists, before anything is done.
    func checkPathsExist() throws {
        for path in paths where !FileManager.default.fileExists(atPath: path) {
            throw FileError.unreadable(path: path, reason: "no such file or directory")
        }
    }

    /// The directory each argument counts as the root of: itself, or a file's folder.
    var roots: [String] {
        paths.map { path in isDirectory(path, followingLinks: true) ? path : FileIO.parentDirectory(of: path) }
    }

    /// Calls `body` with every file, in a stable order; `false` from `body` stops the walk.
    func forEach(_ body: (File) throws -> Bool) throws {
        for path in paths {
            if isDirectory(path, followingLinks: true) {
                guard try walk(path, relative: "", body) else { return }
            } else {
                guard try body(File(path: path, relative: URL(fileURLWithPath: path).lastPathComponent)) else { return }
            }
        }
    }

    /// How many files the walk would visit (for a progress bar's total).
    func count() throws -> Int {
        var total = 0
        try forEach { _ in total += 1; return true }
        return total
    }

    private func walk(_ directory: String, relative: String, _ body: (File) throws -> Bool) throws -> Bool {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        for name in names {
            let path = directory + "/" + name
            let inside = relative.isEmpty ? name : relative + "/" + name
            if isDirectory(path, followingLinks: false) {
                guard try walk(path, relative: inside, body) else { return false }
            } else if isRegularFile(path) {
                guard try body(File(path: path, relative: inside)) else { return false }
            }
        }
        return true
    }

    private func isDirectory(_ path: String, followingLinks: Bool) -> Bool {
        var status = stat()
        let result = followingLinks ? stat(path, &status) : lstat(path, &status)
        return result == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }

    private func isRegularFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
    }
}
