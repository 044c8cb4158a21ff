import Crypto
import Foundation

/// AWS Signature Version 4 for S3 requests: the `Authorization` header of a request, from its
/// method, path, query, headers and the SHA-256 of its body.
///
/// Written for the need (a few lines over swift-crypto's HMAC) rather than taken from an AWS
/// SDK, which would bring an HTTP stack of its own; checked against the example AWS publishes.
public struct SigV4: Sendable {
    public var accessKey: String
    public var secretKey: String
    public var region: String
    public var service = "s3"

    public init(accessKey: String, secretKey: String, region: String) {
        (self.accessKey, self.secretKey, self.region) = (accessKey, secretKey, region)
    }

    /// `20130524T000000Z`.
    public static func timestamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    /// The `Authorization` header for a request whose `headers` already hold `host`,
    /// `x-amz-date` and `x-amz-content-sha256` (every header given is signed).
    public func authorization(method: String, path: String, query: [(String, String)], headers: [(String, String)], payloadHash: String, timestamp: String) -> String {
        let canonicalHeaders = headers.map { ($0.0.lowercased(), $0.1.trimmingCharacters(in: .whitespaces)) }.sorted { $0.0 < $1.0 }
        let signedHeaders = canonicalHeaders.map(\.0).joined(separator: ";")
        let canonicalQuery = query.map { (Self.encode($0.0), Self.encode($0.1)) }.sorted { $0 < $1 }.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let canonicalPath = Self.encodePath(path)
        let canonicalRequest = [
            method, canonicalPath, canonicalQuery,
            canonicalHeaders.map { "\($0.0):\($0.1)\n" }.joined(), signedHeaders, payloadHash,
        ].joined(separator: "\n")
        let day = String(timestamp.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", timestamp, scope, Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8)))].joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(secretKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        return "AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope),SignedHeaders=\(signedHeaders),Signature=\(signature)"
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters, as SigV4 wants it.
    public static func encode(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            default:
                let digits = Array("0123456789ABCDEF".utf8)
                encoded += "%" + String(UnicodeScalar(digits[Int(byte >> 4)])) + String(UnicodeScalar(digits[Int(byte & 0xF)]))
            }
        }
        return encoded
    }

    /// A path with each segment encoded once: the request's path and the signed one are the same text.
    public static func encodePath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
    }

    public static func hex<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        for byte in bytes { text.append(digits[Int(byte >> 4)]); text.append(digits[Int(byte & 0xF)]) }
        return String(decoding: text, as: UTF8.self)
    }

    public static func sha256Hex(_ bytes: some DataProtocol) -> String { hex(SHA256.hash(data: bytes)) }
}
