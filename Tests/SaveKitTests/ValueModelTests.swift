import Foundation
import SaveKit
import TestSupport
import Testing

@Suite("Value model")
struct ValueModelTests {
    /// XML's line-end normalisation, as plistlib's expat does it: CR LF and a lone CR in text
    /// (CDATA included) are a line feed; a CR written as &#13; stays a CR.
    @Test func xmlPlistLineEndsAreNormalised() throws {
        let xml = "<?xml version=\"1.0\"?>\r\n<plist version=\"1.0\"><dict><key>a</key><string>x\r\ny\rz&#13;w<![CDATA[p\r\nq]]></string></dict></plist>"
        #expect(try XMLPlistCodec().decode(Array(xml.utf8))["a"] == .string("x\ny\nz\rwp\nq"))
        // Plain text with no entity (the reader's quick path), in a key too.
        let plain = "<plist version=\"1.0\"><dict><key>k\r\n</key><string>a\r\nb\rc</string></dict></plist>"
        #expect(try XMLPlistCodec().decode(Array(plain.utf8)) == ["k\n": "a\nb\nc"])
    }

    @Test func integersHaveOneRepresentation() {
        #expect(SaveValue.int(5) == .integer(5))
        #expect(SaveValue.int(UInt64(Int64.max)) == .integer(.max))
        #expect(SaveValue.int(UInt64(Int64.max) + 1) == .unsignedInteger(UInt64(Int64.max) + 1))
    }

    @Test func equalityIsStrictAboutTypesOrderAndCodeUnits() {
        #expect(SaveValue.integer(1) != .real(1.0))
        #expect(SaveValue.real(0.0) != .real(-0.0))
        #expect(SaveValue.real(.nan) == .real(.nan))
        #expect(SaveValue(dictionaryLiteral: ("a", 1), ("b", 2)) != SaveValue(dictionaryLiteral: ("b", 2), ("a", 1)))
        // NFC "é" and NFD "e\u{301}" are canonically equivalent but not the same bytes.
        #expect(SaveValue.string("\u{E9}") != .string("e\u{301}"))
        // Keys too; and strings compared as memory are equal where their bytes are, small or
        // large, native or bridged from Foundation, and not where one byte differs.
        #expect(SaveValue(dictionaryLiteral: ("caf\u{E9}", 1)) != SaveValue(dictionaryLiteral: ("cafe\u{301}", 1)))
        let long = String(repeating: "Zoë 玩家 ", count: 40)
        for (a, b) in [("", ""), ("a", "a"), (long, String(decoding: Array(long.utf8), as: UTF8.self)), (long, NSString(string: long) as String), ("short", String(decoding: Array("short".utf8), as: UTF8.self))] {
            #expect(SaveValue.string(a) == .string(b))
            #expect(SaveValue(dictionaryLiteral: (a, 1)) == SaveValue(dictionaryLiteral: (b, 1)))
        }
        for (a, b) in [("a", ""), ("ab", "aa"), (long, long + " "), (long, String(long.dropLast()) + "x"), ("\u{E9}", "\u{C9}")] {
            #expect(SaveValue.string(a) != .string(b))
            #expect(SaveValue(dictionaryLiteral: (a, 1)) != SaveValue(dictionaryLiteral: (b, 1)))
        }
    }

