import Crypto

/// SHA-256 in lower-case hexadecimal, as manifests and reports write it.
public enum Checksum {
    public static func sha256(_ bytes: [UInt8]) -> String {
        hex(SHA256.hash(data: bytes))
    }

    /// The hexadecimal form of a digest computed incrementally (files hashed as they stream).
    ///
    /// Written out by hand: `String(format: "%02x")` per byte cost more than the hashing itself
    /// (40% of a batch migration's CPU, and of an import's).
    public static func hex(_ digest: SHA256.Digest) -> String {
        digest.withUnsafeBytes { bytes in
            String(unsafeUninitializedCapacity: bytes.count * 2) { text in
                for (index, byte) in bytes.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0F)]
                }
                return bytes.count * 2
            }
        }
    }

    /// Whether `hex` is the lower-case hexadecimal form of `digest`, found without making it
    /// (an import compares every file's digest with the manifest's).
    public static func matches(_ digest: SHA256.Digest, hex: String) -> Bool {
        var hex = hex
        return hex.withUTF8 { text in
            digest.withUnsafeBytes { bytes in
                guard text.count == bytes.count * 2 else { return false }
                // The digits of ``digits``, computed: looked up in that array, every file of a
                // 10,000-file import took 365 instructions more (callgrind).
                func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }
                var index = 0
                while index < bytes.count {
                    let byte = bytes[index]
                    if text[2 * index] != digit(byte >> 4) || text[2 * index + 1] != digit(byte & 0x0F) { return false }
                    index += 1
                }
                return true
            }
        }
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)
}
