import CArchive

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs libarchive calls in a UTF-8 character locale on the calling thread only.
///
/// libarchive converts entry names through the process locale, which for a Swift program is
/// "C" (ASCII): non-ASCII names then fail to convert, and Debian's libarchive 3.6.2 crashes
/// writing pax headers for them. `uselocale` switches the calling thread alone, so a program
/// embedding SaveKit keeps its own locale.
enum UTF8Locale {
    nonisolated(unsafe) private static let utf8: locale_t? = {
        newlocale(LC_CTYPE_MASK, "C.UTF-8", nil) ?? newlocale(LC_CTYPE_MASK, "en_US.UTF-8", nil)
    }()

    static func run<T>(_ body: () throws -> T) rethrows -> T {
        guard let utf8 else { return try body() }
        let previous = uselocale(utf8)
        defer { uselocale(previous) }
        return try body()
    }
}