    @Test func pointerEditing() throws {
        var save: SaveValue = ["players": [["name": "Ana"], ["name": "Besa"]], "a/b": ["~": true]]
        #expect(save.value(at: try JSONPointer(parsing: "/players/1/name")) == "Besa")
        #expect(save.value(at: try JSONPointer(parsing: "/a~1b/~0")) == true)
        try save.setValue(3, at: JSONPointer(parsing: "/players/0/score"))
        try save.setValue(["name": "Cleo"], at: JSONPointer(parsing: "/players/-"))
        #expect(try Codecs.compactJSON(save) == #"{"players":[{"name":"Ana","score":3},{"name":"Besa"},{"name":"Cleo"}],"a/b":{"~":true}}"#)
        #expect(try save.removeValue(at: JSONPointer(parsing: "/players/1")) == ["name": "Besa"])
        #expect(throws: PointerError.notFound(JSONPointer(tokens: ["nope"]))) { try save.removeValue(at: JSONPointer(parsing: "/nope")) }
        #expect(throws: PointerError.badIndex(JSONPointer(tokens: ["players", "01"]), token: "01", count: 2)) {
            try save.requireValue(at: JSONPointer(parsing: "/players/01"))
        }
        #expect(throws: PointerError.notAPointer("players")) { try JSONPointer(parsing: "players") }
        #expect(try JSONPointer(parsing: "/a~1b/~0").description == "/a~1b/~0")
    }

    @Test func editingSeesThroughEmbeddedDocuments() throws {
        let inner = Array(#"{"level":3,"coins":10}"#.utf8)
        var defaults: SaveValue = ["gameSave": .data(Data(inner)), "volume": 0.5]
        let registry = CodecRegistry.builtIn
        #expect(try defaults.value(at: JSONPointer(parsing: "/gameSave/level"), seeingThrough: registry) == 3)
        try defaults.setValue(500, at: JSONPointer(parsing: "/gameSave/coins"), seeingThrough: registry)
        guard case .data(let rewritten) = defaults["gameSave"] else { Issue.record("gameSave is no longer data"); return }
        #expect(String(decoding: rewritten, as: UTF8.self) == #"{"level":3,"coins":500}"#)
        #expect(throws: PointerError.notFound(JSONPointer(tokens: ["gameSave", "xp"]))) {
            try defaults.value(at: JSONPointer(parsing: "/gameSave/xp"), seeingThrough: registry)
        }
    }

    /// An edit inside an embedded JSON document keeps that document's layout: its spacing, and
    /// its line end after it or its lack of one, as the app wrote it.
    @Test func anEmbeddedDocumentKeepsItsLayoutAcrossAnEdit() throws {
        let registry = CodecRegistry.builtIn
        for (held, pointer, value, expected) in [
            ("[1, 2]\n", "/blob/0", nil, "[2]\n"), ("{\"a\": 1}\n", "/blob/a", nil, "{}\n"), ("{}", "/blob/a", 2, "{\"a\":2}"),
            ("{\"coins\": 40, \"themes\": [\"a\"]}", "/blob/coins", 45, "{\"coins\": 45, \"themes\": [\"a\"]}"),
            ("{\n  \"a\": 1\n}\n", "/blob/b", 2, "{\n  \"a\": 1,\n  \"b\": 2\n}\n"),
        ] as [(String, String, SaveValue?, String)] {
            for holder in [SaveValue.string(held), .data(Data(held.utf8))] {
                var document: SaveValue = ["blob": holder, "z": 1]
                if let value {
                    try document.setValue(value, at: JSONPointer(parsing: pointer), seeingThrough: registry)
                } else {
                    try document.removeValue(at: JSONPointer(parsing: pointer), seeingThrough: registry)
                }
                #expect(EmbeddedDocument.bytes(of: document["blob"]!) == Array(expected.utf8), "\(held) \(pointer)")
                #expect(document["blob"]?.typeName == holder.typeName)
            }
        }
    }

    @Test func structuralDiff() throws {
        let old = try Codecs.value(#"{"a": 1, "b": [1, 2, 3], "c": "x", "d": 1}"#)
        let new = try Codecs.value(#"{"d": 1.0, "b": [1, 5], "a": 1, "e": null}"#)
        let changes = StructuralDiff(from: old, to: new).changes.map { "\($0.pointer)" }
        #expect(changes == ["/b/1", "/b/2", "/c", "/d", "/e"])
        #expect(StructuralDiff(from: old, to: old).isEmpty)
        // A key in another Unicode normalisation is another key in the file: one removed, one
        // added (diff said the two files were the same, exit 0).
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        let respelled = StructuralDiff(from: [composed: 1], to: [decomposed: 1]).changes
        #expect(respelled.count == 2, "\(respelled)")
        #expect(respelled.contains { if case .removed(let pointer, _) = $0 { pointer.tokens == [composed] && pointer.tokens[0].utf8.elementsEqual(composed.utf8) } else { false } })
        #expect(respelled.contains { if case .added(let pointer, _) = $0 { pointer.tokens[0].utf8.elementsEqual(decomposed.utf8) } else { false } })
    }
}

@Suite("RFC 3339 dates")
struct RFC3339Tests {
    @Test(arguments: [
        (0.0, "2001-01-01T00:00:00Z"),
        (-978_307_200.0, "1970-01-01T00:00:00Z"),
        (0.5, "2001-01-01T00:00:00.5Z"),
        (-0.25, "2000-12-31T23:59:59.75Z"),
        (120_000_000.123, "2004-10-20T21:20:00.123Z"),
        (-31_622_400.0, "2000-01-01T00:00:00Z"),  // leap year 2000
        (11_139_552_000.0, "2354-01-01T00:00:00Z"),
    ])
    func formatsAndParsesBack(seconds: Double, text: String) throws {
        let date = Date(timeIntervalSinceReferenceDate: seconds)
        #expect(RFC3339.format(date) == text)
        #expect(RFC3339.parse(text)?.timeIntervalSinceReferenceDate == seconds)
    }

    @Test func everyFractionRoundTrips() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double.random(in: -60_000_000_000...250_000_000_000, using: &generator)
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            #expect(RFC3339.parse(RFC3339.format(date))?.timeIntervalSinceReferenceDate == seconds, "\(seconds)")
        }
    }

    /// The fraction written is the shortest that reads back as the same time: no text one digit
    /// shorter (rounded down or up) does.
    @Test func fractionsAreTheShortestThatRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double.random(in: 700_000_000...900_000_000, using: &generator)
            let text = RFC3339.format(Date(timeIntervalSinceReferenceDate: seconds))
            guard let dot = text.firstIndex(of: ".") else { continue }
            let digits = text[text.index(after: dot)...].dropLast()  // the Z
            guard digits.count > 1, let shorter = Int(digits.dropLast()) else { continue }
            for candidate in [shorter, shorter + 1] {
                let width = digits.count - 1
                let fraction = String(candidate)
                guard fraction.count <= width else { continue }
                let other = text[..<dot] + "." + String(repeating: "0", count: width - fraction.count) + fraction + "Z"
                #expect(RFC3339.parse(String(other))?.timeIntervalSinceReferenceDate != seconds, "\(text) and \(other)")
            }
        }
    }

    @Test func offsetsAndInvalidDates() {
        #expect(RFC3339.parse("2026-11-21T09:00:00+01:00") == RFC3339.parse("2026-11-21T08:00:00Z"))
        for bad in ["2026-02-30T00:00:00Z", "2026-11-21 08:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T08:00:00", "20261121T080000Z"] {
            #expect(RFC3339.parse(bad) == nil, "\(bad)")
        }
    }
}
