import Crypto

/// SHA-256 in lower-case hexadecimal, as manifests and reports write it.
public enum Checksum {
    public static func sha256(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}
