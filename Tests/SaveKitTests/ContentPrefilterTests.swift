import Foundation
import PropertyBased
@testable import SaveKit
import TestSupport
import Testing

/// A file no kind claims by its path is not decoded when its bytes show that no fingerprint can
/// match (``Migrator/mayRecogniseByContent(_:codec:)``). That "no" must never be wrong: checked
/// on the samples and on generated documents built from the kinds' own keys, in all three
/// codecs, and on documents whose keys are spelled with escapes.
@Suite("Recognition by content: the bytes prefilter")
struct ContentPrefilterTests {
    static let migrator = BuiltInKindTests.migrator
    static let codecs: [any SaveCodec] = [Codecs.json, Codecs.xml, Codecs.binary]

    /// Every key a built-in fingerprint names, and some that none does.
    static let keys = [
        "players", "deckId", "scores", "roundIndex", "round", "activePlayerIndex", "status", "board", "seconds", "puzzleId",
        "completed", "timer", "kingdoms", "savedAt", "player_id", "reputation", "cooldowns", "playerLevel", "lastSaved",
        "gameSave", "launchCount", "Zoë", "玩家", "note",
    ]

    /// A document of the keys a mask picks, each with a value of a type a seed picks: every
    /// fingerprint's types come up (integer, string, array, object, data, bool, real, date).
    static let document = zip(Gen.int(in: 0...(1 << 24) - 1), Gen.int(in: 0...Int(Int32.max))).map { mask, seed -> SaveValue in
        var state = UInt64(seed) &* 6_364_136_223_846_793_005 &+ 1
        var members: [(String, SaveValue)] = []
        for (index, key) in keys.enumerated() where mask & (1 << index) != 0 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let choice = Int(state >> 33) % 8
            let value: SaveValue = switch choice {
            case 0: .integer(Int64(state >> 40))
            case 1: .string("v\(state >> 50)")
            case 2: .array([.integer(1), .string("Ana")])
            case 3: ["round": .integer(2)]
            case 4: .data(Data([0x7B, 0x7D]))
            case 5: .bool(state & 1 == 0)
            case 6: .real(Double(state >> 44) / 7)
            default: .date(Date(timeIntervalSince1970: 1_700_000_000))
            }
            members.append((key, value))
        }
        var document: SaveValue = [:]
        for (key, value) in members { try? document.setValue(value, at: JSONPointer(tokens: [key])) }
        return document
    }

    /// What a document is, with the prefilter's answer for its bytes in one codec.
    static func check(_ value: SaveValue, _ codec: any SaveCodec, sourceLocation: SourceLocation = #_sourceLocation) throws -> (recognised: Bool, maybe: Bool) {
        let bytes = try codec.encode(value, options: EncodingOptions())
        let recognised = migrator.match(try codec.decode(bytes), path: nil, named: nil) != nil
        let maybe = migrator.mayRecogniseByContent(bytes, codec: codec.id)
        let shown = (try? Codecs.compactJSON(value)) ?? "?"
        #expect(maybe || !recognised, "a \(codec.id) document recognised by content was ruled out by its bytes: \(shown)", sourceLocation: sourceLocation)
        return (recognised, maybe)
    }

    @Test func neverRulesOutADocumentAKindRecognises() async throws {
        final class Tally: @unchecked Sendable { var recognised = 0, ruledOut = 0 }
        let tally = Tally()
        await propertyCheck(count: 400, input: Self.document) { (value: SaveValue) in
            for codec in Self.codecs {
                guard let (recognised, maybe) = try? Self.check(value, codec) else { continue }
                if recognised { tally.recognised += 1 }
                if !maybe { tally.ruledOut += 1 }
            }
        }
        // Not a vacuous pass: both answers came up many times.
        #expect(tally.recognised > 50, "\(tally.recognised)")
        #expect(tally.ruledOut > 50, "\(tally.ruledOut)")
    }

    @Test func theSamplesAreRecognisedAsBefore() throws {
        let root = Corpus.packageRoot.appendingPathComponent("samples")
        var recognised = 0
        for case let file as URL in FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)! where !file.hasDirectoryPath {
            let bytes = Array(try Data(contentsOf: file))
            guard let codec = CodecRegistry.builtIn.codec(sniffing: bytes) ?? CodecRegistry.builtIn.codec(forPath: file.path),
                let value = try? codec.decode(bytes, options: DecodingOptions())
            else { continue }
            // Each in every codec that can hold it (an XML plist holds no fraction of a second).
            for codec in Self.codecs where (try? Self.check(value, codec))?.recognised == true { recognised += 1 }
        }
        #expect(recognised >= 12, "\(recognised)")
    }

    /// Keys spelled with escapes are not in the bytes as they read: the document is decoded.
    @Test func escapedKeysAreDecodedNotRuledOut() throws {
        let tournament = #"{"\u0072ound": 2, "activePlayerIndex": 0, "st\u0061tus": "playing", "players": [], "deckId": "classic"}"#
        #expect(Self.migrator.match(try Codecs.json.decode(Array(tournament.utf8)), path: nil, named: nil)?.kind.name == "kape.tournament")
        #expect(Self.migrator.mayRecogniseByContent(Array(tournament.utf8), codec: "json"))
        // Escapes that spell no needed key (Python's json module writes every non-ASCII letter
        // so) do not stop the bytes from settling it; an escaped surrogate pair neither.
        let escapedNames = #"{"round": 2, "players": ["Zo\u00eb", "\ud83c\udf83", "\u73a9\u5bb6"], "note": "a \"quoted\" \\ line\n"}"#
        #expect(!Self.migrator.mayRecogniseByContent(Array(escapedNames.utf8), codec: "json"))
        #expect(Self.migrator.match(try Codecs.json.decode(Array(escapedNames.utf8)), path: nil, named: nil) == nil)
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict>
            <key>&#107;ingdoms</key><dict/><key>savedAt</key><real>1.5</real>
            </dict></plist>
            """
        #expect(Self.migrator.match(try Codecs.xml.decode(Array(plist.utf8)), path: nil, named: nil)?.kind.name == "kingdom.state")
        #expect(Self.migrator.mayRecogniseByContent(Array(plist.utf8), codec: "plist"))
        // A comment inside a key's text: the key reads whole, its bytes do not.
        let commented = plist.replacingOccurrences(of: "&#107;ingdoms", with: "king<!-- split -->doms")
        #expect(Self.migrator.match(try Codecs.xml.decode(Array(commented.utf8)), path: nil, named: nil)?.kind.name == "kingdom.state")
        #expect(Self.migrator.mayRecogniseByContent(Array(commented.utf8), codec: "plist"))
        // The same plist in UTF-16 (which the reader takes): its keys are not UTF-8 bytes.
        let utf16: [UInt8] = [0xFE, 0xFF] + plist.replacingOccurrences(of: "&#107;", with: "k").replacingOccurrences(of: "UTF-8", with: "UTF-16").utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        #expect(Self.migrator.match(try Codecs.xml.decode(utf16), path: nil, named: nil)?.kind.name == "kingdom.state")
        #expect(Self.migrator.mayRecogniseByContent(utf16, codec: "plist"))
        // Without the escapes and without a needed key, the bytes alone settle it.
        #expect(!Self.migrator.mayRecogniseByContent(Array(#"{"round": 2, "players": []}"#.utf8), codec: "json"))
    }

    /// JSON text is looked in with its escapes undone only when an escape stands for a byte of
    /// some key (``ContentPrefilter/escapesMaySpellKeys(_:)``). Checked against undoing every
    /// escape, on texts of key fragments, escapes of key letters and of other characters,
    /// escaped backslashes before a `u`, surrogates, and broken escapes: the shortcut never says
    /// "no" where undoing them says "maybe".
    @Test func escapesThatSpellNoKeyAreLookedThrough() async throws {
        let prefilter = ContentPrefilter(kinds: Self.migrator.kinds)
        final class Tally: @unchecked Sendable { var maybe = 0, no = 0, undone = 0, lookedThrough = 0 }
        let tally = Tally()
        let pieces = [
            #"{""#, #"": 1, ""#, "round", "players", "deckId", "roundIndex", "activePlayerIndex", "status", "kingdoms", "Zoë",
            #"\u0072"#, #"\u0061"#, #"\u0044"#, #"\u00eb"#, #"\u73a9"#, #"\ud83c\udf83"#, #"\ud83c"#, #"\n"#, #"\""#, #"\\"#,
            #"\\u0072"#, #"\/"#, #"\u00"#, #"\x"#, "u0072", "ound", "r", "\\",
        ]
        let choice = Gen.int(in: 0...pieces.count - 1)
        await propertyCheck(count: 3000, input: choice.array(of: 1...48)) { (picked: [Int]) in
            let raw = Array(picked.map { pieces[$0] }.joined().utf8)
            let (fast, undone, looksThrough) = raw.withUnsafeBytes { bytes in
                (prefilter.mayMatch(raw, codec: "json"),
                 ContentPrefilter.unescapingJSON(bytes).withUnsafeBytes { prefilter.someFingerprintsKeys(in: $0, text: true) },
                 !prefilter.escapesMaySpellKeys(bytes))
            }
            #expect(fast || !undone, "ruled out, though with every escape undone some fingerprint's keys are there: \(String(decoding: raw, as: UTF8.self))")
            if fast { tally.maybe += 1 } else { tally.no += 1 }
            if looksThrough && raw.contains(0x5C) { tally.lookedThrough += 1 } else { tally.undone += 1 }
        }
        // Not vacuous: both answers, and both ways of looking, came up many times.
        #expect(tally.maybe > 300 && tally.no > 300, "\(tally.maybe) \(tally.no)")
        #expect(tally.lookedThrough > 100 && tally.undone > 300, "\(tally.lookedThrough) \(tally.undone)")
    }

    /// A key that is not ASCII (`Zoë`): any escape above ASCII may spell its bytes, so such
    /// text is looked at with its escapes undone; an ASCII escape of no key byte is not.
    @Test func escapesAboveASCIIAreUndoneForANonASCIIKey() throws {
        var kind = try #require(Self.migrator.kinds.first)
        kind.fingerprints = [SaveKind.Fingerprint(version: 1, conditions: [.has(JSONPointer(tokens: ["Zoë"]))])]
        let prefilter = ContentPrefilter(kinds: [kind])
        func maybe(_ text: String) -> Bool { prefilter.mayMatch(Array(text.utf8), codec: "json") }
        func looksThrough(_ text: String) -> Bool { Array(text.utf8).withUnsafeBytes { !prefilter.escapesMaySpellKeys($0) } }
        #expect(maybe(#"{"Zoë": 1}"#))
        #expect(maybe(#"{"Zo\u00eb": 1}"#) && !looksThrough(#"{"Zo\u00eb": 1}"#))
        #expect(!maybe(#"{"Zoe": 1, "x": "\u00e9"}"#) && !looksThrough(#"{"Zoe": 1, "x": "\u00e9"}"#))
        #expect(!maybe(#"{"Zoe": 1, "x": "\u0041"}"#) && looksThrough(#"{"Zoe": 1, "x": "\u0041"}"#))
        #expect(maybe(#"{"Z\u006f\u00eb": 1}"#))  // "o" is a byte of the key too
    }

    /// The search behind the prefilter looks for a needle's rarest byte first: it must find a
    /// needle wherever it is, at either end of the haystack, and nowhere else. Checked against a
    /// plain byte-by-byte search on haystacks of a few letters, where near misses are common.
    @Test func theByteSearchFindsWhatAPlainSearchFinds() async throws {
        final class Tally: @unchecked Sendable { var found = 0, missed = 0 }
        let tally = Tally()
        let alphabet: [UInt8] = Array("aLp\0".utf8) + [0x00, 0xE9]
        let letters = Gen.int(in: 0...alphabet.count - 1)
        await propertyCheck(count: 2000, input: zip(letters.array(of: 0...40), letters.array(of: 0...3))) { (haystackLetters: [Int], needleLetters: [Int]) in
            let haystack = haystackLetters.map { alphabet[$0] }, needle = needleLetters.map { alphabet[$0] }
            var plain = needle.isEmpty
            if !plain && needle.count <= haystack.count {
                plain = (0...haystack.count - needle.count).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
            }
            let found = haystack.withUnsafeBytes { ByteSearch.contains(needle, in: $0) }
            #expect(found == plain, "\(needle) in \(haystack)")
            if found { tally.found += 1 } else { tally.missed += 1 }
        }
        #expect(tally.found > 200, "\(tally.found)")
        #expect(tally.missed > 200, "\(tally.missed)")
        // At the very ends, with the rare byte first and last.
        let text = Array("Level of playerLevel".utf8)
        for needle in ["Level", "playerLevel", "l", "Lev", "evel", "Levels", "xLevel"] {
            #expect(text.withUnsafeBytes { ByteSearch.contains(Array(needle.utf8), in: $0) } == String(decoding: text, as: UTF8.self).contains(needle), "\(needle)")
        }
    }
}
