import Crypto

/// SHA-256 in lower-case hexadecimal, as manifests and reports write it.
public enum Checksum {
    public static func sha256(_ bytes: [UInt8]) -> String {
        hex(SHA256.hash(data: bytes))
    }

    /// The hexadecimal form of a digest computed incrementally (files hashed as they stream).
    public static func hex(_ digest: SHA256.Digest) -> String {
        digest.map { String(format: "%02x", $0) }.joined()
    }
}
