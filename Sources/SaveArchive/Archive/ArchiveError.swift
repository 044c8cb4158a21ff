import SaveKit

/// Why an archive could not be read or written.
public enum ArchiveError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libarchive refused the archive or one of its entries. A warning counts: libarchive
    /// reports a zip CRC mismatch, for one, only as a warning.
    case malformed(archive: String, entry: String?, message: String)
    /// The archive file cannot be opened or created.
    case unreadable(archive: String, message: String)
    case cannotCreate(archive: String, message: String)
    /// Writing failed part way (a full disk included).
    case ioFailure(archive: String, message: String)
    /// An entry was written with more or fewer bytes than its header declared.
    case sizeMismatch(archive: String, entry: String, declared: Int64, written: Int64)

    /// What went wrong, with entry names on one line and bytes that are not UTF-8 as `\xE9`.
    public var description: String { ExactFileName.oneLine(rawDescription) }

    private var rawDescription: String {
        switch self {
        case .malformed(_, let entry, let message):
            entry.map { "entry \(ExactFileName.printable($0)): \(message)" } ?? message
        case .unreadable(_, let message): "cannot read: " + FileError.reason(message, expecting: "an archive that exists and can be read")
        case .cannotCreate(_, let message): "cannot create: \(message)"
        case .ioFailure(_, let message): "writing failed: \(message)"
        case .sizeMismatch(_, let entry, let declared, let written):
            "entry \(ExactFileName.printable(entry)): \(written) bytes written, expected the \(declared) its header declares"
        }
    }
}

extension ArchiveError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .malformed: .badData
        case .unreadable: .notFound
        case .cannotCreate: .cannotCreate
        case .ioFailure, .sizeMismatch: .io
        }
    }

    /// The archive file the error is about.
    public var archive: String {
        switch self {
        case .malformed(let archive, _, _), .unreadable(let archive, _), .cannotCreate(let archive, _), .ioFailure(let archive, _),
            .sizeMismatch(let archive, _, _, _):
            archive
        }
    }
}
