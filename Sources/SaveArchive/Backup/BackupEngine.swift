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
    /// Told of what a backup leaves out (FIFOs, sockets, devices).
    public var warn: @Sendable (String) -> Void = { _ in }
    /// Told of the work done by `create` and `verify`, after every entry.
    public var progress: @Sendable (WorkProgress) -> Void = { _ in }

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
        /// Whether the repository directory was made by this backup.
        public var createdRepository = false
    }

    public func create(
        source: String, name: String? = nil, day: BackupRepository.Day, today: BackupRepository.Day, keep: Int,
        format: ArchiveFormat = .tar(.gzip), createdAt: Date = Date()
    ) throws -> CreateReport {
        try create(source: source, name: name, day: day, today: today, keep: keep, format: format, createdAt: createdAt, writing: nil)
    }

    /// ``create(source:name:day:today:keep:format:createdAt:)``; with `writing`, a bundle that
    /// is needed goes through it (into an upload, as it is made) instead of into the repository.
    func create(
        source: String, name: String?, day: BackupRepository.Day, today: BackupRepository.Day, keep: Int,
        format: ArchiveFormat, createdAt: Date, writing: ((BundleExporter, BundleExporter.DescribedSource) throws -> Void)?
    ) throws -> CreateReport {
        precondition(keep >= 1, "keep at least one day")
        try FileIO.requireNonEmpty(source, expected: "the save folder to back up")
        try FileIO.requireNonEmpty(repository.directory, expected: "the backup repository")
        // The source as tar and restic take it: a link to a directory is followed.
        let sourcePath = URL(fileURLWithPath: source).resolvingSymlinksInPath().standardizedFileURL.path
        try checkSource(sourcePath, given: source)
        let createdRepository = try repository.create()
        let lock = try RepositoryLock(repository: repository.directory, wait: lockWait)
        defer { withExtendedLifetime(lock) {} }
        // A first run that fails leaves no repository behind: the next one makes it, and says so.
        var succeeded = false
        defer {
            if createdRepository && !succeeded {
                unlink(repository.directory + "/" + RepositoryLock.fileName)
                rmdir(repository.directory)
            }
        }
        let strays = repository.removeStrayTemporaryFiles()
        let name = name ?? URL(fileURLWithPath: sourcePath).lastPathComponent
        // A repository lists no name starting with `.` (its own files do): such a backup
        // would be written and never seen again.
        guard BackupRepository.isBackupName(name) else {
            throw SaveError(.usage, file: source, "the backup name \"\(name)\" starts with . or is no file name, expected one a repository lists", hint: .nameTheBackup)
        }
        let path = "\(repository.directory)/\(name)-\(day).\(format.fileExtension)"
        let backup = BackupRepository.Backup(name: name, day: day, path: path, format: format)
        var exporter = BundleExporter(createdAt: createdAt, createdBy: createdBy)
        exporter.format = format
        exporter.label = "daily"
        exporter.sourcePath = sourcePath
        exporter.warn = warn
        exporter.progress = progress
        // A repository inside the folder it backs up is left out, or it would hold itself.
        let repositoryPath = URL(fileURLWithPath: repository.directory).resolvingSymlinksInPath().standardizedFileURL.path
        if repositoryPath.hasPrefix(sourcePath + "/") { exporter.excluded = [String(repositoryPath.dropFirst(sourcePath.count + 1))] }

        let named = try repository.backups(named: name)
        try checkSameSource(named, name: name, sourcePath: sourcePath)
        let readableDays = named.filter { $0.day != day && BackupRepository.isBundle($0.path) }.map(\.day)
        if let refusal = BackupRepository.refusalOfDayDeletedAtOnce(day, among: readableDays, keep: keep, today: today, place: path) { throw refusal }
        let sameDay = named.filter { $0.day == day }
        var existing: StoredEntries?
        if let stored = sameDay.first(where: { $0.path == path }) {
            do {
                existing = try StoredEntries(bundle: stored.path, createdBy: createdBy)
            } catch {
                // Whatever keeps it from being read, the day still gets its backup.
                warn("\(path): the day's backup cannot be read (\(error)); it is written again")
            }
        }
        let files: Int
        let unchanged: Bool
        if existing == nil, writing == nil {
            // Nothing to compare with: written as it is read, each file once.
            files = try exporter.export(directory: sourcePath, to: path, replacing: true).fileCount
            unchanged = false
        } else {
            // The folder is described once, and compared entry by entry with the day's backup as
            // it is: an unchanged folder of any size costs one read of each, and writes nothing.
            let described = try exporter.describe(directory: sourcePath) { file in existing?.compare(with: file) }
            files = described.summary.fileCount
            var matched = existing?.matchedAll() == true
            // Its manifest says what it should hold; only reading it through says it does. A
            // bundle damaged since it was written is written again, not called unchanged.
            if matched {
                do { _ = try verify(path) } catch where (error as? any CategorizedError)?.category == .badData {
                    // Damage is written over; a read that failed (a full table of open files, a
                    // disk error) stops the run instead, naming it, and rewrites nothing.
                    warn("\(path): the day's backup fails its checks (\(error)); it is written again")
                    matched = false
                }
            }
            unchanged = matched
            if !unchanged {
                if let writing { try writing(exporter, described) } else { try exporter.write(described, to: path, replacing: true) }
            }
        }
        let outcome: CreateReport.Outcome
        if unchanged {
            outcome = .unchanged
        } else {
            outcome = sameDay.isEmpty ? .created : .replaced
            // The day's backup in another format is replaced too.
            for other in sameDay where other.path != path && BackupRepository.isBundle(other.path) { unlink(other.path) }
        }
        let deleted = try applyRetention(name: name, keep: keep, today: today, dryRun: false)
        succeeded = true
        return CreateReport(outcome: outcome, backup: backup, files: files, deleted: deleted, strayFilesRemoved: strays, createdRepository: createdRepository)
    }

    private func checkSource(_ path: String, given: String) throws {
        var info = stat()
        guard stat(path, &info) == 0 else { throw BundleError.unreadable(path: given, reason: FileError.reason(errno)) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw BundleError.notADirectory(given) }
    }

    /// Backups of one name are of one source: the newest that records its source must name this one.
    private func checkSameSource(_ backups: [BackupRepository.Backup], name: String, sourcePath: String) throws {
        for backup in backups {
            guard let stored = try? BundleImporter(createdBy: createdBy).summary(of: backup.path) else { continue }
            guard let storedSource = stored.sourcePath else { return }  // written before sources were recorded
            guard storedSource == sourcePath else {
                throw Self.anotherSource(storedSource: storedSource, in: backup.path, name: name, sourcePath: sourcePath)
            }
            return
        }
    }

    /// A backup of `sourcePath` refused because the name's backups are of `storedSource`.
    static func anotherSource(storedSource: String, in backup: String, name: String, sourcePath: String) -> SaveError {
        SaveError(
            .usage, file: backup,
            "a backup of \(storedSource) under the name \(name), expected backups of \(sourcePath) to have a name of their own",
            hint: .nameTheBackup)
    }

    /// Deletes the backups retention no longer keeps (with the lock held by the caller).
    private func applyRetention(name: String?, keep: Int, today: BackupRepository.Day, dryRun: Bool) throws -> [BackupRepository.Backup] {
        // Keeping every day leaves nothing to judge: an S3 repository runs the engine on a
        // scratch copy of the day's backup and keeps its own retention, and a warning about
        // that copy would name a backup the run then replaces.
        guard keep < .max else { return [] }
        let backups = try repository.backups(named: name)
        var deleted: [BackupRepository.Backup] = []
        let names = name.map { [$0] } ?? Array(Set(backups.map(\.name))).sorted()
        for each in names {
            // A file under a backup's name whose manifest cannot be read (cut short before it,
            // or put there by something else) takes no day's place: counted, it would have a
            // good backup deleted in its stead. It is named, and left as it is. (Damage further
            // in is for verify, and for create, which reads the day's backup through.)
            let own = backups.filter { $0.name == each }
            let readable = own.filter { BackupRepository.isBundle($0.path) }
            for backup in own where !readable.contains(where: { $0.path == backup.path }) {
                warn("\(backup.path): its manifest cannot be read, so it keeps no day in retention; left as it is")
            }
            let (_, old) = BackupRepository.retention(of: readable, keep: keep, today: today)
            for backup in old {
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
        try repository.checkExists()
        let lock = try RepositoryLock(repository: repository.directory, wait: lockWait)
        defer { withExtendedLifetime(lock) {} }
        if !dryRun { _ = repository.removeStrayTemporaryFiles() }
        return try applyRetention(name: name, keep: keep, today: today, dryRun: dryRun)
    }

    /// Re-reads a backup and checks every checksum; throws naming the file and entry.
    public func verify(_ backup: String) throws -> BundleSummary {
        var importer = BundleImporter(createdBy: createdBy)
        importer.progress = progress
        importer.limits.maxCompressionRatio = .infinity  // our own backups: verify, do not second-guess the ratio
        importer.limits.maxTotalBytes = .max
        importer.limits.maxEntries = 10_000_000
        return try importer.restore(backup, into: repository.directory + "/.verify-unused", dryRun: true, checkingPlace: false).summary
    }

    /// A stored backup's entries, read one at a time and compared with the folder's as the folder is described.
    final class StoredEntries {
        private var entries: ManifestEntries.Iterator
        private var same = true

        init(bundle: String, createdBy: String) throws {
            entries = try BundleImporter(createdBy: createdBy).readManifest(try ArchiveReader(path: bundle), bundle: bundle).entries.makeIterator()
        }

        func compare(with file: BundleManifest.File) {
            guard same else { return }
            guard let stored = try? entries.next(), BackupEngine.sameContents(stored, file) else {  // a fault counts as a change
                same = false
                return
            }
        }

        /// Whether every entry matched, and the backup holds no more.
        func matchedAll() -> Bool {
            guard same else { return false }
            do { return try entries.next() == nil } catch { return false }
        }
    }

    /// Same entry: path, type, size, checksum, mode, link target, owner and extended attributes
    /// (a new modification time alone is not a change).
    static func sameContents(_ x: BundleManifest.File, _ y: BundleManifest.File) -> Bool {
        x.path.utf8.elementsEqual(y.path.utf8) && x.type == y.type && x.size == y.size && x.sha256 == y.sha256 && x.mode == y.mode && x.target == y.target
            && x.owner?.uid == y.owner?.uid && x.owner?.gid == y.owner?.gid && x.xattrs == y.xattrs && x.sparse == y.sparse
    }
}
