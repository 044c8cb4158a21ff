import Crypto
import Foundation
import OrderedCollections
import SaveKit
import SaveStorage
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Daily backups in a ``SaveStorage`` that has no rename (an S3 bucket and prefix): the same
/// bundles, names and retention as a local ``BackupRepository``, made safe for object stores.
///
/// - A backup counts only once its **marker** is written, last, exclusively:
///   `<name>-YYYY-MM-DD.tar.gz.complete`, a small JSON naming the bundle, its size, its SHA-256
///   and its file count. `list` shows marked backups only. A run says first what it is about to
///   upload (`.uploading-<name>-YYYY-MM-DD.tar.gz`), so a transfer cut in the middle leaves an
///   unmarked object that the next run (holding the lock) knows as its own and deletes; an
///   unmarked object that no run announced (a bundle copied in by hand, anything else named like
///   a backup) is never deleted.
/// - Retention deletes the marker first, then the bundle: a backup is never listed as good
///   while it is being deleted.
/// - The **lock** is an object per run, `.savetool-lock-<nonce>`, renewed while the run lasts;
///   one not renewed for ``lockStaleAfter`` (a run that died) is taken over (``RemoteLock``).
/// - `verify` downloads the bundle and checks its SHA-256 against the marker itself, then every
///   file's, as for a local backup (servers may not check the checksums they are sent).
///
/// A new bundle goes up as it is made, in parts, never held whole in memory or on disk (a second
/// run of the day brings that day's backup down to compare with); see docs/backups.md.
public struct RemoteRepository: Sendable {
    public let storage: any SaveStorage
    public var createdBy: String
    /// How long `create` and `prune` wait for another run's lock before giving up (busy, exit 75).
    public var lockWait: TimeInterval = 10
    /// A lock the store has not seen renewed for this long belongs to a run that died, and is
    /// taken over; longer than any clock skew a signed request survives (15 minutes).
    public var lockStaleAfter: TimeInterval = 30 * 60
    /// How often a run renews its lock.
    public var lockRenewal: TimeInterval = 5 * 60
    public var warn: @Sendable (String) -> Void = { _ in }
    public var progress: @Sendable (WorkProgress) -> Void = { _ in }

    public init(storage: any SaveStorage, createdBy: String) {
        (self.storage, self.createdBy) = (storage, createdBy)
    }

    static let markerSuffix = ".complete"
    /// A replacement on its way up: `.pending-<name>-YYYY-MM-DD.tar.gz`.
    static let pendingPrefix = ".pending-"
    /// A new backup on its way up, announced before its upload starts:
    /// `.uploading-<name>-YYYY-MM-DD.tar.gz`, deleted once its marker is written.
    static let uploadingPrefix = ".uploading-"

    /// A marked backup.
    public struct Backup: Sendable, Equatable {
        public var name: String
        public var day: BackupRepository.Day
        /// The bundle's object name: `kape-2026-11-20.tar.gz`.
        public var object: String
        public var size: Int64
        public var sha256: String
        public var files: Int
        /// The folder it is a backup of, as its marker records it (markers written before
        /// sources were recorded have none).
        public var sourcePath: String?
        /// Why the backup's marker does not describe the bundle as it is (its name, size or
        /// format differ, or it cannot be read): a damaged backup, listed and failed by
        /// `verify`, and written again by the next `create` of its day.
        public var damage: String?
    }

