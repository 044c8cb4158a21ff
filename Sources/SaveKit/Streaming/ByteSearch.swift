#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finding bytes in bytes, as `memmem` does (which Glibc's module does not expose): `memchr`
/// for the needle's rarest byte, then one comparison of the whole needle around each hit.
///
/// Looking for the first byte instead stops at every `p` of a JSON save when the needle is
/// `playerLevel`; its `L` is rarely there by chance. Searching for dictionary keys this way was
/// 13% of an import's reading thread (docs/performance.md).
enum ByteSearch {
    /// A needle, with the byte to look for first chosen once.
    struct Needle: Sendable {
        let bytes: [UInt8]
        /// The offset in `bytes` of the byte least likely to occur in a save by chance.
        let rareOffset: Int

        init(_ bytes: [UInt8]) {
            self.bytes = bytes
            var best = 0
            for (offset, byte) in bytes.enumerated() where ByteSearch.commonness[Int(byte)] < ByteSearch.commonness[Int(bytes[best])] {
                best = offset
            }
            rareOffset = best
        }
    }

    /// Whether `needle` occurs in `haystack`; an empty needle always does.
    static func contains(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Bool {
        contains(Needle(needle), in: haystack)
    }

    /// Whether `needle` occurs in `haystack`; an empty needle always does.
    static func contains(_ needle: Needle, in haystack: UnsafeRawBufferPointer) -> Bool {
        let count = needle.bytes.count
        guard count > 0 else { return true }
        guard let base = haystack.baseAddress, haystack.count >= count else { return false }
        return needle.bytes.withUnsafeBytes { wanted in
            let offset = needle.rareOffset
            let rare = Int32(wanted[offset])
            // The rare byte can only be where a whole match fits around it.
            var start = base + offset
            let end = base + (haystack.count - count + offset + 1)
            while start < end, let hit = memchr(start, rare, end - start) {
                if memcmp(hit - offset, wanted.baseAddress!, count) == 0 { return true }
                start = UnsafeRawPointer(hit) + 1
            }
            return false
        }
    }

    /// How often each byte turns up in save files, roughly: the position from the end in a list
    /// of the usual bytes of JSON, XML and binary plists, most usual first; 0 for the rest
    /// (capitals, `q`, `x`, `z`, `j`, bytes above ASCII), which a needle is best found by.
    static let commonness: [UInt8] = {
        let usual: [UInt8] = [0x00] + Array(" e\"ta,:oinsr01l2dchu3456789mp.fgybw\n{}[]-_vk\t/<>=".utf8) + [0xFF]
        var table = [UInt8](repeating: 0, count: 256)
        for (position, byte) in usual.enumerated() where table[Int(byte)] == 0 {
            table[Int(byte)] = UInt8(usual.count - position)
        }
        return table
    }()
}
