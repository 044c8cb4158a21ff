import Foundation
import PropertyBased
@testable import SaveKit
import TestSupport
import Testing

/// An edited or merged JSON document is written over its old text, and only what changed
/// changes: the spacing, inline arrays, escapes and number spellings of the rest stay.
@Suite("JSON: only what changed is written again")
struct JSONTextRewriterTests {
    static let codec = JSONCodec()

    /// `text` with the edit made by `body`, as callers write it (`encode(_:over:holding:…)`);
    /// `nil` when the rewriter itself cannot line the text up with the values (a new root).
    static func rewritten(_ text: String, _ body: (inout SaveValue) throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) throws -> String? {
        let bytes = Array(text.utf8)
        let old = try codec.decode(bytes)
        var new = old
        try body(&new)
        var report = ValueLowering.Report()
        guard let rewritten = try rewrite(bytes, from: old, to: new) else { return nil }
        #expect(try codec.decode(rewritten) == new, "the rewrite does not read back as the edit", sourceLocation: sourceLocation)
        let output = try codec.encode(new, over: bytes, holding: old, report: &report)
        #expect(try codec.decode(output) == new, sourceLocation: sourceLocation)
        return String(decoding: output, as: UTF8.self)
    }

    /// The rewriter alone, as the codec calls it (without its shortcut for a text it writes as it is).
    static func rewrite(_ text: [UInt8], from old: SaveValue, to new: SaveValue) throws -> [UInt8]? {
        var report = ValueLowering.Report()
        return try JSONTextRewriter.rewrite(text, from: old, to: new, codec: codec, layout: .keepingLayout(of: text, codec: codec), report: &report)
    }

    /// A text that the writer writes as it is, is written whole: the same bytes as a rewrite,
    /// without the rewrite's read-back.
    @Test func aTextInTheWritersOwnLayoutIsWrittenWhole() throws {
        for text in ["{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}\n", #"{"a":1,"b":[2]}"#, "{\n\t\"a\": 1,\n\t\"b\": [\n\t\t2\n\t]\n}"] {
            let bytes = Array(text.utf8)
            let old = try Self.codec.decode(bytes)
            var new = old
            try new.setValue(3, at: JSONPointer(parsing: "/a"))
            try new.setValue(4, at: JSONPointer(parsing: "/b/-"))
            var report = ValueLowering.Report()
            #expect(try Self.codec.rewrite(bytes, holding: old, as: new, options: .keepingLayout(of: bytes, codec: Self.codec), report: &report) == nil)
            let whole = try Self.codec.encode(new, over: bytes, holding: old, report: &report)
            #expect(try Self.rewrite(bytes, from: old, to: new) == whole, "\(text)")
        }
    }

    static func set(_ pointer: String, _ json: String) -> (inout SaveValue) throws -> Void {
        { try $0.setValue(try JSONCodec().decode(Array(json.utf8)), at: try JSONPointer(parsing: pointer)) }
    }

    static func remove(_ pointer: String) -> (inout SaveValue) throws -> Void {
        { try $0.removeValue(at: try JSONPointer(parsing: pointer)) }
    }

    @Test func aChangedValueIsWrittenWhereItStoodAndNothingElseMoves() throws {
        // Python's json.dumps: ", " and ": ", non-ASCII as \u escapes, 1.0 for a real.
        let python = #"{"players": [{"name": "Zo\u00eb", "score": 1}], "coins": 3, "ratio": 1.0}"#
        #expect(try Self.rewritten(python, Self.set("/coins", "4")) == #"{"players": [{"name": "Zo\u00eb", "score": 1}], "coins": 4, "ratio": 1.0}"#)
        #expect(try Self.rewritten(python, Self.set("/players/0/score", "2.5")) == #"{"players": [{"name": "Zo\u00eb", "score": 2.5}], "coins": 3, "ratio": 1.0}"#)
        // Foundation's JSONEncoder with .prettyPrinted: " : " after each key.
        let encoder = "{\n  \"level\" : 3,\n  \"unlocked\" : [\n    \"a\"\n  ],\n  \"xp\" : 2.50\n}"
        #expect(try Self.rewritten(encoder, Self.set("/level", "4")) == "{\n  \"level\" : 4,\n  \"unlocked\" : [\n    \"a\"\n  ],\n  \"xp\" : 2.50\n}")
        // A string changed in place keeps its neighbours' escapes, and is escaped as they are.
        #expect(try Self.rewritten(#"{"a":"\u00eb","b":"x"}"#, Self.set("/b", #""Zoë""#)) == #"{"a":"\u00eb","b":"Zo\u00eb"}"#)
    }

