import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks made before any file is touched: that every path exists, that the folder for the
/// copies can be made and is not among the files, that a report does not take a save's place.
extension BatchMigration {
    /// Checks the paths and the destination before anything is read or written.
    public func checkPlaces() throws {
        try FileWalk(paths: paths).checkPathsExist()
        guard let out = destination.folder else { return }
        var found = stat()
        if stat(out, &found) == 0, found.st_mode & S_IFMT != S_IFDIR {
            throw SaveError(.cannotCreate, file: out, "\(FileIO.describeType(found.st_mode)), expected a folder for the migrated copies, or a path where nothing is yet")
        }
        // A folder that cannot be made is said once, now, not for every file.
        if stat(out, &found) != 0 {
            var existing = FileIO.parentDirectory(of: out)
            while stat(existing, &found) != 0, existing != "/", existing != "." { existing = FileIO.parentDirectory(of: existing) }
            if stat(existing, &found) == 0, found.st_mode & S_IFMT != S_IFDIR {
                throw SaveError(.cannotCreate, file: out, "\(existing) is \(FileIO.describeType(found.st_mode)), expected a folder in which the folder for the migrated copies can be made")
            }
            if writes, access(existing, W_OK | X_OK) != 0 {
                throw SaveError(.cannotCreate, file: out, "\(FileError.reason(errno)) in \(existing), expected a place where the folder for the migrated copies can be made")
            }
            // Permissions are not all (root passes them; /proc and read-only mounts still say
            // no): a folder made and removed at once tells.
            if writes {
                do {
                    rmdir(try FileIO.makeTemporaryDirectory(beside: existing == "/" ? "/out" : existing + "/out"))
                } catch {
                    guard case .cannotCreate(_, let reason) = error else { throw error }
                    throw SaveError(.cannotCreate, file: out, "\(reason) in \(existing), expected a place where the folder for the migrated copies can be made")
                }
            }
        }
        // Copies written over their originals, or into the folder being walked, would be a
        // migration in place without the originals kept first.
        guard let place = FileIO.resolvedPath(out) else { return }
        let files = FileWalk(paths: paths)
        for index in paths.indices {
            guard let root = FileIO.realPath(files.root(of: index)) else { continue }
            // A file's copy goes to <folder>/<its name>: only its own folder is its place, and
            // the file it may lead to through a link.
            let isFolder = files.root(of: index) == paths[index]
            let inside = place == root || (isFolder && (root == "/" || place.hasPrefix(root + "/")))
            let name = URL(fileURLWithPath: paths[index]).lastPathComponent
            let overFile = !isFolder && FileIO.resolvedPath(place + "/" + name) == FileIO.realPath(paths[index])
            if inside || overFile {
                throw SaveError(
                    .usage, file: out, "would put the migrated copies among the files migrated from \(paths[index]), expected a folder outside them",
                    hint: .migrateInPlace)
            }
        }
    }

    /// Checks that a report written at `report` takes no save's place: not a file that holds
    /// one (it would be emptied for the report, and only files that change are kept), nor a
    /// path in the folder for the copies, where one may land.
    public func checkReportPlace(_ report: String) throws {
        var info = stat()
        let exists = stat(report, &info) == 0
        if let out = destination.folder, let place = FileIO.resolvedPath(report), let folder = FileIO.resolvedPath(out) {
            if place == folder {
                throw SaveError(.usage, file: report, "the folder for the migrated copies, expected a report path outside it")
            }
            if place.hasPrefix(folder == "/" ? "/" : folder + "/") {
                throw SaveError(.usage, file: report, "inside \(out), where the migrated copies go, expected a report path outside it")
            }
            // A report where a folder on the way to --out is yet to be made would stand in its way.
            if !exists, folder.hasPrefix(place + "/") {
                throw SaveError(.usage, file: report, "on the way to \(out), where the folder for the migrated copies goes, expected a report path outside it")
            }
        }
        // A device or FIFO (/dev/stdout, a pipe) is written as a stream, and holds no save.
        guard !exists || info.st_mode & S_IFMT == S_IFREG else { return }
        guard exists, info.st_size > 0, info.st_size < 1 << 26, let bytes = try? FileIO.read(report) else { return }
        // Recognised as the kinds recognise any file, not as the batch's one kind: that takes
        // every file for its kind, an earlier report included.
        let recognising = try SavePipeline(kinds: pipeline.migrator.kinds, registry: pipeline.registry)
        let result = recognising.process(bytes, path: FileWalk.File.claimPath(of: report))
        if let kind = result.kind, result.status != .failed, result.status != .unrecognized {
            throw SaveError(.usage, file: report, "holds a save (\(kind)), expected a path for the report where no save is")
        }
    }

    /// The paths, each file once (see ``init(paths:pipeline:destination:jobs:notify:)``).
    static func distinct(_ paths: [String], intoFolder: Bool, notify: (Notice) -> Void) -> [String] {
        func isFolder(_ path: String) -> Bool {
            var info = stat()
            return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
        }
        let named = paths.map { (path: $0, real: FileIO.realPath($0), isFolder: isFolder($0)) }
        var distinct: [String] = []
        for (index, argument) in named.enumerated() {
            guard let real = argument.real else { distinct.append(argument.path); continue }
            if let earlier = named[..<index].first(where: { $0.real == real }) {
                notify(.warning("\(argument.path): named already as \(earlier.path); migrated once"))
                continue
            }
            if !intoFolder, let folder = named.first(where: { other in
                other.isFolder && other.real.map { walk(from: $0, reaches: real) } == true
            }) {
                notify(.warning("\(argument.path): inside \(folder.path), also named; migrated once"))
                continue
            }
            distinct.append(argument.path)
        }
        return distinct
    }

    /// Whether the walk of the real folder `folder` visits the real path `inside`: it lies
    /// under it through folders (not links to them), and no name on the way starts with `.`.
    /// Only then is a path inside a folder also named the same file twice; otherwise it is
    /// migrated on its own, never dropped unseen.
    private static func walk(from folder: String, reaches inside: String) -> Bool {
        let prefix = folder == "/" ? "/" : folder + "/"
        guard inside.hasPrefix(prefix) else { return false }
        var place = folder == "/" ? "" : folder
        let names = inside.dropFirst(prefix.count).split(separator: "/")
        for (index, name) in names.enumerated() {
            guard !name.hasPrefix(".") else { return false }
            place += "/" + name
            var info = stat()
            guard lstat(place, &info) == 0 else { return false }
            let type = info.st_mode & S_IFMT
            guard type == S_IFDIR || (index == names.count - 1 && type == S_IFREG) else { return false }
        }
        return true
    }
}