    /// The marked backups, newest first; `name` limits them to one source. A backup whose
    /// marker does not describe it as it is comes with its ``Backup/damage``: it is a backup
    /// that went bad, not "no backup". With `requiringRepository`, a prefix where nothing at all
    /// is stored throws as ``checkExists()`` does, from the same listing.
    public func backups(named name: String? = nil, requiringRepository: Bool = false) throws -> [Backup] {
        let objects = try storage.list()
        if requiringRepository && objects.isEmpty { throw noRepository }
        let markers = Set(objects.map(\.name).filter { $0.hasSuffix(Self.markerSuffix) })
        var backups: [Backup] = []
        for object in objects where markers.contains(object.name + Self.markerSuffix) {
            guard let (backupName, day, _) = Self.parse(object.name), name == nil || backupName == name else { continue }
            var backup = Backup(name: backupName, day: day, object: object.name, size: object.size, sha256: "", files: 0, sourcePath: nil)
            do {
                let marker = try readMarker(of: object.name)
                if let sha256 = marker["sha256"]?.stringValue, marker["size"]?.int64Value == object.size {
                    (backup.sha256, backup.files) = (sha256, Int(marker["files"]?.int64Value ?? 0))
                    backup.sourcePath = marker["sourcePath"]?.stringValue
                } else {
                    backup.damage = marker["sha256"]?.stringValue == nil
                        ? "its marker has no SHA-256, expected the marker backup create writes"
                        : "\(object.size) bytes where its marker says \(marker["size"]?.int64Value.map(String.init) ?? "no size"), expected the bundle its marker describes"
                }
            } catch let error as SaveError where error.category == .badData {
                backup.damage = error.message
            } catch let error as SaveError where error.category == .notFound {
                continue  // deleted since the listing, by a create or prune that holds the lock
            }
            backups.append(backup)
        }
        return backups.sorted { ($0.day, $0.object) > ($1.day, $1.object) }
    }

    /// The marker of `object`, checked to be one (a store that fails to answer throws its own
    /// error: it is not "no backup"); bad data when it is not a marker for `object`.
    private func readMarker(of object: String) throws -> SaveValue {
        let name = object + Self.markerSuffix
        let bytes = try storage.read(name)
        guard let marker = try? JSONCodec().decode(bytes), marker["format"]?.stringValue == "savetool.backup-marker/1", marker["backup"]?.stringValue == object else {
            throw SaveError(.badData, file: storage.location + "/" + name, "not a savetool marker for \(object), expected the JSON backup create writes last")
        }
        return marker
    }

    /// Throws `notFound` when nothing at all is stored under the prefix: a repository that
    /// `backup create` never wrote to, or a typo in its name. Listing, verifying or pruning it
    /// fails (66), as for a folder that does not exist, so that a cron job's typo is seen.
    public func checkExists() throws {
        guard try storage.list().isEmpty else { return }
        throw noRepository
    }

    private var noRepository: SaveError {
        SaveError(.notFound, file: storage.location, "nothing is stored under this prefix, expected a backup repository that backup create wrote to")
    }

    /// A replacement on its way up: `.pending-` and a backup's name.
    static func isPending(_ object: String) -> Bool {
        object.hasPrefix(pendingPrefix) && parse(String(object.dropFirst(pendingPrefix.count))) != nil
    }

    /// The backup an announcement (`.uploading-` and a backup's name) is of, if `object` is one.
    static func announced(by object: String) -> String? {
        guard object.hasPrefix(uploadingPrefix) else { return nil }
        let backup = String(object.dropFirst(uploadingPrefix.count))
        return parse(backup) != nil ? backup : nil
    }

    /// `<name>-YYYY-MM-DD.<archive extension>`, as a local repository names its backups.
    static func parse(_ object: String) -> (name: String, day: BackupRepository.Day, format: ArchiveFormat)? {
        guard !object.hasPrefix("."), let format = ArchiveFormat(path: object) else { return nil }
        let stem = String(object.dropLast(format.fileExtension.count + 1))
        guard stem.count > 11, let day = BackupRepository.Day(String(stem.suffix(10))), stem.dropLast(10).hasSuffix("-") else { return nil }
        return (String(stem.dropLast(11)), day, format)
    }

    public struct CreateReport: Sendable {
        public var outcome: BackupEngine.CreateReport.Outcome
        public var object: String
        public var files: Int
        public var deleted: [Backup]
        /// Unmarked bundles of cut transfers, deleted by this run.
        public var strayObjectsRemoved: [String]
    }

    public struct PruneReport: Sendable {
        /// The backups retention deleted (or, in a dry run, would delete), newest first.
        public var deleted: [Backup]
        /// What cut runs left, removed by this run (or, in a dry run, that it would remove).
        public var strayObjectsRemoved: [String]
    }