    @Test func aKeyAddedCopiesTheSpacingOfTheKeyBefore() throws {
        let encoder = "{\n  \"level\" : 3,\n  \"xp\" : 2.50\n}\n"
        #expect(try Self.rewritten(encoder, Self.set("/coins", "5")) == "{\n  \"level\" : 3,\n  \"xp\" : 2.50,\n  \"coins\" : 5\n}\n")
        // A container over lines, indented as the line it starts on (four spaces, two levels in).
        let nested = "{\n    \"a\": {\n        \"b\": 1\n    }\n}"
        #expect(try Self.rewritten(nested, Self.set("/a/c", #"{"d": [1, 2]}"#))
            == "{\n    \"a\": {\n        \"b\": 1,\n        \"c\": {\n            \"d\": [\n                1,\n                2\n            ]\n        }\n    }\n}")
        // On one line, it stays on one line.
        #expect(try Self.rewritten(#"{"a": 1, "b": [1, 2]}"#, Self.set("/c", #"{"d": [3, 4]}"#)) == #"{"a": 1, "b": [1, 2], "c": {"d": [3, 4]}}"#)
        // A lone member has only its bracket before it: the text's other commas tell the spacing.
        #expect(try Self.rewritten(#"{"a": ["x"], "b": {"c": 1}}"#, Self.set("/a/-", #""y""#)) == #"{"a": ["x", "y"], "b": {"c": 1}}"#)
        #expect(try Self.rewritten(#"{"a": ["x"], "b": {"c": 1}}"#, Self.set("/b/d", "2")) == #"{"a": ["x"], "b": {"c": 1, "d": 2}}"#)
        #expect(try Self.rewritten(#"{"a":["x"],"b":1}"#, Self.set("/a/-", #""y""#)) == #"{"a":["x","y"],"b":1}"#)
        #expect(try Self.rewritten("{\n  \"a\": [\"x\"]\n}", Self.set("/a/-", #""y""#)) == "{\n  \"a\": [\"x\", \"y\"]\n}")
        // A key renamed (a migration's step) stays where it stood; a key may come first.
        #expect(try Self.rewritten("{\n  \"a\" : 1,\n  \"old\" : 2,\n  \"c\" : 3\n}", { value in
            value = ["a": 1, "new": 2, "c": 3]
        }) == "{\n  \"a\" : 1,\n  \"new\" : 2,\n  \"c\" : 3\n}")
        // Its value keeps its text too.
        #expect(try Self.rewritten(#"{"grid": [[5, 3, 0]], "t": 1}"#, { value in value = ["board": [[5, 3, 0]], "t": 1] }) == #"{"board": [[5, 3, 0]], "t": 1}"#)
        #expect(try Self.rewritten(#"{"old": 1, "b": [2]}"#, { value in value = ["new": 1, "b": [2]] }) == #"{"new": 1, "b": [2]}"#)
        #expect(try Self.rewritten(#"{"b": [2]}"#, { value in value = ["first": 0, "b": [2], "last": 3] }) == #"{"first": 0, "b": [2], "last": 3}"#)
        // The last key goes and another comes: spaced as the one that went.
        #expect(try Self.rewritten("{\n  \"a\" : 1,\n  \"b\" : 2\n}", { value in
            value = ["a": 1, "c": 3]
        }) == "{\n  \"a\" : 1,\n  \"c\" : 3\n}")
        // An inline array gains an element inline; CR LF line ends stay.
        let windows = "{\r\n  \"scores\": [1, 2],\r\n  \"x\": true\r\n}\r\n"
        #expect(try Self.rewritten(windows, Self.set("/scores/-", "3")) == "{\r\n  \"scores\": [1, 2, 3],\r\n  \"x\": true\r\n}\r\n")
        #expect(try Self.rewritten(windows, Self.set("/y", "[4]")) == "{\r\n  \"scores\": [1, 2],\r\n  \"x\": true,\r\n  \"y\": [\r\n    4\r\n  ]\r\n}\r\n")
    }

    /// A value written anew goes over lines only where its neighbours do, and is spaced as the
    /// text's other one-line containers are.
    @Test func aNewValueIsLaidOutAsItsNeighbours() throws {
        let pretty = "{\n  \"a\": [1, 2],\n  \"p\": {\"level\": 1, \"xp\": 0},\n  \"themes\" : [],\n  \"s\": {}\n}\n"
        // Inside a one-line container, a container stays on that line.
        #expect(try Self.rewritten(pretty, Self.set("/a/1", #"{"x": 1}"#))?.contains(#""a": [1, {"x": 1}],"#) == true)
        #expect(try Self.rewritten(pretty, Self.set("/p/xp", "[1, 2]"))?.contains(#""p": {"level": 1, "xp": [1, 2]},"#) == true)
        // An empty container among members on lines of their own gains its members over lines.
        #expect(try Self.rewritten(pretty, Self.set("/themes/-", #""lava""#))?.contains("\"themes\" : [\n    \"lava\"\n  ],") == true)
        #expect(try Self.rewritten(pretty, Self.set("/s/x", #"{"y": [1]}"#))?.contains("\"s\": {\n    \"x\": {\n      \"y\": [\n        1\n      ]\n    }\n  }\n}") == true)
        // A space before each comma is copied; a byte order mark stays.
        #expect(try Self.rewritten("[ 1 , 2 , 3 ]", Self.set("/-", "4")) == "[ 1 , 2 , 3 , 4 ]")
        #expect(try Self.rewritten("\u{FEFF}{\"round\" : 5 , \"deck\" : \"x\"}", { value in value = ["r": 5, "deck": "x", "n": 1] })
            == "\u{FEFF}{\"r\" : 5 , \"deck\" : \"x\" , \"n\" : 1}")
    }

    /// A key that a migration renames keeps its place on a line shared with other keys; a key
    /// removed from a shared line leaves the line's end where it was.
    @Test func sharedLinesKeepTheirShape() throws {
        let text = "{\n  \"schemaVersion\": 2,\n  \"players\": [],\n  \"roundIndex\": 3,  \"totalRounds\": 5,\n  \"currentPlayerIndex\": 0,\n  \"deckId\": \"classic\"\n}\n"
        let migrated = try Self.rewritten(text) { value in
            value = ["schemaVersion": 3, "players": [], "round": 3, "totalRounds": 5, "activePlayerIndex": 0, "deckId": "classic", "status": "playing"]
        }
        #expect(migrated == "{\n  \"schemaVersion\": 3,\n  \"players\": [],\n  \"round\": 3,  \"totalRounds\": 5,\n  \"activePlayerIndex\": 0,\n  \"deckId\": \"classic\",\n  \"status\": \"playing\"\n}\n")
        let shared = "{\n  \"a\": 1,  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4,  \"e\": 5\n}\n"
        #expect(try Self.rewritten(shared, Self.remove("/b")) == "{\n  \"a\": 1,\n  \"c\": 3,\n  \"d\": 4,  \"e\": 5\n}\n")
        #expect(try Self.rewritten(shared, Self.remove("/c")) == "{\n  \"a\": 1,  \"b\": 2,\n  \"d\": 4,  \"e\": 5\n}\n")
        #expect(try Self.rewritten(shared, Self.remove("/e")) == "{\n  \"a\": 1,  \"b\": 2,\n  \"c\": 3,\n  \"d\": 4\n}\n")
    }

    /// A value written anew is spelled as the text spells: `"key" : value` (Swift's
    /// `JSONEncoder`) inside it too, and non-ASCII text as `\\u` escapes where the text writes
    /// them so (Python's `ensure_ascii`), but not where nothing says so.
    @Test func aNewValueIsSpelledAsTheText() throws {
        let encoder = "{\n  \"level\" : 3,\n  \"progress\" : {\n    \"1\" : 2\n  }\n}"
        #expect(try Self.rewritten(encoder, Self.set("/progress/2", #"{"stars": 1, "done": [true]}"#))
            == "{\n  \"level\" : 3,\n  \"progress\" : {\n    \"1\" : 2,\n    \"2\" : {\n      \"stars\" : 1,\n      \"done\" : [\n        true\n      ]\n    }\n  }\n}")
        let python = #"{"name": "Zo\u00eb", "n": 1}"#
        #expect(try Self.rewritten(python, Self.set("/name", #""Dëa 🎉""#)) == #"{"name": "D\u00eba \ud83c\udf89", "n": 1}"#)
        #expect(try Self.rewritten(python, Self.set("/more", #"{"who": "ë"}"#)) == #"{"name": "Zo\u00eb", "n": 1, "more": {"who": "\u00eb"}}"#)
        #expect(try Self.rewritten(#"{"name": "Ana", "n": 1}"#, Self.set("/name", #""Dëa""#)) == #"{"name": "Dëa", "n": 1}"#)
    }

    /// Typed JSON's spellings: a dictionary left with one marker key is wrapped, and a wrapper
    /// is never taken for the key inside it; the rest of the text keeps its layout either way.
    @Test func markerKeysAreSpelledAsTheReaderReadsThem() throws {
        let lone = try Self.rewritten(#"{"d": {"a": 1, "$date": "x"}, "e": [1,  2]}"#, Self.remove("/d/a"))
        #expect(lone == #"{"d": {"$dict": {"$date": "x"}}, "e": [1,  2]}"#)
        let wrapped = try Self.rewritten(#"{"x": {"$dict": {"$dict": 1}}, "y": [1,  2]}"#, Self.set("/x/b", "2"))
        #expect(wrapped == #"{"x": {"$dict": 1, "b": 2}, "y": [1,  2]}"#)
    }

    @Test func aRemovedKeyTakesOneSeparatorWithIt() throws {
        let pretty = "{\n  \"a\" : 1,\n  \"b\" : [1, 2],\n  \"c\" : null\n}"
        #expect(try Self.rewritten(pretty, Self.remove("/a")) == "{\n  \"b\" : [1, 2],\n  \"c\" : null\n}")
        #expect(try Self.rewritten(pretty, Self.remove("/b")) == "{\n  \"a\" : 1,\n  \"c\" : null\n}")
        #expect(try Self.rewritten(pretty, Self.remove("/c")) == "{\n  \"a\" : 1,\n  \"b\" : [1, 2]\n}")
        #expect(try Self.rewritten(pretty, Self.remove("/b/0")) == "{\n  \"a\" : 1,\n  \"b\" : [2],\n  \"c\" : null\n}")
        #expect(try Self.rewritten(pretty, Self.remove("/b/1")) == "{\n  \"a\" : 1,\n  \"b\" : [1],\n  \"c\" : null\n}")
        #expect(try Self.rewritten(#"{"a": {"only": 1}, "b": 2}"#, Self.remove("/a/only")) == #"{"a": {}, "b": 2}"#)
        // An element from the middle of a list: the ones after it keep their text.
        #expect(try Self.rewritten(#"[1.50, "x", 2.50, 3.50]"#, Self.remove("/1")) == #"[1.50, 2.50, 3.50]"#)
    }

    @Test func whatDoesNotLineUpIsWrittenWholeAndStillReadsBack() throws {
        // A one-key dictionary whose key is a marker must be wrapped: the spliced text would
        // read as a date, so the caller writes the whole document.
        let text = Array(#"{"d": {"a": 1, "$date": "2026-11-21T08:00:00Z"}, "e": [1, 2]}"#.utf8)
        let old = try Self.codec.decode(text)
        var new = old
        try new.removeValue(at: JSONPointer(parsing: "/d/a"))
        var report = ValueLowering.Report()
        let written = try Self.codec.encode(new, over: text, holding: old, report: &report)
        #expect(try Self.codec.decode(written) == new)
        // Text that does not read as the old value (a caller's mistake): the rewrite ends, and what
        // callers get is the new value, written whole.
        for broken in ["[1, }", "{\"a\": [1 }", "{\"a\" 1}", "[\"", "{\"", "{\"a\": }", "{\"a\": [1, 2]"] {
            _ = try? Self.rewrite(Array(broken.utf8), from: ["a": [1, 2]], to: ["a": [1, 3]])
            var report = ValueLowering.Report()
            let written = try Self.codec.encode(["a": [1, 3]], over: Array(broken.utf8), holding: ["a": [1, 2]], report: &report)
            #expect(try Self.codec.decode(written) == ["a": [1, 3]], "\(broken)")
        }
        // A new root is a new document.
        #expect(try Self.rewritten(#"{"a": 1}"#, { $0 = [1] }) == nil)
        // Keys in a new order: the dictionary is written again, in the document's layout.
        #expect(try Self.rewritten("{\"x\": {\"a\": 1, \"b\": 2}, \"y\": 0}", { value in
            value = ["x": ["b": 2, "a": 1], "y": 0]
        }) == #"{"x": {"b": 2, "a": 1}, "y": 0}"#)
    }

    // MARK: - Generated documents, layouts and edits

    /// A layout as the writers in the wild write JSON.
    struct Layout: CustomStringConvertible {
        var colon: String, comma: String, indent: String?, inlineArrays: Bool, asciiOnly: Bool, crlf: Bool
        var description: String { "colon \(colon.debugDescription), comma \(comma.debugDescription), indent \(indent.debugDescription), inline arrays \(inlineArrays), ASCII \(asciiOnly), CRLF \(crlf)" }

        func render(_ value: SaveValue, depth: Int = 0, wrapped: Bool = false) -> String {
            let newline = crlf ? "\r\n" : "\n"
            func line(_ level: Int) -> String { indent.map { newline + String(repeating: $0, count: level) } ?? "" }
            switch value {
            case .dictionary(let entries):
                if entries.isEmpty { return "{}" }
                // A lone marker key is wrapped, as the codec writes it, so that it reads back as a dictionary.
                if entries.count == 1, JSONCodec.isTypedMarkerKey(entries.keys[0]), !wrapped {
                    return "{" + line(depth + 1) + string("$dict") + colon + render(value, depth: depth + 1, wrapped: true) + line(depth) + "}"
                }
                let members = entries.map { key, value in string(key) + colon + render(value, depth: depth + 1) }
                return "{" + members.map { line(depth + 1) + $0 }.joined(separator: indent == nil ? comma : ",") + line(depth) + "}"
            case .array(let items):
                if items.isEmpty { return "[]" }
                let rendered = items.map { render($0, depth: depth + 1) }
                if indent == nil || inlineArrays && items.allSatisfy({ !$0.isContainer }) { return "[" + rendered.joined(separator: comma) + "]" }
                return "[" + rendered.map { line(depth + 1) + $0 }.joined(separator: ",") + line(depth) + "]"
            case .string(let text):
                return string(text)
            default:
                return String(decoding: try! JSONCodec().encode(value, options: Self.compact), as: UTF8.self)
            }
        }

        func string(_ text: String) -> String {
            let plain = String(decoding: try! JSONCodec().encode(.string(text), options: Self.compact), as: UTF8.self)
            guard asciiOnly else { return plain }
            return plain.unicodeScalars.map { $0.isASCII ? String($0) : String($0).utf16.map { String(format: "\\u%04x", $0) }.joined() }.joined()
        }

        static let compact: EncodingOptions = {
            var options = EncodingOptions()
            options.pretty = false
            options.finalNewline = false
            return options
        }()
    }

    /// A small random generator, so that one seed gives one case (and a failure names it).
    struct Draw {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }

        mutating func value(depth: Int) -> SaveValue {
            switch next(depth >= 3 ? 6 : 9) {
            case 0: return .integer(Int64(next(2000)) - 1000)
            case 1: return .real(Double(next(4000)) / 8)
            case 2: return .string(["", "Ana", "Zoë", "玩家 🎮", "a \"quoted\"\nline", "\\"][next(6)])
            case 3: return .bool(next(2) == 0)
            case 4: return .null
            case 5: return .date(Date(timeIntervalSince1970: Double(1_700_000_000 + next(100_000))))
            case 6, 7:
                var entries: SaveValue = [:]
                for key in [["a", "$date", "$dict"][next(3)], "b", "Zoë", "k\"q", "c", "d"].prefix(next(5)) {
                    try? entries.setValue(value(depth: depth + 1), at: JSONPointer(tokens: [key]))
                }
                return entries
            default:
                return .array((0..<next(5)).map { _ in value(depth: depth + 1) })
            }
        }
    }

    /// A scalar set in any layout changes the bytes of that scalar only: everything before it
    /// and after it is the same text.
    @Test func settingAScalarChangesOnlyItsBytes() async {
        await propertyCheck(count: 400, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var draw = Draw(state: UInt64(seed))
            var root: SaveValue = ["first": draw.value(depth: 1), "second": draw.value(depth: 1), "third": 3]
            let layout = Layout(
                colon: [":", ": ", " : "][draw.next(3)], comma: [",", ", "][draw.next(2)], indent: [nil, "  ", "    ", "\t"][draw.next(4)],
                inlineArrays: draw.next(2) == 0, asciiOnly: draw.next(2) == 0, crlf: draw.next(4) == 0)
            let scalars = Self.paths(in: root).filter { pointer in
                guard let value = try? root.requireValue(at: pointer) else { return false }
                // Under a marker key a dictionary may have to be wrapped anew, and is written whole.
                return !value.isContainer && !pointer.isRoot && !pointer.tokens.contains { $0.hasPrefix("$") }
            }
            let text = Array(layout.render(root).utf8)
            let pointer = scalars[draw.next(scalars.count)]
            let old = try! root.requireValue(at: pointer)
            var new = SaveValue.integer(Int64(draw.next(1000)))
            if new == old { new = .string("changed") }
            try? root.setValue(new, at: pointer)
            let context = "seed \(seed), \(layout): \(String(decoding: text, as: UTF8.self)), \(pointer) = \(new)"
            guard let output = try? Self.rewrite(text, from: Self.codec.decode(text), to: root) else {
                Issue.record("refused: \(context)")
                return
            }
            let prefix = zip(text, output).prefix { $0 == $1 }.count
            let suffix = zip(text.reversed(), output.reversed()).prefix { $0 == $1 }.count
            let oldText = layout.render(old).utf8.count
            #expect(min(prefix + suffix, text.count) >= text.count - oldText, "\(context)\nwritten: \(String(decoding: output, as: UTF8.self))")
        }
    }

    static func paths(in value: SaveValue, at pointer: JSONPointer = JSONPointer()) -> [JSONPointer] {
        switch value {
        case .dictionary(let entries): [pointer] + entries.flatMap { paths(in: $1, at: pointer.appending($0)) }
        case .array(let items): [pointer] + items.enumerated().flatMap { paths(in: $1, at: pointer.appending($0)) }
        default: [pointer]
        }
    }

    /// Any document, in any of the layouts, with any edit that `set` or `remove` makes (or
    /// several at once, as a merge or migration makes): the rewrite reads back as the edited
    /// document, and it is only ever refused for a new root.
    @Test func everyEditOfAnyLayoutReadsBackAsTheEdit() async {
        await propertyCheck(count: 600, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var draw = Draw(state: UInt64(seed))
            let root: SaveValue = draw.next(4) == 0 ? .array((0..<(1 + draw.next(4))).map { _ in draw.value(depth: 1) }) : {
                var document: SaveValue = ["first": draw.value(depth: 1)]
                for key in ["second", "third"].prefix(draw.next(3)) { try? document.setValue(draw.value(depth: 1), at: JSONPointer(tokens: [key])) }
                return document
            }()
            let layout = Layout(
                colon: [":", ": ", " : "][draw.next(3)], comma: [",", ", "][draw.next(2)], indent: [nil, "  ", "    ", "\t"][draw.next(4)],
                inlineArrays: draw.next(2) == 0, asciiOnly: draw.next(2) == 0, crlf: draw.next(4) == 0)
            let text = Array(layout.render(root).utf8) + (draw.next(2) == 0 ? [0x0A] : [])
            var edited = root
            for _ in 0...draw.next(3) {
                let all = Self.paths(in: edited).dropFirst()
                guard !all.isEmpty else { break }
                let pointer = all[all.startIndex + draw.next(all.count)]
                switch draw.next(4) {
                case 0: _ = try? edited.removeValue(at: pointer)
                case 1: try? edited.setValue(draw.value(depth: 2), at: pointer)
                case 2: try? edited.setValue(draw.value(depth: 2), at: pointer.appending(["-", "n", "Zoë"][draw.next(3)]))
                case 3 where draw.next(2) == 0: edited.renameFirstKey(at: pointer, to: "renamed")
                default: try? edited.setValue(.integer(Int64(draw.next(100))), at: pointer)
                }
            }
            let context = "seed \(seed), \(layout): \(String(decoding: text, as: UTF8.self)) → \((try? Codecs.compactJSON(edited)) ?? "?")"
            guard let old = try? Self.codec.decode(text) else {
                Issue.record("the generated text does not read: \(context)")
                return
            }
            #expect(old == root, "\(context)")
            let output = try? Self.rewrite(text, from: old, to: edited)
            if let output {
                #expect((try? Self.codec.decode(output)) == edited, "\(context)\nwritten: \(String(decoding: output, as: UTF8.self))")
            } else {
                // At the root only: a new kind of root, an empty one, or a root that keeps none of its members.
                var keepsNone = false
                if case .dictionary(let before) = root, case .dictionary(let after) = edited { keepsNone = !before.keys.contains { after[$0] != nil } }
                #expect(!root.sameContainerKind(as: edited) || root.isEmptyContainer || edited.isEmptyContainer || keepsNone, "refused: \(context)")
            }
        }
    }
}

extension SaveValue {
    /// The first key of the dictionary at `pointer` given a new name, where it stood (a migration's rename).
    fileprivate mutating func renameFirstKey(at pointer: JSONPointer, to name: String) {
        guard case .dictionary(let entries)? = try? requireValue(at: pointer), let key = entries.keys.first, entries[name] == nil else { return }
        var renamed: SaveValue = [:]
        for (other, value) in entries { try? renamed.setValue(value, at: JSONPointer(tokens: [other == key ? name : other])) }
        if pointer.isRoot { self = renamed } else { try? setValue(renamed, at: pointer) }
    }

    fileprivate var isContainer: Bool {
        switch self {
        case .dictionary, .array: true
        default: false
        }
    }

    fileprivate var isEmptyContainer: Bool {
        switch self {
        case .dictionary(let entries): entries.isEmpty
        case .array(let items): items.isEmpty
        default: false
        }
    }

    fileprivate func sameContainerKind(as other: SaveValue) -> Bool {
        switch (self, other) {
        case (.dictionary, .dictionary), (.array, .array): true
        default: false
        }
    }
}
