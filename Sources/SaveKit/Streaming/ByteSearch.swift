#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding bytes in bytes, as `memmem` does (which Glibc's module does not expose): `memchr`
/// for the first byte, then one comparison of the rest.
enum ByteSearch {
    /// Whether `needle` occurs in `haystack`; an empty needle always does.
    static func contains(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Bool {
        guard let first = needle.first else { return true }
        guard let base = haystack.baseAddress, haystack.count >= needle.count else { return false }
        return needle.withUnsafeBytes { wanted in
            var start = base
            let last = base + (haystack.count - needle.count)  // the last place a match can begin
            let final = needle[needle.count - 1]
            while start <= last, let hit = memchr(start, Int32(first), last - start + 1) {
                if hit.load(fromByteOffset: needle.count - 1, as: UInt8.self) == final, memcmp(hit, wanted.baseAddress!, needle.count) == 0 { return true }
                start = UnsafeRawPointer(hit) + 1
            }
            return false
        }
    }
}
