#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Why a file could not be read or written. Each case maps to one exit code of the CLI.
public enum FileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The input does not exist or cannot be opened (exit 66).
    case unreadable(path: String, reason: String)
    /// The output cannot be created (exit 73).
    case cannotCreate(path: String, reason: String)
    /// Reading or writing failed part way, a full disk included (exit 74).
    case ioFailure(path: String, operation: String, reason: String)
    /// An input of no known size (a pipe, a device, standard input) went on past what a save
    /// document may be (exit 65): `/dev/zero` given by mistake stops here, not when memory ends.
    case tooLarge(path: String, limit: Int)

    public var path: String {
        switch self {
        case .unreadable(let path, _), .cannotCreate(let path, _), .ioFailure(let path, _, _), .tooLarge(let path, _): path
        }
    }

    /// cli.md's shape, `<found>, expected <expected>`: `reason` with what was expected, unless it
    /// says so already.
    public static func reason(_ reason: String, expecting expected: String) -> String {
        reason.contains(", expected") ? reason : reason + ", expected " + expected
    }

    public var description: String {
        switch self {
        case .unreadable(_, let reason): "cannot read: " + Self.reason(reason, expecting: "a file that exists and can be read")
        case .cannotCreate(_, let reason): "cannot create: " + Self.reason(reason, expecting: "a place where a file can be made")
        case .ioFailure(_, let operation, let reason): "\(operation) failed: \(reason)"
        case .tooLarge(_, let limit):
            "more than \(limit >> 30) GiB and still going, expected a save document (a pipe, a device or standard input is read up to \(limit >> 30) GiB)"
        }
    }

    /// Foundation's error for a file or folder it could not make or read, as a reason people
    /// read (`permission denied`), not Foundation's sentence ("The operation could not be
    /// completed. You don't have permission.").
    public static func reason(of error: any Error) -> String {
        if let error = error as? FileError {
            switch error {
            case .unreadable(_, let reason), .cannotCreate(_, let reason), .ioFailure(_, _, let reason): return reason
            case .tooLarge: return error.description
            }
        }
        let error = error as NSError
        // On Linux the underlying error is a Swift error in the dictionary, which `as? NSError` misses.
        let underlying = (error.userInfo[NSUnderlyingErrorKey] as? any Error).map { $0 as NSError }
        for candidate in [underlying, error].compactMap({ $0 }) where candidate.domain == NSPOSIXErrorDomain {
            return reason(Int32(truncatingIfNeeded: candidate.code))
        }
        if error.domain == NSCocoaErrorDomain {
            switch CocoaError.Code(rawValue: error.code) {
            case .fileWriteNoPermission, .fileReadNoPermission: return reason(EACCES)
            case .fileNoSuchFile, .fileReadNoSuchFile: return reason(ENOENT)
            case .fileWriteOutOfSpace: return reason(ENOSPC)
            case .fileWriteVolumeReadOnly: return reason(EROFS)
            case .fileWriteFileExists: return reason(EEXIST)
            default: break
            }
        }
        return error.localizedDescription
    }

    /// A short explanation of an `errno` value, for messages.
    public static func reason(_ code: Int32) -> String {
        switch code {
        case ENOENT: "no such file or directory"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "is a directory, expected a file"
        case ENOSPC: "no space left on the device"
        case EDQUOT: "disk quota exceeded"
        case EFBIG: "file too large for this file system or limit"
        case EROFS: "read-only file system"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
