import Foundation
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tokens file a running server reads again when it changes, without a restart: a token
/// added with `savetool serve token add` counts at once (an unknown token has the file looked
/// at again), one removed from the file by hand (its revocation) within a second. A file that
/// no longer reads leaves the tokens read before in force, and says so once in the server's log.
final class TokenFile: @unchecked Sendable {
    let path: String
    private let log: @Sendable (String) -> Void
    private let lock = NSLock()
    private var tokens: TokenList
    /// What the file was when `tokens` was read (or last found unreadable): its identity and time.
    private var seen: (device: UInt64, inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int)
    private var lastLook = ContinuousClock.now

    /// Whether the file was missing at the last look (said once).
    private var missing = false

    init(path: String, tokens: TokenList, log: @escaping @Sendable (String) -> Void) {
        (self.path, self.log) = (path, log)
        // Looked at before it is read again: a change in between is seen at the next look.
        seen = Self.look(at: path) ?? (0, 0, -1, 0, 0)
        self.tokens = (try? TokenList(file: path)) ?? tokens
    }

    /// The tokens in force, the file looked at again at most once a second.
    var current: TokenList { current(lookingNow: false) }

    /// The tokens in force; with `lookingNow`, the file looked at again whenever it was last
    /// looked at (for a token not among them: one added a moment ago works at once).
    func current(lookingNow: Bool) -> TokenList {
        lock.withLock {
            let now = ContinuousClock.now
            guard lookingNow || now - lastLook >= .seconds(1) else { return tokens }
            lastLook = now
            guard let found = Self.look(at: path) else {
                if !missing { log("tokens: \(path): \(FileError.reason(errno)); the tokens read before stay in force") }
                missing = true
                return tokens
            }
            missing = false
            guard found != seen else { return tokens }
            seen = found
            do {
                tokens = try TokenList(file: path)
                log("tokens: \(path) read again: \(tokens.entries.count) token\(tokens.entries.count == 1 ? "" : "s")")
            } catch {
                log("tokens: \(error); the tokens read before stay in force")
            }
            return tokens
        }
    }

    private static func look(at path: String) -> (device: UInt64, inode: UInt64, size: Int64, seconds: Int, nanoseconds: Int)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino), Int64(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec)
    }
}