    public func create(
        source: String, name: String? = nil, day: BackupRepository.Day, today: BackupRepository.Day, keep: Int,
        format: ArchiveFormat = .tar(.gzip), createdAt: Date = Date()
    ) throws -> CreateReport {
        precondition(keep >= 1, "keep at least one day")
        try FileIO.requireNonEmpty(source, expected: "the save folder to back up")
        let sourcePath = URL(fileURLWithPath: source).resolvingSymlinksInPath().standardizedFileURL.path
        let name = name ?? URL(fileURLWithPath: sourcePath).lastPathComponent
        let object = "\(name)-\(day).\(format.fileExtension)"
        var created: CreateReport?
        try withLock { lock in
            // What a cut run left (it holds no lock now: this run does) goes first, so that it
            // can block nothing.
            let strays = try removeUnmarked(dryRun: false, sayingNothingOf: object)
            let existing = try backups(named: name)
            let previous = existing.first { $0.object == object }
            // The local engine runs on a scratch folder that holds its lock file and, on a second
            // run of the day, that day's backup brought down, so that an unchanged folder (and a
            // second source under the same name) is told as it is at home. The new bundle itself
            // never lands there: it goes up as it is made.
            let scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/backup")
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            // A damaged backup of the day is not compared with: it is written again whole.
            if let previous {
                if let damage = previous.damage {
                    warn("\(storage.location)/\(object): \(damage); the day's backup is written again")
                } else {
                    try storage.download(previous.object, to: scratch + "/" + previous.object)
                }
            }
            // One name, one source, on every day: the engine sees only the day's backup here, so
            // the newest backup of the name that says its source is asked, by its marker (or,
            // written before markers recorded sources, by its manifest), as a folder's newest
            // readable backup is. A source that is not there is the engine's to name first.
            if access(sourcePath, F_OK) == 0 {
                try checkOneSource(existing, name: name, sourcePath: sourcePath, scratch: scratch, downloaded: previous?.object)
            }
            let days = existing.filter { $0.damage == nil && $0.object != object }.map(\.day)
            if let refusal = BackupRepository.refusalOfDayDeletedAtOnce(day, among: days, keep: keep, today: today, place: storage.location + "/" + object) {
                throw refusal
            }
            var engine = BackupEngine(repository: BackupRepository(directory: scratch), createdBy: createdBy)
            // The engine's messages name the scratch folder; the user knows the repository.
            let location = storage.location
            (engine.warn, engine.progress) = ({ [warn] in warn($0.replacingOccurrences(of: scratch, with: location)) }, progress)
            // A replacement goes up under a pending name (the slow part); only then does the old
            // backup stop counting and get overwritten by a copy on the server, so a failed
            // upload leaves the old backup marked and whole.
            let target = previous == nil ? object : Self.pendingPrefix + object
            // An unmarked object under the day's name that no run announced is not this
            // repository's to delete: it is kept under another name, and the backup goes up.
            if previous == nil, try storage.list(prefix: object).contains(where: { $0.name == object }) {
                let kept = object + ".unmarked-" + BundleManifest.timestamp(Date()).filter { $0.isNumber }
                try storage.copy(object, to: kept)
                try storage.delete(object)
                warn("\(storage.location)/\(object): named like this day's backup but never marked complete by a backup run; kept as \(storage.location)/\(kept)")
            }
            let announcement = Self.uploadingPrefix + object
            if previous == nil { try announce(object, as: announcement) }
            var uploaded: Uploaded?
            let local: BackupEngine.CreateReport
            do {
                local = try engine.create(
                    source: source, name: name, day: day, today: day, keep: .max, format: format, createdAt: createdAt,
                    writing: { exporter, described in uploaded = try upload(described, with: exporter, as: target, ifAbsent: previous == nil) })
            } catch var error as SaveError {
                error.file = error.file?.replacingOccurrences(of: scratch, with: location)
                error.message = error.message.replacingOccurrences(of: scratch, with: location)
                throw error
            }
            var report = CreateReport(outcome: local.outcome, object: object, files: local.files, deleted: [], strayObjectsRemoved: [])
            if previous != nil && report.outcome == .created { report.outcome = .replaced }
            if local.outcome != .unchanged {
                guard let uploaded else {
                    throw SaveError(.io, file: storage.location + "/" + object, "the backup was made but not uploaded; nothing was marked")
                }
                try lock.checkHeld()
                if previous != nil {
                    // From here until its new marker, the day's bundle is unmarked: announced,
                    // so that a run cut here leaves what the next run knows as its own.
                    try announce(object, as: announcement)
                    try storage.delete(object + Self.markerSuffix)
                    try storage.copy(target, to: object)
                    try storage.delete(target)
                }
                try writeMarker(uploaded, as: object, files: local.files, sourcePath: sourcePath)
            }
            // Once marked (or not needed), the announcement has said what it had to; one left
            // by a failure here is removed by the next run.
            if previous == nil || local.outcome != .unchanged { try? storage.delete(announcement) }
            report.strayObjectsRemoved = strays
            do {
                try lock.checkHeld()
                report.deleted = try applyRetention(name: name, keep: keep, today: today, dryRun: false)
            } catch let error as SaveError {
                // The backup counts already: say so, rather than let the failure read as "no backup".
                throw SaveError(error.category, file: error.file, location: error.location, "\(error.message) (the backup \(storage.location)/\(object) is complete; retention did not run)", cause: error)
            }
            created = report
        }
        return created!
    }

