import Foundation
import SaveKit

/// Saves the files a command is about to replace, so that no original is ever lost: used by
/// `migrate --in-place` and `import` (and anything else that rewrites a user's files).
///
/// The bundle holds exactly the files given (and the folders on their way, as they were), is created under a name no other bundle has (an
/// existing file is never replaced: a second run in the same second gets `-2`), and is on disk
/// (flushed, its directory too) before this returns — so before the first original is replaced.
///
/// ```swift
/// let keeper = OriginalsKeeper(createdBy: "savetool 1.0", purpose: "migrate")
/// let bundle = try keeper.keep(["a.json", "b/c.json"], under: "Documents", in: "/saves", name: "Documents")
/// // → /saves/Documents-before-migrate-2026-11-23T101500Z.tar.gz
/// ```
public struct OriginalsKeeper: Sendable {
    public var createdBy: String
    /// What is about to happen, in the bundle's name and label: `migrate`, `import`, `merge`.
    public var purpose: String
    public var now: @Sendable () -> Date = { Date() }
    /// Told of what the bundle cannot hold and leaves out (a FIFO, a socket, a device): the
    /// command that replaces the files then says it.
    public var warn: @Sendable (String) -> Void = { _ in }

    public init(createdBy: String, purpose: String) {
        self.createdBy = createdBy
        self.purpose = purpose
    }

    /// Writes the files at the relative `paths` under `root` (everything under it, folders and
    /// links too, when `nil`) into a new bundle in `directory`, named
    /// `<name>-before-<purpose>-<time>[-N].tar.gz`, and returns its path. `nil` when there is
    /// nothing to keep: nothing changes, so nothing is written.
    public func keep(_ paths: [String]?, under root: String, in directory: String, name: String) throws -> String? {
        removeAbandonedBundles(in: directory, name: name)
        if let paths, paths.isEmpty { return nil }
        if paths == nil {
            // A folder that is not there holds nothing to keep; one that cannot be listed is
            // not empty: what it holds is unknown, and must not be replaced unkept.
            func isGone() -> Bool {
                var info = stat()
                return lstat(root, &info) != 0 && errno == ENOENT
            }
            if isGone() { return nil }
            let entries: [(bytes: [UInt8], type: UInt8)]
            do { entries = try FileIO.entries(in: root) } catch {
                guard case .unreadable(_, let reason) = error else { throw error }
                if isGone() { return nil }  // gone since: nothing to keep
                throw BundleError.unreadable(path: root, reason: reason)
            }
            if entries.isEmpty { return nil }
        }
        let moment = now()
        let stamp = RFC3339.format(Date(timeIntervalSinceReferenceDate: moment.timeIntervalSinceReferenceDate.rounded(.down)))
            .replacingOccurrences(of: ":", with: "")
        var exporter = BundleExporter(createdAt: moment, createdBy: createdBy)
        exporter.label = "before \(purpose)"
        exporter.warn = warn
        for attempt in 1...1000 {
            let suffix = attempt == 1 ? "" : "-\(attempt)"
            let bundle = "\(directory)/\(name)-before-\(purpose)-\(stamp)\(suffix).tar.gz"
            // A name taken already is passed over before the folder is read (and its warnings
            // said) again; the exclusive rename at the end still settles a race.
            var info = stat()
            if lstat(bundle, &info) == 0 { continue }
            do {
                if let paths {
                    try exporter.export(files: paths, under: root, to: bundle, replacing: false)
                } else {
                    try exporter.export(directory: root, to: bundle, replacing: false)
                }
                return bundle
            } catch BundleError.exists {
                continue
            }
        }
        throw BundleError.cannotCreate(path: "\(directory)/\(name)-before-\(purpose)-\(stamp).tar.gz", reason: "a thousand bundles of that name exist already")
    }

    /// The unfinished bundles of a run that was killed before its bundle was complete (and so
    /// before any original was replaced): `.<name>-before-<purpose>-….tar.gz.savetool-XXXXXX`.
    public func removeAbandonedBundles(in directory: String, name: String) {
        guard let siblings = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return }
        for sibling in siblings where sibling.hasPrefix(".\(name)-before-\(purpose)-") && FileIO.isTemporaryName(sibling) {
            unlink(directory + "/" + sibling)
        }
    }
}
