import SaveKit

/// Why a bundle was refused or could not be restored. Nothing is written to the destination
/// in any of these cases.
public enum BundleImportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The manifest is missing, not first, not JSON of the expected shape, or of an unknown format.
    case badManifest(bundle: String, reason: String)
    /// An entry that could write outside the destination or is not a plain file: an absolute
    /// path, `..`, a link, a device or FIFO, a duplicate, a name colliding with another.
    case unsafeEntry(bundle: String, entry: String, reason: String)
    /// An entry whose bytes are not what the manifest says, or a listed file that is missing.
    case mismatch(bundle: String, entry: String, reason: String)
    /// With `strict`, a save that is invalid, cannot be migrated, or is from the future.
    case invalidSave(bundle: String, entry: String, reason: String)
    /// Past a limit on size, entry count or compression ratio.
    case limitExceeded(bundle: String, reason: String, limit: ErrorHint.ImportLimit)
    /// Not enough free space for the staged copy.
    /// `why`: what the bytes needed are made of.
    case noSpace(destination: String, needed: Int64, available: Int64, why: String)
    case io(path: String, reason: String)

    public var path: String {
        switch self {
        case .badManifest(let bundle, _), .unsafeEntry(let bundle, _, _), .mismatch(let bundle, _, _), .limitExceeded(let bundle, _, _),
            .invalidSave(let bundle, _, _):
            bundle
        case .noSpace(let destination, _, _, _): destination
        case .io(let path, _): ExactFileName.printable(path)
        }
    }

    /// What went wrong, as people read it: one line, a byte of a name that is not UTF-8 as `\xE9`.
    public var description: String { ExactFileName.oneLine(rawDescription) }

    private var rawDescription: String {
        switch self {
        case .badManifest(_, let reason): "manifest.json: \(reason)"
        case .unsafeEntry(_, let entry, let reason): "\(ExactFileName.printable(entry)): \(reason)"
        case .mismatch(_, let entry, let reason), .invalidSave(_, let entry, let reason): "\(ExactFileName.printable(entry)): \(reason)"
        case .limitExceeded(_, let reason, _): reason
        case .noSpace(_, let needed, let available, let why):
            "not enough free space: \(needed) bytes needed for the staged copy (\(why)), \(available) available, expected room for it beside the destination"
        case .io(_, let reason): reason
        }
    }
}

extension BundleImportError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .noSpace, .io: .io
        default: .badData
        }
    }

    public var hint: ErrorHint? {
        if case .limitExceeded(_, _, let limit) = self { return .raiseLimit(limit) }
        return nil
    }
}
