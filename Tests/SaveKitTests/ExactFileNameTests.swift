import PropertyBased
import SaveKit
import Testing

/// A name that is not UTF-8 travels as a string and comes back byte for byte; nothing else
/// changes, and no string can make a name hold a byte it did not stand for.
@Suite("names byte for byte")
struct ExactFileNameTests {
    /// Bytes that make the edge cases likely: stray continuations, lead bytes cut short,
    /// overlong and surrogate forms, the escape range's own UTF-8 (EE BE/BF xx), `/` and `.`.
    static let name = Gen.element(of: [0x2E, 0x2F, 0x61, 0x80, 0x9F, 0xA9, 0xBE, 0xBF, 0xC0, 0xC3, 0xE0, 0xED, 0xEE, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF] as [UInt8])
        .map { $0! }.array(of: 0...10)

    @Test func everyNameComesBackByteForByte() async {
        await propertyCheck(count: 2000, input: Self.name) { bytes in
            let carried = ExactFileName.string(bytes)
            #expect(ExactFileName.bytes(of: carried) == bytes)
            #expect(ExactFileName.systemLength(of: carried) == bytes.count)
            #expect(ExactFileName.isNotUTF8(carried) == (String(validating: bytes, as: UTF8.self) == nil))
            // Every byte below 0x80 is itself: `/`, `.` and NUL cannot be made from escapes.
            #expect(carried.utf8.filter { $0 < 0x80 } == bytes.filter { $0 < 0x80 })
        }
    }

    /// Any string, escapes or not, gives back bytes whose ASCII is exactly the string's: no
    /// escape ever stands for `/`, `.` or NUL, whatever a manifest holds.
    @Test func escapesNeverMakeASCII() async {
        let scalar = Gen.element(of: ["a", "/", ".", "\u{0}", "é", "🎮", "\u{EF80}", "\u{EFAF}", "\u{EFAE}", "\u{EFC3}", "\u{EFA9}", "\u{EFFF}"] as [Character])
        await propertyCheck(count: 2000, input: scalar.map { $0! }.array(of: 0...12)) { characters in
            let text = String(characters)
            let bytes = ExactFileName.bytes(of: text)
            #expect(bytes.filter { $0 < 0x80 } == Array(text.utf8).filter { $0 < 0x80 })
            // What a string stands for, spelled again, is its one spelling, and that spelling is canonical.
            let canonical = ExactFileName.string(bytes)
            #expect(ExactFileName.bytes(of: canonical) == bytes && ExactFileName.isCanonical(canonical))
        }
    }

    /// Valid UTF-8 of any script is itself, through the slow path too (a name holding U+EF80).
    @Test func validUTF8IsNeverEscaped() async {
        let scalar = Gen.element(of: ["a", "é", "ж", "玩", "🎮", "\u{10FFFF}", "\u{E000}", "\u{EF7F}", "\u{F000}"] as [Character])
        await propertyCheck(count: 1000, input: scalar.map { $0! }.array(of: 0...10)) { characters in
            let text = String(characters) + "\u{EF80}"
            let carried = ExactFileName.string(Array(text.utf8))
            #expect(carried == String(characters) + "\u{EFEE}\u{EFBE}\u{EF80}")
        }
    }

    @Test func aUTF8NameIsItselfUnlessItHoldsTheEscapeRange() {
        for name in ["café.json", "玩家.plist", "🎮", "a/b/c.json", ""] {
            #expect(ExactFileName.string(Array(name.utf8)) == name)
            #expect(ExactFileName.carried(name) == name)
        }
        // A valid name holding U+EF80 has the bytes of that character escaped, and comes back.
        let pua = "x\u{EF80}"
        #expect(ExactFileName.carried(pua) == "x\u{EFEE}\u{EFBE}\u{EF80}")
        #expect(ExactFileName.bytes(of: ExactFileName.carried(pua)) == Array(pua.utf8))
        #expect(!ExactFileName.isNotUTF8(ExactFileName.carried(pua)))
    }

    @Test func peopleSeeTheBytes() {
        let latin = ExactFileName.string(Array("caf".utf8) + [0xE9] + Array(".json".utf8))
        #expect(latin == "caf\u{EFE9}.json")
        #expect(ExactFileName.shown("saves/" + latin + ": cannot read") == "saves/caf\\xE9.json: cannot read")
        #expect(ExactFileName.withSystemPath(latin) { String(cString: $0, encoding: .isoLatin1) } == "café.json")
    }
}
