import ArgumentParser
import SaveArchive
import SaveKit

/// Turns any error into the one-line message and the exit code of the command-line contract:
/// `savetool: <file>:<where>: <what was found>, expected <what was expected>`.
///
/// Errors say what kind of failure they are (``ErrorCategory``); the exit code follows from
/// that alone, through one table. Hints become flag names here and nowhere else.
public enum Failure {
    /// Exit codes, sysexits-style (cli.md).
    public enum Code {
        public static let negative: Int32 = 1
        public static let usage: Int32 = 64
        public static let dataError: Int32 = 65
        public static let noInput: Int32 = 66
        public static let software: Int32 = 70
        public static let cannotCreate: Int32 = 73
        public static let ioError: Int32 = 74
        public static let temporary: Int32 = 75
        public static let permissionDenied: Int32 = 77
    }

    /// The one table from a category to an exit code.
    public static func exitCode(_ category: ErrorCategory) -> Int32 {
        switch category {
        case .usage: Code.usage
        case .badData: Code.dataError
        case .notFound: Code.noInput
        case .cannotCreate: Code.cannotCreate
        case .io: Code.ioError
        case .busy: Code.temporary
        case .permissionDenied: Code.permissionDenied
        case .conflict: Code.negative
        }
    }

    /// What the user can type to act on a hint.
    public static func words(for hint: ErrorHint) -> String {
        switch hint {
        case .keepLastDuplicateKey: "--duplicate-keys last keeps the last, as Apple's readers do"
        case .nameTheCodec: "name it with --from"
        case .raiseLimit(.totalBytes): "raise the limit with --max-bytes if the bundle is trusted"
        case .raiseLimit(.entries): "raise the limit with --max-entries if the bundle is trusted"
        case .raiseLimit(.compressionRatio): "raise the limit with --max-ratio if the bundle is trusted"
        case .nameTheBackup: "give this source a name of its own with --name"
        case .importWithoutMigrating: "--no-migrate imports it as it is"
        case .dropNulls: "--null drop leaves such keys out"
        case .roundDates: "--round-dates rounds down"
        case .keepTypes: "typed JSON, without --plain, keeps them"
        case .readArchiveTable: "--raw-archive reads its object table as it is"
        case .retype: "--retype writes it anyway"
        case .trustTheCertificate: "--cacert trusts a private CA or the server's own certificate"
        case .giveAToken: "--token-file names a file holding one"
        case .migrateInPlace: "or --in-place, which keeps the originals in a bundle first"
        case .keepMoreDays: "--keep N keeps more days"
        }
    }

    /// A warning of ``ValueLowering``, with the option that made the change.
    public static func warning(_ change: (text: String, hint: ErrorHint?)) -> String {
        change.text + (offered(change.hint).map { " (\(words(for: $0)))" } ?? "")
    }

    /// The hints whose flags only `convert` takes (`--null`, `--round-dates`, `--plain`).
    static let conversionHints: Set<ErrorHint> = [.dropNulls, .roundDates, .keepTypes]
    /// Whether the command that runs takes the flags of ``conversionHints``: `convert` says so.
    /// Other commands leave those hints out rather than name a flag they do not take.
    nonisolated(unsafe) public static var offersConversionChoices = false

    static func offered(_ hint: ErrorHint?) -> ErrorHint? {
        guard let hint, offersConversionChoices || !conversionHints.contains(hint) else { return nil }
        return hint
    }

    /// Runs `body`; on error prints its message (naming `file`) and exits with its code.
    public static func reporting<T>(file: String? = nil, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            throw ExitCode(report(error, file: file))
        }
    }

    /// Prints `error` as savetool's message (a line for each file of several kind files with a
    /// mistake) and returns its exit code.
    public static func report(_ error: any Error, file: String?) -> Int32 {
        if let errors = error as? KindLoader.LoadErrors {
            for each in errors.errors { Console.error("savetool: \(each)") }
            return exitCode(errors.category)
        }
        let (message, code) = describe(error, file: file)
        Console.error("savetool: " + message)
        return code
    }

    public static func describe(_ error: any Error, file: String?) -> (message: String, code: Int32) {
        let prefix = file.map { ($0 == "-" ? "<stdin>" : $0) + ":" } ?? ""
        switch error {
        case let error as ValidationError:
            return (error.message, Code.usage)
        case let error as LocatedError:
            return ("\(error.file):\(error.message)", error.code)
        case let error as PointerError where error.category == .badData:
            return (prefix + "\(error)", Code.negative)  // a path that leads nowhere: a negative answer
        case let error as any CategorizedError:
            let text = message(error, prefix: prefix) + (offered(error.hint).map { "; " + words(for: $0) } ?? "")
            return (text, exitCode(error.category))
        default:
            return (prefix + " \(error)", Code.software)
        }
    }

    /// The message of a categorized error, led by the file it is about.
    private static func message(_ error: any CategorizedError, prefix: String) -> String {
        switch error {
        case let error as CodecError:
            if case .unknownCodec = error { return "\(error)" }
            // Errors without a place of their own get the space after the file's colon.
            if error.location == nil { return prefix + " \(error)" }
            return prefix + "\(error)"
        case let error as PointerError: return "\(error)"
        case let error as FileError: return "\(shownPath(of: error)): \(error)"
        case let error as BundleError: return "\(error.path): \(error)"
        case let error as RepositoryLock.Failure: return "\(error.path): \(error)"
        case let error as BundleImportError: return "\(error.path): \(error)"
        case let error as ArchiveError: return prefix.isEmpty ? "\(shownArchive(of: error)): \(error)" : prefix + " \(error)"
        // The file given, then the error's place right after its colon (cli.md's file:place).
        case let error as SaveError where error.file == nil && !prefix.isEmpty: return prefix + (error.location == nil ? " " : "") + "\(error)"
        default: return "\(error)"
        }
    }
}

extension Failure {
    /// An archive named `-` is standard output when written (`export -o -`), standard input
    /// when read (`import -`).
    static func shownArchive(of error: ArchiveError) -> String {
        guard error.archive == "-" else { return error.archive }
        switch error {
        case .cannotCreate, .ioFailure, .sizeMismatch: return "<stdout>"
        case .malformed, .unreadable: return "-"
        }
    }

    /// `-` is standard input when read and standard output when written.
    static func shownPath(of error: FileError) -> String {
        guard error.path == "-" else { return error.path }
        switch error {
        case .cannotCreate: return "<stdout>"
        case .ioFailure(_, let operation, _) where operation != "reading": return "<stdout>"
        default: return "<stdin>"
        }
    }
}

/// An error found by a command itself, already knowing its file and place.
public struct LocatedError: Error {
    public var file: String
    public var message: String
    public var code: Int32

    public init(file: String, message: String, code: Int32) { (self.file, self.message, self.code) = (file, message, code) }
}
