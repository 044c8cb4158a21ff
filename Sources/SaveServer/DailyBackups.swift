import Foundation
import SaveArchive
#if canImport(Glibc)
import Glibc
#endif
import SaveKit
import SaveSync

/// Once a day, the head of every slot goes into a bundle of the backup repository
/// (`--backup-repo`), with the backup engine's rules: one bundle a day, `unchanged` when nothing
/// changed, the last `keep` days kept. The bundle holds `<space>/slots/<slot>` files, as the
/// API names them (no space has a `slots` segment, so no two heads can meet, as a space
/// `t/c/d.json` and the slot `d.json` of the space `t/c` would), and restoring a day is
/// `savetool import` of it.
public final class DailyBackups: Sendable {
    /// A backup repository: a local folder, or one on an object store.
    public enum Repository: Sendable {
        case folder(BackupRepository)
        case remote(RemoteRepository)
    }

    public let repository: Repository
    public let keep: Int
    let store: SlotStore
    /// The repository, for messages and the staging folder's name.
    var location: String {
        switch repository {
        case .folder(let repository): repository.directory
        case .remote(let repository): repository.storage.location
        }
    }

    /// The bundles' name: `sync-heads-2026-11-24.tar.gz`.
    public static let name = "sync-heads"

    public init(repository: Repository, keep: Int = 7, store: SlotStore) {
        (self.repository, self.keep, self.store) = (repository, max(1, keep), store)
    }

    /// What one backup did: `created`, `replaced` or `unchanged`, the bundle, how many heads.
    public struct Report: Sendable {
        public var outcome: String
        public var bundle: String
        public var heads: Int
    }

    /// Backs up every head now (a second run the same day replaces the day's bundle, or
    /// writes nothing when no head changed).
    public func run(today: BackupRepository.Day = .today()) throws -> Report {
        // The same folder every time: the backup engine keeps one source per backup name. A lock
        // file keeps two runs (the daily one and one asked for, or two processes) apart.
        let folder = try Self.privateFolder() + "/heads-" + String(Checksum.sha256(Array(location.utf8)).prefix(12))
        let lock = open(folder + ".lock", O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard lock >= 0 else { throw SaveError(.cannotCreate, file: folder + ".lock", FileError.reason(errno)) }
        defer { close(lock) }
        guard flock(lock, LOCK_EX) == 0 else { throw SaveError(.io, file: folder + ".lock", FileError.reason(errno)) }
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var heads = 0
        for space in try store.spaces() {
            for (slot, _) in try store.slots(in: space.split(separator: "/").map(String.init)) {
                guard let address = try? SlotAddress(space: space, slot: slot), let head = try store.head(of: address) else { continue }
                func stage(at file: String) throws {
                    try FileManager.default.createDirectory(atPath: FileIO.parentDirectory(of: file), withIntermediateDirectories: true)
                    // Each head keeps its version's time, so that an unchanged day compares equal.
                    try FileIO.writeAtomically(head.bytes, to: file, durable: false)
                    try FileManager.default.setAttributes([.modificationDate: head.record.createdAt], ofItemAtPath: file)
                }
                do {
                    try stage(at: folder + "/" + space + "/slots/" + slot)
                } catch {
                    // Slots `x` and `x/y` both exist (a file and a folder cannot share a name):
                    // this one goes into `%slots`, flat, `/` written `%2F` (no space or slot
                    // name holds a `%`, so nothing else lands there).
                    let flat = folder + "/" + space + "/%slots/" + slot.replacingOccurrences(of: "/", with: "%2F")
                    do { try stage(at: flat) } catch {
                        throw SaveError(.io, file: flat, "cannot stage the head of \(space)/slots/\(slot): \(FileError.reason(of: error))")
                    }
                }
                heads += 1
            }
        }
        do {
            switch repository {
            case .folder(let repository):
                let report = try BackupEngine(repository: repository, createdBy: "savetool serve").create(
                    source: folder, name: Self.name, day: today, today: today, keep: keep)
                return Report(outcome: "\(report.outcome)", bundle: report.backup.path, heads: heads)
            case .remote(let repository):
                let report = try repository.create(source: folder, name: Self.name, day: today, today: today, keep: keep)
                return Report(outcome: "\(report.outcome)", bundle: report.object, heads: heads)
            }
        } catch let error as SaveError {
            throw RepositoryFailure(error: error)
        }
    }

    /// The backup repository failed, not the store the heads were read from.
    public struct RepositoryFailure: Error, Sendable, CustomStringConvertible {
        public var error: SaveError
        public var description: String { error.description }
    }

    /// `<temporary folder>/savetool-serve-<uid>`, made with mode 0700 and checked to be this
    /// user's own folder (not a link, not another user's): the heads are staged there.
    static func privateFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("savetool-serve-\(geteuid())").path
        if mkdir(folder, 0o700) != 0, errno != EEXIST { throw SaveError(.cannotCreate, file: folder, FileError.reason(errno)) }
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o077 == 0 else {
            throw SaveError(.permissionDenied, file: folder, "not a private folder of this user, expected one to stage the heads in")
        }
        return folder
    }

    /// Runs ``run(today:)`` when the day has no bundle yet: at start, then every hour.
    func daily(log: @escaping @Sendable (String) -> Void) async {
        var last: BackupRepository.Day?
        while !Task.isCancelled {
            let today = BackupRepository.Day.today()
            if last != today {
                do {
                    let report = try run(today: today)
                    log("backup \(report.outcome) \(report.bundle) heads=\(report.heads)")
                    last = today
                } catch {
                    log("backup failed: \(error)")
                }
            }
            try? await Task.sleep(for: .seconds(3600))
        }
    }
}
