#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Paths compared by their UTF-8 bytes, the names on disk: Swift's `==` and `<` compare
/// strings by canonical equivalence, and call an NFC and an NFD spelling of one name equal,
/// which a file system such as ext4 keeps as two names.
enum PathBytes {
    /// The order of two paths by their bytes (export's order), as `memcmp` gives it.
    static func compare(_ first: String, _ second: String) -> Int {
        var (first, second) = (first, second)
        return first.withUTF8 { a in
            second.withUTF8 { b in
                let common = memcmp(a.baseAddress ?? UnsafePointer(bitPattern: 1)!, b.baseAddress ?? UnsafePointer(bitPattern: 1)!, min(a.count, b.count))
                return common != 0 ? Int(common) : a.count - b.count
            }
        }
    }

    /// Whether `path`'s folder, what comes before its last `/`, is `folder`, byte for byte (false
    /// when there is no `folder`); `nil` when `path` has no `/`. Compared in place, with no
    /// string made of the folder: most paths share the folder of the one before.
    static func folder(of path: String, is folder: String?) -> Bool? {
        var path = path
        return path.withUTF8 { bytes in
            guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return nil }
            guard var folder else { return false }
            return folder.withUTF8 { folder in
                folder.count == slash && (slash == 0 || memcmp(folder.baseAddress!, bytes.baseAddress!, slash) == 0)
            }
        }
    }
}
