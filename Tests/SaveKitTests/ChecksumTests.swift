import Crypto
import SaveKit
import Testing

/// An import compares each file's SHA-256 with the manifest's text of it without making text
/// of its own (``Checksum/matches(_:hex:)``): it must agree with comparing ``Checksum/hex(_:)``.
@Suite("checksums")
struct ChecksumTests {
    @Test func aDigestMatchesItsOwnTextAndNoOther() {
        let digest = SHA256.hash(data: Array("savetool".utf8))
        let text = Checksum.hex(digest)
        #expect(text == "\(digest)".split(separator: " ").last.map(String.init))
        #expect(Checksum.matches(digest, hex: text))
        // Every digit changed in turn, upper case, one digit short or long, and nothing.
        let digits = Array(text.utf8)
        for index in digits.indices {
            var changed = digits
            changed[index] = changed[index] == UInt8(ascii: "0") ? UInt8(ascii: "1") : UInt8(ascii: "0")
            #expect(!Checksum.matches(digest, hex: String(decoding: changed, as: UTF8.self)), "\(index)")
        }
        #expect(text.contains { $0.isLetter } && !Checksum.matches(digest, hex: text.uppercased()))
        #expect(!Checksum.matches(digest, hex: String(text.dropLast())))
        #expect(!Checksum.matches(digest, hex: text + "0"))
        #expect(!Checksum.matches(digest, hex: ""))
    }
}