    /// Retention alone (`backup prune`), after what cut runs left; a dry run deletes nothing and
    /// says what it would.
    public func prune(name: String? = nil, keep: Int, today: BackupRepository.Day, dryRun: Bool) throws -> PruneReport {
        precondition(keep >= 1, "keep at least one day")
        var report = PruneReport(deleted: [], strayObjectsRemoved: [])
        try withLock { lock in
            report.strayObjectsRemoved = try removeUnmarked(dryRun: dryRun)
            try lock.checkHeld()
            report.deleted = try applyRetention(name: name, keep: keep, today: today, dryRun: dryRun)
        }
        return report
    }

    /// Downloads a backup, checks it against its marker's SHA-256, then every file's checksum.
    public func verify(_ backup: Backup) throws -> BundleSummary {
        if let damage = backup.damage { throw SaveError(.badData, file: storage.location + "/" + backup.object, damage) }
        let scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/verify")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let file = try download(backup.object, into: scratch, expecting: backup.sha256)
        var engine = BackupEngine(repository: BackupRepository(directory: scratch), createdBy: createdBy)
        engine.progress = progress
        return try engine.verify(file)
    }

    /// Throws unless the newest of `backups` (of `name`, newest first) that says its source
    /// names `sourcePath`: by its marker or, written before markers recorded sources, by its
    /// manifest (downloaded into `scratch`, unless `downloaded` is that backup, there already).
    private func checkOneSource(_ backups: [Backup], name: String, sourcePath: String, scratch: String, downloaded: String? = nil) throws {
        for backup in backups where backup.damage == nil {
            var stored = backup.sourcePath
            if stored == nil {
                let file = scratch + "/" + backup.object
                if backup.object != downloaded { try storage.download(backup.object, to: file) }
                let summary = try? BundleImporter(createdBy: createdBy).summary(of: file)
                if backup.object != downloaded { unlink(file) }
                guard let summary else { continue }  // unreadable: the next one says
                stored = summary.sourcePath
            }
            if let stored, stored != sourcePath {
                throw BackupEngine.anotherSource(storedSource: stored, in: storage.location + "/" + backup.object, name: name, sourcePath: sourcePath)
            }
            return
        }
    }

    /// Exports `source` straight into a new object and marks it complete (`export -o s3://…`);
    /// an object of that name is never replaced. `manifest`, when given, is called with the
    /// manifest as written (for `--json`).
    @discardableResult
    public func store(
        directory source: String, with exporter: BundleExporter, as object: String, manifest: ((SaveValue) throws -> Void)? = nil
    ) throws -> BundleSummary {
        // Under a backup's name, the folder it is of, as a backup's marker says it: such a bundle
        // counts as that folder's backup, held to "one name, one source" too, as `backup create`
        // is (else each later backup of the name's own folder would be refused). Any other name
        // keeps the machine's paths out of the marker.
        let backupName = Self.parse(object)?.name
        let sourcePath = backupName == nil ? nil : URL(fileURLWithPath: source).resolvingSymlinksInPath().standardizedFileURL.path
        if let backupName, let sourcePath {
            let scratch = try FileIO.makeTemporaryDirectory(beside: NSTemporaryDirectory() + "/export")
            defer { try? FileManager.default.removeItem(atPath: scratch) }
            try checkOneSource(try backups(named: backupName), name: backupName, sourcePath: sourcePath, scratch: scratch)
        }
        let described = try exporter.describe(directory: source)
        let uploaded: Uploaded
        do {
            uploaded = try upload(described, with: exporter, as: object, ifAbsent: true)
        } catch let error as SaveError where error.category == .conflict {
            throw SaveError(.cannotCreate, file: storage.location + "/" + object, "exists already, expected a new name for the bundle")
        }
        try writeMarker(uploaded, as: object, files: described.summary.fileCount, sourcePath: sourcePath)
        if let manifest {
            var bytes: [UInt8] = []
            try described.forEachManifestChunk { bytes.append(contentsOf: $0) }
            try manifest(try JSONCodec().decode(bytes))
        }
        return described.summary
    }

