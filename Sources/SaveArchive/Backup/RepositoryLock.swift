import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The repository's `.savetool-lock`, held with `flock`: the kernel releases it when the
/// holder exits, however it exits, so a lock left by a killed savetool never blocks.
///
/// Only the commands that change the repository (`create`, `prune`) take it. Readers (`list`,
/// `verify`) do not: a long verify must not cost an hourly `create` its run. They read each
/// backup through one open descriptor (a backup removed meanwhile reads on whole), and skip one
/// that is gone before they open it.
public final class RepositoryLock {
    private let descriptor: Int32

    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case busy(path: String, waited: TimeInterval)
        case cannotOpen(path: String, reason: String)

        public var description: String {
            switch self {
            case .busy(_, let waited):
                "another savetool holds the repository's lock (waited \(Int(waited)) s), expected it free; try again when it is done"
            case .cannotOpen(_, let reason): "cannot open the lock: \(reason), expected a backup repository this user may write to"
            }
        }

        public var path: String {
            switch self {
            case .busy(let path, _), .cannotOpen(let path, _): path
            }
        }
    }

    /// The lock's file name in a repository: it also marks the folder as one.
    public static let fileName = ".savetool-lock"

    /// Takes the lock of `repository`, waiting up to `wait` seconds for another holder.
    public init(repository: String, wait: TimeInterval = 3) throws(Failure) {
        let path = repository + "/" + Self.fileName
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .cannotOpen(path: path, reason: FileError.reason(errno)) }
        let deadline = Date().addingTimeInterval(wait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, Date() < deadline else {
                close(descriptor)
                throw .busy(path: path, waited: wait)
            }
            usleep(50_000)
        }
        // Set only once the lock is had: a throw before leaves nothing for deinit to close again.
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

extension RepositoryLock.Failure: CategorizedError {
    public var category: ErrorCategory {
        switch self {
        case .busy: .busy
        case .cannotOpen: .cannotCreate
        }
    }
}
