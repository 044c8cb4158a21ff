/// What kind of failure an error is, whatever type carries it: the one vocabulary that the
/// command line maps to exit codes (cli.md) and a server to HTTP statuses.
///
/// Every error SaveKit and SaveArchive throw conforms to ``CategorizedError``; a front end
/// switches over the category, never over concrete error types.
public enum ErrorCategory: Sendable, Equatable, CaseIterable {
    /// The caller asked for something impossible: an unknown kind, a version past the latest,
    /// options that contradict each other.
    case usage
    /// The input is not what it should be: unparsable, invalid for its schema, from the
    /// future, a checksum that does not match, an unsafe archive entry.
    case badData
    /// An input does not exist or cannot be opened.
    case notFound
    /// The output cannot be created.
    case cannotCreate
    /// Reading or writing failed part way, a full disk included.
    case io
    /// Another process holds what is needed; trying again later may work.
    case busy
    /// The credentials or permissions were refused.
    case permissionDenied
    /// Two changes that no rule reconciles.
    case conflict
}

/// Something a user can do about an error. Libraries say what it means; only a front end
/// turns it into words such as a flag name.
public enum ErrorHint: Sendable, Hashable {
    /// Accept a key repeated in one dictionary, keeping the last value.
    case keepLastDuplicateKey
    /// Say which codec the input is in.
    case nameTheCodec
    /// The bundle is past a safety limit; raising it is safe only for a trusted bundle.
    case raiseLimit(ImportLimit)
    /// Name the backup, since the default name is taken by another source.
    case nameTheBackup
    /// Import the files exactly as they are, without migrating them.
    case importWithoutMigrating
    /// Leave out the keys whose value is null, for a format without null.
    case dropNulls
    /// Round dates down to whole seconds, for a format without fractions of a second.
    case roundDates
    /// Keep dates, data and uids typed (typed JSON rather than plain JSON).
    case keepTypes
    /// Read a keyed archive's object table as it is, not as the objects it holds.
    case readArchiveTable
    /// Write a value of another type where a keyed archive held one.
    case retype
    /// Trust a server's certificate that the system's CAs do not vouch for (a private CA, a
    /// self-signed server).
    case trustTheCertificate
    /// Send a token: the server asks for one, and none was given.
    case giveAToken
    /// Migrate the files in place, which keeps their originals first, rather than write copies
    /// among them.
    case migrateInPlace
    /// Keep more days of backups.
    case keepMoreDays

    /// The limits `import` applies to a bundle.
    public enum ImportLimit: Sendable, Hashable {
        case totalBytes, entries, compressionRatio
    }
}

/// An error that knows its ``ErrorCategory`` and, maybe, an ``ErrorHint``.
public protocol CategorizedError: Error, CustomStringConvertible {
    var category: ErrorCategory { get }
    var hint: ErrorHint? { get }
}

extension CategorizedError {
    public var hint: ErrorHint? { nil }
}

/// An error of the kind most code needs: a category, the file, a place in it, the message, and
/// what caused it. Shaped after swift-nio's `FileSystemError`: one type, a code, a message, a cause.
public struct SaveError: CategorizedError, Sendable {
    public var category: ErrorCategory
    /// The file the error is about, when there is one.
    public var file: String?
    /// Where in the file: `3:14`, `byte 412`, a JSON Pointer, an archive entry.
    public var location: String?
    /// What was found and what was expected, for people.
    public var message: String
    public var hint: ErrorHint?
    /// The lower-level error this one explains, if any.
    public var cause: (any Error & Sendable)?

    public init(_ category: ErrorCategory, file: String? = nil, location: String? = nil, _ message: String, hint: ErrorHint? = nil, cause: (any Error & Sendable)? = nil) {
        (self.category, self.file, self.location, self.message, self.hint, self.cause) = (category, file, location, message, hint, cause)
    }

    /// A file that does not decode: a ``CodecError``'s place in ``location`` and its words in
    /// ``message`` (`file:1:28: …`, as every other message), any other error's words as they are.
    public init(reading error: any Error & Sendable, file: String?) {
        let decoding = error as? CodecError
        self.init(.badData, file: file, location: decoding?.location.map { "\($0)" }, decoding?.problem ?? "\(error)", cause: error)
    }

    /// `file:location: message` (cli.md's shape), each part only when present.
    public var description: String {
        switch (file, location) {
        case (let file?, let location?): "\(file):\(location): \(message)"
        case (let file?, nil): "\(file): \(message)"
        case (nil, let location?): "\(location): \(message)"
        case (nil, nil): message
        }
    }
}

extension CodecError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .unknownCodec: .usage
        case .malformed, .unrepresentable, .limitExceeded, .undetectable, .plugin: .badData
        }
    }

    public var hint: ErrorHint? {
        switch self {
        case .undetectable: .nameTheCodec
        // The readers and ValueLowering word these cases alike, so the words tell the hint.
        case .malformed("keyed", _, _, _), .limitExceeded("keyed", _, _, _): .readArchiveTable
        case .unrepresentable("keyed", _, let found, _) where found.contains(" where the archive held "): .retype
        case .malformed(_, _, let found, _): found.hasSuffix(" a second time") ? .keepLastDuplicateKey : nil
        case .unrepresentable(_, _, let found, _) where found == "null": .dropNulls
        case .unrepresentable(_, _, let found, _) where found.hasSuffix("with a fraction of a second"): .roundDates
        default: nil
        }
    }
}

extension FileError: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .unreadable: .notFound
        case .cannotCreate: .cannotCreate
        case .ioFailure: .io
        case .tooLarge: .badData
        }
    }
}

extension PointerError: CategorizedError {
    /// A malformed pointer is a usage error; a pointer that leads nowhere is a negative answer,
    /// which the command line reports as its own exit code 1.
    public var category: ErrorCategory {
        switch self {
        case .notAPointer, .badEscape, .cannotRemoveRoot: .usage
        default: .badData
        }
    }
}

extension KindLoader.LoadError: CategorizedError {
    public var category: ErrorCategory { .badData }
}

extension KindLoader.LoadErrors: CategorizedError {
    public var category: ErrorCategory { .badData }
}

extension RegistryError: CategorizedError {
    public var category: ErrorCategory { .usage }
}