    /// A bundle that went up: what its marker records.
    struct Uploaded {
        var size: Int64
        var sha256: String
    }

    /// Writes a described source as a bundle straight into a new object, hashing it on the way.
    private func upload(_ described: BundleExporter.DescribedSource, with exporter: BundleExporter, as object: String, ifAbsent: Bool) throws -> Uploaded {
        var hashing: HashingOutput?
        try storage.upload(to: object, ifAbsent: ifAbsent) { upload in
            let output = HashingOutput(upload)
            hashing = output
            try exporter.write(described, into: ArchiveOutput(sink: output), name: storage.location + "/" + object)
        }
        return Uploaded(size: hashing!.size, sha256: Checksum.hex(hashing!.hasher.finalize()))
    }

    /// Passes bytes on to an upload, counting and hashing them for the marker.
    private final class HashingOutput: ByteOutput {
        var upload: any StorageUpload
        var hasher = SHA256()
        var size: Int64 = 0

        init(_ upload: any StorageUpload) { self.upload = upload }

        func write(_ bytes: UnsafeRawBufferPointer) throws {
            hasher.update(bufferPointer: bytes)
            size += Int64(bytes.count)
            try upload.write(bytes)
        }
    }

    /// Says, before its upload starts, that `object` is a backup on its way up, so that what a
    /// cut run leaves is known as this repository's own.
    private func announce(_ object: String, as announcement: String) throws {
        let fields: OrderedDictionary<String, SaveValue> = [
            "format": "savetool.backup-upload/1", "backup": .string(object), "createdBy": .string(createdBy),
        ]
        try storage.write(try JSONCodec().encode(.dictionary(fields)), to: announcement, ifAbsent: false)
    }

    private func writeMarker(_ uploaded: Uploaded, as object: String, files: Int, sourcePath: String? = nil) throws {
        var fields: OrderedDictionary<String, SaveValue> = [
            "format": "savetool.backup-marker/1", "backup": .string(object), "size": .integer(uploaded.size), "sha256": .string(uploaded.sha256),
            "files": .integer(Int64(files)),
        ]
        // Read by the next create of this name, which must be of the same folder.
        if let sourcePath { fields["sourcePath"] = .string(sourcePath) }
        let marker = SaveValue.dictionary(fields)
        try storage.write(try JSONCodec().encode(marker), to: object + Self.markerSuffix, ifAbsent: true)
    }

    /// A marked backup downloaded into `directory` (for `import s3://…`); unmarked objects are refused.
    public func fetch(_ object: String, into directory: String) throws -> String {
        let marker: SaveValue
        do {
            marker = try readMarker(of: object)
        } catch let error as SaveError where error.category == .notFound {
            // An outage or refused credentials are the store's own errors, never "not found".
            throw SaveError(.notFound, file: storage.location + "/" + object, "no complete backup of that name (its marker: \(error.message)), expected one that backup list shows", cause: error)
        }
        return try download(object, into: directory, expecting: marker["sha256"]?.stringValue ?? "")
    }

    /// Downloads a bundle into `directory` and checks it against the SHA-256 its marker records.
    private func download(_ object: String, into directory: String, expecting sha256: String) throws -> String {
        let file = directory + "/" + object
        try storage.download(object, to: file)
        let found = try Self.sha256(of: file)
        guard found == sha256 else {
            throw SaveError(.badData, file: storage.location + "/" + object, "its SHA-256 is \(found), expected \(sha256) as its marker says")
        }
        return file
    }

    // MARK: -

