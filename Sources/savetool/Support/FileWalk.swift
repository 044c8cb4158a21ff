import Foundation
import SaveKit
import SaveToolCLI

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
        /// Which of `paths` it was found under.
        var argument: Int

        /// The whole path, made absolute: what a kind's `files` patterns are matched against
        /// (a pattern matches the end of it), so that `migrate Documents` and `migrate .` inside
        /// it recognise the same files.
        var claimPath: String {
            // A path without `.`, `..` or empty segments is standard as it is: only made
            // absolute (Foundation's URL for every file was 9% of a batch migration's samples).
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            let plain = !segments.dropFirst().contains { $0.isEmpty || $0 == "." || $0 == ".." } && segments.first != "." && segments.first != ".."
            guard plain else { return URL(fileURLWithPath: path).standardizedFileURL.path }
            if path.hasPrefix("/") { return path }
            return FileWalk.currentDirectory == "/" ? "/" + path : FileWalk.currentDirectory + "/" + path
        }
    }

    /// The working directory, once: a command does not change it while it walks.
    static let currentDirectory = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path

    var paths: [String]
    /// Removes the temporary files a killed savetool left in the walked directories (a run that
    /// rewrites files in place, where no other savetool should be writing).
    var removesAbandonedTemporaryFiles = false

    /// Checks that every path exists, before anything is done.
    func checkPathsExist() throws {
        for path in paths where !FileManager.default.fileExists(atPath: path) {
            throw FileError.unreadable(path: path, reason: "no such file or directory")
        }
    }

    /// The directory each argument's relative paths start from: itself, or a file's folder.
    func root(of argument: Int) -> String {
        let path = paths[argument]
        return isDirectory(path, followingLinks: true) ? path : FileIO.parentDirectory(of: path)
    }


    /// Calls `body` with every file, in a stable order; `false` from `body` stops the walk.
    func forEach(_ body: (File) throws -> Bool) throws {
        for (argument, path) in paths.enumerated() {
            if isDirectory(path, followingLinks: true) {
                guard try walk(path, relative: "", argument: argument, body) else { return }
            } else {
                guard try body(File(path: path, relative: URL(fileURLWithPath: path).lastPathComponent, argument: argument)) else { return }
            }
        }
    }

    /// How many files the walk would visit (for a progress bar's total).
    func count() throws -> Int {
        var total = 0
        try forEach { _ in total += 1; return true }
        return total
    }

    private func walk(_ directory: String, relative: String, argument: Int, _ body: (File) throws -> Bool) throws -> Bool {
        let all = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        if removesAbandonedTemporaryFiles {
            for name in all where FileIO.isTemporaryName(name) && isRegularFile(directory + "/" + name, followingLinks: false) {
                unlink(directory + "/" + name)
            }
        }
        let names = all.filter { !$0.hasPrefix(".") }.sorted()
        for name in names {
            let path = directory + "/" + name
            let inside = relative.isEmpty ? name : relative + "/" + name
            if isDirectory(path, followingLinks: false) {
                guard try walk(path, relative: inside, argument: argument, body) else { return false }
            } else if isRegularFile(path, followingLinks: true) {
                guard try body(File(path: path, relative: inside, argument: argument)) else { return false }
            }
        }
        return true
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
