import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Daily backups of a save directory into a ``BackupRepository``.
///
/// `create` writes the day's bundle under a temporary name, flushes it and renames it into
/// place (``BundleExporter``), and only then applies retention; a failed backup deletes nothing.
/// A second `create` on the same day replaces that day's backup when the files changed and
/// writes nothing when they did not, so it is safe to run hourly.
public struct BackupEngine: Sendable {
    public var repository: BackupRepository
    public var createdBy: String
    public var lockWait: TimeInterval = 3

    public init(repository: BackupRepository, createdBy: String) {
        self.repository = repository
        self.createdBy = createdBy
    }

    public struct CreateReport: Sendable {
        public enum Outcome: Sendable, Equatable { case created, replaced, unchanged }
        public var outcome: Outcome
        public var backup: BackupRepository.Backup
        public var files: Int
        public var deleted: [BackupRepository.Backup]
        public var strayFilesRemoved: [String]
    }

    public func create(
        source: String, name: String? = nil, day: BackupRepository.Day, today: BackupRepository.Day, keep: Int,
        format: ArchiveFormat = .tar(.gzip), createdAt: Date = Date()
    ) throws -> CreateReport {
        precondition(keep >= 1, "keep at least one day")
        let lock = try RepositoryLock(repository: repository.directory, wait: lockWait)
        defer { withExtendedLifetime(lock) {} }
        let strays = repository.removeStrayTemporaryFiles()
        let name = name ?? URL(fileURLWithPath: source).standardizedFileURL.lastPathComponent
        let path = "\(repository.directory)/\(name)-\(day).\(format.fileExtension)"
        let backup = BackupRepository.Backup(name: name, day: day, path: path, format: format)
        var exporter = BundleExporter(createdAt: createdAt, createdBy: createdBy)
        exporter.format = format
        exporter.label = "daily"

        let sameDay = repository.backups(named: name).filter { $0.day == day }
        let outcome: CreateReport.Outcome
        var files: Int
        let current = try exporter.manifest(of: source)
        files = current.files.count
        if let existing = sameDay.first(where: { $0.path == path }), let stored = try? BundleImporter(createdBy: createdBy).manifest(of: existing.path),
            Self.sameContents(stored, current)
        {
            outcome = .unchanged
        } else {
            let manifest = try exporter.export(directory: source, to: path)
            files = manifest.files.count
            outcome = sameDay.isEmpty ? .created : .replaced
            // The day's backup in another format is replaced too.
            for other in sameDay where other.path != path && BackupRepository.isBundle(other.path) { unlink(other.path) }
        }
        let deleted = try applyRetention(name: name, keep: keep, today: today, dryRun: false)
        return CreateReport(outcome: outcome, backup: backup, files: files, deleted: deleted, strayFilesRemoved: strays)
    }

    /// Deletes the backups retention no longer keeps (with the lock held by the caller).
    private func applyRetention(name: String?, keep: Int, today: BackupRepository.Day, dryRun: Bool) throws -> [BackupRepository.Backup] {
        let backups = repository.backups(named: name)
        var deleted: [BackupRepository.Backup] = []
        let names = name.map { [$0] } ?? Array(Set(backups.map(\.name))).sorted()
        for each in names {
            let (_, old) = BackupRepository.retention(of: backups.filter { $0.name == each }, keep: keep, today: today)
            for backup in old where BackupRepository.isBundle(backup.path) {
                if !dryRun {
                    guard unlink(backup.path) == 0 else { throw BundleError.ioFailure(path: backup.path, reason: FileError.reason(errno)) }
                }
                deleted.append(backup)
            }
        }
        if !dryRun, !deleted.isEmpty { FileIO.syncDirectory(repository.directory) }
        return deleted
    }

    /// Retention alone (`backup prune`).
    public func prune(name: String? = nil, keep: Int, today: BackupRepository.Day, dryRun: Bool) throws -> [BackupRepository.Backup] {
        precondition(keep >= 1, "keep at least one day")
        let lock = try RepositoryLock(repository: repository.directory, wait: lockWait)
        defer { withExtendedLifetime(lock) {} }
        if !dryRun { _ = repository.removeStrayTemporaryFiles() }
        return try applyRetention(name: name, keep: keep, today: today, dryRun: dryRun)
    }

    /// Re-reads a backup and checks every checksum; throws naming the file and entry.
    public func verify(_ backup: String) throws -> BundleManifest {
        var importer = BundleImporter(createdBy: createdBy)
        importer.limits.maxCompressionRatio = .infinity  // our own backups: verify, do not second-guess the ratio
        importer.limits.maxTotalBytes = .max
        importer.limits.maxEntries = 10_000_000
        return try importer.restore(backup, into: repository.directory + "/.verify-unused", dryRun: true).manifest
    }

    /// Same files, sizes, checksums and modes (a new modification time alone is not a change).
    static func sameContents(_ a: BundleManifest, _ b: BundleManifest) -> Bool {
        a.files.count == b.files.count
            && zip(a.files, b.files).allSatisfy { $0.path == $1.path && $0.size == $1.size && $0.sha256 == $1.sha256 && $0.mode == $1.mode }
    }
}
