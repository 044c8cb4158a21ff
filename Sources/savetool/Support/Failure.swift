import ArgumentParser
import SaveArchive
import SaveKit

/// Turns any error into the one-line message and the exit code of the command-line contract:
/// `savetool: <file>:<where>: <what was found>, expected <what was expected>`.
enum Failure {
    /// Exit codes, sysexits-style.
    enum Code {
        static let negative: Int32 = 1
        static let usage: Int32 = 64
        static let dataError: Int32 = 65
        static let noInput: Int32 = 66
        static let software: Int32 = 70
        static let cannotCreate: Int32 = 73
        static let ioError: Int32 = 74
        static let temporary: Int32 = 75
    }

    /// Runs `body`; on error prints its message (naming `file`) and exits with its code.
    static func reporting<T>(file: String? = nil, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let exit as ExitCode {
            throw exit
        } catch {
            let (message, code) = describe(error, file: file)
            Console.error("savetool: " + message)
            throw ExitCode(code)
        }
    }

    static func describe(_ error: any Error, file: String?) -> (message: String, code: Int32) {
        let prefix = file.map { ($0 == "-" ? "<stdin>" : $0) + ":" } ?? ""
        switch error {
        case let error as CodecError:
            switch error {
            case .unknownCodec: return ("\(error)", Code.usage)
            case .undetectable: return (prefix + " \(error)", Code.dataError)
            default: return (prefix + "\(error)", Code.dataError)
            }
        case let error as FileError:
            let code: Int32
            switch error {
            case .unreadable: code = Code.noInput
            case .cannotCreate: code = Code.cannotCreate
            case .ioFailure: code = Code.ioError
            }
            return ("\(error.path): \(error)", code)
        case let error as PointerError:
            switch error {
            case .notAPointer, .badEscape: return ("\(error)", Code.usage)
            default: return (prefix + "\(error)", Code.negative)
            }
        case let error as LocatedError:
            return ("\(error.file):\(error.message)", error.code)
        case let error as BundleError:
            let code: Int32
            switch error {
            case .notADirectory, .unreadable: code = Code.noInput
            case .cannotCreate: code = Code.cannotCreate
            case .ioFailure, .changedDuringExport: code = Code.ioError
            case .unsupportedEntry: code = Code.dataError
            }
            return ("\(error.path): \(error)", code)
        case let error as RepositoryLock.Failure:
            switch error {
            case .busy: return ("\(error.path): \(error)", Code.temporary)
            case .cannotOpen: return ("\(error.path): \(error)", Code.cannotCreate)
            }
        case let error as BundleImportError:
            switch error {
            case .noSpace, .io: return ("\(error.path): \(error)", Code.ioError)
            default: return ("\(error.path): \(error)", Code.dataError)
            }
        case let error as ArchiveError:
            let code: Int32
            let path: String
            switch error {
            case .malformed(let archive, _, _): (code, path) = (Code.dataError, archive)
            case .unreadable(let archive, _): (code, path) = (Code.noInput, archive)
            case .cannotCreate(let archive, _): (code, path) = (Code.cannotCreate, archive)
            case .ioFailure(let archive, _), .sizeMismatch(let archive, _, _, _): (code, path) = (Code.ioError, archive)
            }
            return ("\(path): \(error)", code)
        case let error as KindLoader.LoadError:
            return ("\(error)", Code.dataError)
        case let error as ValidationError:
            return (error.message, Code.usage)
        case let error as RegistryError:
            return ("\(error)", Code.usage)
        default:
            return (prefix + " \(error)", Code.software)
        }
    }
}

/// An error found by a command itself, already knowing its file and place.
struct LocatedError: Error {
    var file: String
    var message: String
    var code: Int32
}
