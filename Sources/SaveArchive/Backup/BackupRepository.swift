import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A directory of daily backups: one bundle per day, `<name>-YYYY-MM-DD.tar.gz`, plus
/// `.savetool-lock`. Files that are not savetool bundles of that naming are never touched.
public struct BackupRepository: Sendable {
    public let directory: String

    public init(directory: String) {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
    }

    /// A calendar day, as backups are named.
    public struct Day: Sendable, Hashable, Comparable, CustomStringConvertible {
        public var year: Int, month: Int, day: Int

        public init(year: Int, month: Int, day: Int) {
            (self.year, self.month, self.day) = (year, month, day)
        }

        /// `2026-11-21`; `nil` for anything else, impossible dates included.
        public init?(_ text: String) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
                let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
                let date = RFC3339.parse("\(text)T00:00:00Z"), RFC3339.format(date).hasPrefix(text)
            else { return nil }
            self.init(year: year, month: month, day: day)
        }

        /// Today in the local calendar.
        public static func today(_ now: Date = Date()) -> Day {
            let parts = Calendar.current.dateComponents([.year, .month, .day], from: now)
            return Day(year: parts.year!, month: parts.month!, day: parts.day!)
        }

        public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }
        public static func < (a: Day, b: Day) -> Bool { (a.year, a.month, a.day) < (b.year, b.month, b.day) }
    }

    /// One backup file.
    public struct Backup: Sendable, Equatable {
        public var name: String
        public var day: Day
        public var path: String
        public var format: ArchiveFormat

        public init(name: String, day: Day, path: String, format: ArchiveFormat) {
            (self.name, self.day, self.path, self.format) = (name, day, path, format)
        }
    }

    /// Throws when the repository does not exist or cannot be read: a typo in a cron job's
    /// `--repo` must fail, not report "no backups" forever.
    public func checkExists() throws {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw SaveError(.notFound, file: directory, "no such backup repository (\(FileError.reason(errno))), expected a directory of backups that backup create made")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw SaveError(.notFound, file: directory, "not a directory, expected a backup repository")
        }
        // Any folder exists: one that holds files, but neither the lock `create` makes nor a
        // backup, is no repository (a save folder named by mistake), and nothing is written into
        // it. An empty one is a repository yet to be filled (a first create may be cut short
        // before it takes the lock).
        let marked = access(directory + "/" + RepositoryLock.fileName, F_OK) == 0
        let empty = (try? FileManager.default.contentsOfDirectory(atPath: directory))?.isEmpty ?? false
        guard try marked || empty || !listing().isEmpty else {
            throw SaveError(.notFound, file: directory, "holds no backups and was never a repository, expected a folder that backup create made")
        }
    }

    /// Makes the repository directory (and its parents) when it does not exist yet; `true` when it did not.
    public func create() throws -> Bool {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw SaveError(.cannotCreate, file: directory, "\(FileIO.describeType(info.st_mode)), expected a folder for the backups")
            }
            return false
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw SaveError(.cannotCreate, file: directory, "cannot create the backup repository: \(FileError.reason(of: error)), expected a place where this user may make its folder")
        }
        FileIO.syncDirectory(FileIO.parentDirectory(of: directory))
        return true
    }

    /// Whether `name` can start a backup's file name here: a file name, not empty, not starting
    /// with `.` (a repository's own files do, and ``backups(named:)`` lists none of those).
    public static func isBackupName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.contains("/") && !name.contains("\0")
    }

    /// The files named like backups (`<name>-YYYY-MM-DD.<archive extension>`), newest first.
    /// `name` limits them to one source. Throws when the repository cannot be listed.
    public func backups(named name: String? = nil) throws -> [Backup] {
        try checkExists()
        return try listing(named: name)
    }

    private func listing(named name: String? = nil) throws -> [Backup] {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw SaveError(.notFound, file: directory, "cannot list the backup repository: \(FileError.reason(of: error))")
        }
        return entries.compactMap { file -> Backup? in
            guard !file.hasPrefix("."), let format = ArchiveFormat(path: file) else { return nil }
            let stem = String(file.dropLast(format.fileExtension.count + 1))
            guard stem.count > 11, let day = Day(String(stem.suffix(10))), stem.dropLast(10).hasSuffix("-") else { return nil }
            let backupName = String(stem.dropLast(11))
            guard name == nil || backupName == name else { return nil }
            var info = stat()
            let path = directory + "/" + file
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return Backup(name: backupName, day: day, path: path, format: format)
        }
        .sorted { ($0.day, $0.path) > ($1.day, $1.path) }
    }

    /// What retention keeps: the backups of the last `keep` distinct days that have one (gaps
    /// in the calendar use up no slot), and every backup dated after `today`.
    public static func retention(of backups: [Backup], keep: Int, today: Day) -> (kept: [Backup], deleted: [Backup]) {
        precondition(keep >= 1, "keep at least one day")
        let pastDays = Set(backups.map(\.day).filter { $0 <= today }).sorted(by: >)
        let keptDays = Set(pastDays.prefix(keep))
        var kept: [Backup] = []
        var deleted: [Backup] = []
        for backup in backups {
            if backup.day > today || keptDays.contains(backup.day) { kept.append(backup) } else { deleted.append(backup) }
        }
        return (kept, deleted)
    }

    /// The refusal of a backup of `day` that retention would delete as soon as it is made, among
    /// backups of `days` (a `--date` before the days kept): refused before anything is
    /// written, rather than made, reported and deleted in one run. `nil` when it would stay.
    public static func refusalOfDayDeletedAtOnce(_ day: Day, among days: [Day], keep: Int, today: Day, place: String) -> SaveError? {
        guard day <= today else { return nil }
        let keptDays = Set(days.filter { $0 <= today } + [day]).sorted(by: >).prefix(keep)
        guard !keptDays.contains(day), let oldest = keptDays.last else { return nil }
        return SaveError(
            .usage, file: place,
            "dated \(day), which retention would delete at once (it keeps the \(keep) latest day\(keep == 1 ? "" : "s") with a backup, from \(oldest) on), expected a later date; nothing was written",
            hint: .keepMoreDays)
    }

    /// Whether a file really is a savetool bundle (its first entry a savetool manifest, told by
    /// the `format` its first bytes declare): only those are ever deleted, and only those count
    /// as a day's backup. The rest of the manifest is not read: retention asks this of every
    /// backup, and a manifest of 100,000 files is megabytes.
    public static func isBundle(_ path: String) -> Bool {
        guard let reader = try? ArchiveReader(path: path), let first = try? reader.next(), first.path == "manifest.json", first.kind == .file
        else { return false }
        var head = [UInt8](repeating: 0, count: 4096)
        guard let count = try? reader.read(into: &head), count > 0 else { return false }
        let text = String(decoding: head[..<count], as: UTF8.self)
        return text.range(of: #"^\s*\{\s*"format"\s*:\s*"savetool\.bundle/"#, options: .regularExpression) != nil
    }

    /// Temporary files left by a backup that was killed (`.<file>.savetool-XXXXXX`); called
    /// with the lock held, when no other savetool can be writing one.
    public func removeStrayTemporaryFiles() -> [String] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed: [String] = []
        for file in entries where FileIO.isTemporaryName(file) {
            var info = stat()
            let path = directory + "/" + file
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, unlink(path) == 0 { removed.append(path) }
        }
        return removed
    }
}