    private func applyRetention(name: String?, keep: Int, today: BackupRepository.Day, dryRun: Bool) throws -> [Backup] {
        // A damaged backup takes no day's place and is never deleted by retention, as in a
        // folder: a good backup is never deleted in its stead, and what is left of a damaged
        // one stays for someone to look at (`backup list` names it).
        let backups = try self.backups(named: name).filter { $0.damage == nil }
        var deleted: [Backup] = []
        for name in Set(backups.map(\.name)) {
            let own = backups.filter { $0.name == name }
            let asLocal = own.map { BackupRepository.Backup(name: $0.name, day: $0.day, path: $0.object, format: Self.parse($0.object)!.format) }
            let removed = BackupRepository.retention(of: asLocal, keep: keep, today: today).deleted
            deleted += own.filter { backup in removed.contains { $0.path == backup.object } }
        }
        if !dryRun {
            for backup in deleted {
                try storage.delete(backup.object + Self.markerSuffix)  // it stops counting first
                try storage.delete(backup.object)
            }
        }
        return deleted.sorted { ($0.day, $0.object) > ($1.day, $1.object) }
    }

    /// What cut runs of this repository left, removed by a run that holds the lock (with
    /// `dryRun`, only named): a bundle announced but never marked, with its announcement; a
    /// pending replacement; a marker savetool wrote whose bundle is gone; multipart uploads of
    /// backups given up long ago. An unmarked object named like a backup that no run announced
    /// (a bundle copied in by hand, a cut run of a savetool before announcements, anything else),
    /// and a marker savetool did not write, are never counted and never deleted: each is named
    /// in a warning. Objects not named like backups are never touched.
    /// A bundle's announcement outlives the bundle's absence this long: a run stalled in its
    /// upload (a laptop asleep) and taken over may still finish it, and what it then leaves
    /// unmarked is known as a cut run's by its announcement.
    static let announcementKeptWithoutBundle: TimeInterval = 24 * 60 * 60

    private func removeUnmarked(dryRun: Bool, sayingNothingOf quiet: String? = nil) throws -> [String] {
        let listed = try storage.list().sorted { $0.name < $1.name }
        let names = Set(listed.map(\.name))
        var removed: [String] = []
        func remove(_ object: String) throws {
            if !dryRun { try storage.delete(object) }
            removed.append(object)
        }
        for stored in listed {
            let object = stored.name
            if Self.isPending(object) {
                try remove(object)
            } else if let backup = Self.announced(by: object) {
                if names.contains(backup) {
                    if !names.contains(backup + Self.markerSuffix) { try remove(backup) }
                    try remove(object)
                } else if let written = stored.modified, Date().timeIntervalSince(written) > Self.announcementKeptWithoutBundle {
                    try remove(object)  // an upload that never finished, long given up
                }
            } else if Self.parse(object) != nil, !names.contains(object + Self.markerSuffix), !names.contains(Self.uploadingPrefix + object) {
                guard object != quiet else { continue }  // the caller says what becomes of it
                warn("\(storage.location)/\(object): named like a backup but not marked complete by a backup run, so not counted; left as it is")
            } else if object.hasSuffix(Self.markerSuffix) {
                let backup = String(object.dropLast(Self.markerSuffix.count))
                guard Self.parse(backup) != nil, !names.contains(backup) else { continue }
                if (try? readMarker(of: backup)) != nil {
                    try remove(object)
                } else {
                    warn("\(storage.location)/\(object): named like a backup's marker but not one savetool wrote, and its backup is not there; left as it is")
                }
            }
        }
        guard !dryRun else { return removed }
        // Multipart uploads of backups whose runs were killed: older than the lock's stale time,
        // which a live run's upload is not without its lock renewed. (An export's upload under
        // another name is not this repository's to give up.)
        removed += try storage.removeAbandonedUploads(olderThan: lockStaleAfter) { object in
            Self.parse(object) != nil || Self.isPending(object)
        }.map { $0 + " (an unfinished upload)" }
        return removed
    }

    /// Runs `body` holding the repository's lock (``RemoteLock``); `body` calls
    /// ``RemoteLock/checkHeld()`` before anything it writes counts.
    func withLock(_ body: (RemoteLock) throws -> Void) throws {
        let lock = try RemoteLock(storage: storage, wait: lockWait, staleAfter: lockStaleAfter, renewal: lockRenewal, warn: warn)
        defer { lock.release() }
        try body(lock)
    }

    static func sha256(of file: String) throws -> String {
        var hasher = SHA256()
        try BundleExporter.readChunks(ExactFileName.carried(file)) { hasher.update(bufferPointer: $0) }
        return Checksum.hex(hasher.finalize())
    }
}
