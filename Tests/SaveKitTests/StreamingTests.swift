import Foundation
@testable import SaveKit
import TestSupport
import Testing

/// The streaming conversion (binary plist walked straight into the JSON or XML writer) must
/// write exactly what decoding to a tree and encoding it writes, and fail where it fails.
@Suite("Streaming conversion")
struct StreamingTests {
    static let binaryFiles = (Corpus.listing("cpython_plistlib/generated") + Corpus.listing("cpython_plistlib/literal")
        + Corpus.listing("cpython_plistlib/invalid/binary") + Corpus.listing("libplist/test/data")
        + Corpus.listing("swift-corelibs-foundation/Fixtures/macOS-10.14") + Corpus.listing("libplist/fuzz/bplist-crashes"))
        .filter { (try? Corpus.bytes($0).starts(with: Array("bplist0".utf8))) == true }

    @Test(arguments: binaryFiles)
    func streamingWritesWhatTheTreeWrites(_ file: String) throws {
        let bytes = try Corpus.bytes(file)
        for target in [Codecs.json, Codecs.xml] as [any SaveCodec] {
            for plain in [false, true] where !(plain && target.id != "json") {
                var options = EncodingOptions()
                options.plainJSON = plain
                options.nullPolicy = .drop
                options.subsecondDatePolicy = .truncate
                var streamed = ByteArrayOutput()
                let streamedResult = Result { try Conversion.convert(bytes, from: Codecs.binary, to: target, encoding: options, to: &streamed) }
                let treeResult = Result { () throws -> [UInt8] in
                    var report = ValueLowering.Report()
                    return try target.encode(try Codecs.binary.decode(bytes), options: options, report: &report)
                }
                switch (streamedResult, treeResult) {
                case (.success, .success(let expected)):
                    #expect(streamed.bytes == expected, "\(file) → \(target.id)\(plain ? " plain" : "")")
                case (.failure, .failure):
                    break
                default:
                    Issue.record("\(file) → \(target.id): streaming \(streamedResult.map { _ in "succeeded" }), tree \(treeResult.map { _ in "succeeded" })")
                }
            }
        }
    }

    @Test func loweringReportsTheSameCounts() throws {
        let value: SaveValue = ["a": .null, "b": [.null, 1, .date(Date(timeIntervalSinceReferenceDate: 0.5))], "c": .uid(3)]
        var options = EncodingOptions()
        options.nullPolicy = .drop
        options.subsecondDatePolicy = .truncate
        var output = ByteArrayOutput()
        let report = try Conversion.write(value, with: Codecs.xml, options: options, to: &output)
        #expect(report.droppedNulls == 2)
        #expect(report.truncatedDates == 1)
        #expect(try Codecs.xml.decode(output.bytes) == ["b": [1, .date(Date(timeIntervalSinceReferenceDate: 0))], "c": .uid(3)])
    }

    @Test func errorsInsideAStreamNameThePointer() throws {
        let value: SaveValue = ["players": [["name": "Ana", "note": "tab\u{1}"]]]
        var output = ByteArrayOutput()
        #expect(throws: CodecError.unrepresentable(
            codec: "plist", at: JSONPointer(tokens: ["players", "0", "note"]), found: "a string with a control character or U+FFFE/U+FFFF",
            expected: "text without C0 control characters, U+FFFE or U+FFFF (XML 1.0 cannot hold them; bplist and JSON can)")
        ) { try Conversion.write(value, with: Codecs.xml, to: &output) }
    }

    /// What XML 1.0 cannot hold is refused wherever it is, with its pointer: in a key too, and
    /// U+FFFE and U+FFFF as well as control characters (each was written raw, exit 0, and XML
    /// readers such as Python's expat refused the file). Whole trees and streams alike.
    @Test func whatXMLCannotHoldIsRefusedInKeysAndStrings() throws {
        let cases: [(SaveValue, [String], String)] = [
            (["a\u{1}b": 1], ["a\u{1}b"], "a key with a control character or U+FFFE/U+FFFF"),
            (["s": "x\u{FFFF}y"], ["s"], "a string with a control character or U+FFFE/U+FFFF"),
            (["k": ["x\u{FFFE}": true]], ["k", "x\u{FFFE}"], "a key with a control character or U+FFFE/U+FFFF"),
        ]
        for (value, tokens, found) in cases {
            let expected = CodecError.unrepresentable(
                codec: "plist", at: JSONPointer(tokens: tokens), found: found,
                expected: "text without C0 control characters, U+FFFE or U+FFFF (XML 1.0 cannot hold them; bplist and JSON can)")
            #expect(throws: expected, "\(tokens)") { _ = try Codecs.xml.encode(value) }
            var output = ByteArrayOutput()
            #expect(throws: expected, "\(tokens) streamed") { try Conversion.write(value, with: Codecs.xml, to: &output) }
        }
        // A date of NaN or infinite seconds is no time, in any codec (a binary plist of one was
        // written, exit 0, and no reader took it back); typed JSON refuses it as it reads.
        for codec in [Codecs.xml, Codecs.binary, Codecs.json] as [any SaveCodec] {
            #expect(throws: CodecError.self, "\(codec.id)") { _ = try codec.encode(["d": .date(Date(timeIntervalSinceReferenceDate: .nan))]) }
        }
        #expect(throws: CodecError.self) { _ = try Codecs.json.decode(Array(#"{"d": {"$date": {"$real": "inf"}}}"#.utf8)) }
        // Tab, line feed, carriage return and the characters around the noncharacters are kept.
        let kept: SaveValue = ["t\tn\nr\r": "\u{FFFD}\u{FFEF}\u{10FFFF}"]
        #expect(try Codecs.xml.decode(Codecs.xml.encode(kept)) == kept)
    }

    /// 203 bytes of arrays nested 40 deep, each holding the next twice, stand for 2^41 values:
    /// streamed, the expansion is counted as soon as more values come out than the file holds
    /// references, and refused before a megabyte is written (it wrote 6 GB, then refused).
    @Test func sharedArraysThatMultiplyAreRefusedBeforeTheyAreWritten() throws {
        /// A binary plist of `objects` (one-byte offsets and references), the first the top.
        func plist(_ objects: [[UInt8]]) -> [UInt8] {
            var bytes = Array("bplist00".utf8), offsets: [UInt8] = []
            for object in objects {
                offsets.append(UInt8(bytes.count))
                bytes += object
            }
            let table = bytes.count
            return bytes + offsets + [0, 0, 0, 0, 0, 0, 1, 1] + withUnsafeBytes(of: UInt64(objects.count).bigEndian, Array.init)
                + withUnsafeBytes(of: UInt64(0).bigEndian, Array.init) + withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        }
        let arrays = plist((0..<40).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] } + [[0x10, 0x01]])
        #expect(arrays.count == 203)
        // The same with dictionaries, {"a": next, "b": next}, whose keys are counted two at a time.
        let dictionaries = plist((0..<40).map { [0xD2, 41, 42, UInt8($0 + 1), UInt8($0 + 1)] } + [[0x10, 0x01], [0x51, 0x61], [0x51, 0x62]])
        for (name, bytes) in [("arrays", arrays), ("dictionaries", dictionaries)] {
            var output = ByteArrayOutput()
            #expect(throws: CodecError.self, "\(name)") { try Conversion.convert(bytes, from: Codecs.binary, to: Codecs.json, to: &output) }
            #expect(output.bytes.count < 1 << 20, "\(name): \(output.bytes.count) bytes written first")
            #expect(throws: CodecError.self, "\(name)") { _ = try Codecs.binary.decode(bytes) }
        }
    }

    /// A tree nested too deep is refused with the pointer of the first value past the limit.
    @Test func aTreeNestedTooDeepIsRefusedWithItsPointer() throws {
        var value: SaveValue = 1
        for level in 0..<4 { value = level.isMultiple(of: 2) ? ["a": value] : [value] }
        var deep = TreeBuilder()
        #expect(throws: CodecError.limitExceeded(
            codec: "value", at: .pointer(JSONPointer(tokens: ["0", "a"])), found: "nesting deeper than 2 levels",
            expected: "a value nested at most 2 deep")
        ) { try value.emit(into: &deep, maxDepth: 2) }
        var shallow = TreeBuilder()
        try value.emit(into: &shallow, maxDepth: 4)
        #expect(shallow.result == value)
    }

    /// A codec without an event writer is written through its own `encode(_:options:report:)`,
    /// the requirement a codec overrides to make values fit in its own way.
    @Test func aCodecsOwnLoweringIsUsed() throws {
        var output = ByteArrayOutput()
        let report = try Conversion.write(["a": .null, "b": 1], with: CountingCodec(), to: &output)
        #expect(report.retypedValues == 7)
        #expect(String(decoding: output.bytes, as: UTF8.self) == "lowered its own way")
    }

    /// The seam is the protocol: a codec the library has never seen streams both ways, and
    /// neither side's tree is ever built (its `decode` and `encode` refuse to run).
    @Test func aNewCodecStreamsThroughTheProtocol() throws {
        let save: SaveValue = ["player": ["name": "Zoë", "level": 7], "scores": [10, 20]]
        var plist = ByteArrayOutput()
        try Conversion.write(save, with: Codecs.binary, to: &plist)

        // bplist → outline: the binary plist reader walks straight into the new codec's writer.
        var outline = ByteArrayOutput()
        try Conversion.convert(plist.bytes, from: Codecs.binary, to: OutlineCodec(), to: &outline)
        #expect(String(decoding: outline.bytes, as: UTF8.self) == "{ player { name=Zoë level=7 } scores [ 10 20 ] }")

        // A tree written with it goes through the lowering step for what the codec cannot hold.
        var options = EncodingOptions()
        options.nullPolicy = .drop
        var lowered = ByteArrayOutput()
        let report = try Conversion.write(["scores": [10, .null]], with: OutlineCodec(), options: options, to: &lowered)
        #expect(String(decoding: lowered.bytes, as: UTF8.self) == "{ scores [ 10 ] }")
        #expect(report.droppedNulls == 1)

        // outline → JSON: the new codec's events go straight into the JSON writer.
        var json = ByteArrayOutput()
        try Conversion.convert(outline.bytes, from: OutlineCodec(), to: Codecs.json, to: &json)
        #expect(try Codecs.json.decode(json.bytes) == ["player": ["name": "Zoë", "level": 7], "scores": [10, 20]])
    }
}

/// A toy format written only to prove the streaming seam: `{ key=value … }`, `[ … ]`.
private struct OutlineCodec: SaveCodec {
    struct TreeUsed: Error {}
    let id = "outline"
    let summary = "a test format that only streams"
    let fileExtensions = ["outline"]
    let capabilities: ValueCapabilities = []
    func sniff(_ prefix: ArraySlice<UInt8>) -> Bool { false }
    func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue { throw TreeUsed() }
    func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] { throw TreeUsed() }

    func events(in bytes: [UInt8], options: DecodingOptions) -> (any SaveEventSource)? { Events(text: String(decoding: bytes, as: UTF8.self)) }
    func eventWriter(into output: any ByteOutput, options: EncodingOptions) -> (any SaveEventWriter)? { Writer(output: output) }

    struct Events: SaveEventSource {
        var text: String
        func emit(into sink: inout AnySaveValueSink) throws {
            var containers: [Bool] = []  // true for a dictionary
            for word in text.split(separator: " ") {
                switch word {
                case "{": containers.append(true); try sink.beginDictionary(count: 0)
                case "[": containers.append(false); try sink.beginArray(count: 0)
                case "}", "]": try containers.removeLast() ? sink.endDictionary() : sink.endArray()
                default:
                    var scalar = Substring(word)
                    if containers.last == true {
                        let key = word.prefix { $0 != "=" }
                        try sink.key(String(key))
                        scalar = word.dropFirst(key.count + 1)
                        if scalar.isEmpty { continue }  // a container follows
                    }
                    try sink.value(Int64(scalar).map(SaveValue.integer) ?? .string(String(scalar)))
                }
            }
        }
    }

    struct Writer: SaveEventWriter {
        var output: any ByteOutput
        var words: [String] = []
        var pendingKey: String?
        mutating func word(_ text: String) {
            if let key = pendingKey { words.append(key + "=" + text); pendingKey = nil } else { words.append(text) }
        }
        mutating func container(_ open: String) {
            if let key = pendingKey { words.append(key); pendingKey = nil }
            words.append(open)
        }
        mutating func beginArray(count: Int) { container("[") }
        mutating func endArray() { words.append("]") }
        mutating func beginDictionary(count: Int) { container("{") }
        mutating func endDictionary() { words.append("}") }
        mutating func key(_ key: String) { pendingKey = key }
        mutating func value(_ scalar: SaveValue) {
            switch scalar {
            case .integer(let number): word(String(number))
            case .string(let text): word(text)
            default: word("?")
            }
        }
        mutating func finish() throws -> any ByteOutput {
            try output.write(Array(words.joined(separator: " ").utf8))
            return output
        }
    }
}

/// A codec that makes values fit in its own way, and says so in the report.
private struct CountingCodec: SaveCodec {
    let id = "counting"
    let summary = "a test codec with its own lowering"
    let fileExtensions = ["counting"]
    let capabilities: ValueCapabilities = []
    func sniff(_ prefix: ArraySlice<UInt8>) -> Bool { false }
    func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue { .null }
    func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] { Array("plain encode".utf8) }
    func encode(_ value: SaveValue, options: EncodingOptions, report: inout ValueLowering.Report) throws -> [UInt8] {
        report.retypedValues = 7
        return Array("lowered its own way".utf8)
    }
}

/// A conversion of a large input writes on a thread of its own: the bytes must be the same as
/// written on one thread, and a failure of the output must come back as the conversion's error.
@Suite("Streaming: writing on a thread of its own")
struct BackgroundWritingTests {
    struct Refused: Error, Equatable {}

    /// An output that takes `limit` bytes, then refuses (a full disk).
    struct FillingOutput: ByteOutput {
        var taken = 0
        let limit: Int
        mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
            guard taken + bytes.count <= limit else { throw Refused() }
            taken += bytes.count
        }
    }

    static let large: [UInt8] = {
        let records = (0..<120_000).map { index -> SaveValue in ["id": .integer(Int64(index)), "name": .string("Zoë \(index)"), "ratio": .real(Double(index) / 7)] }
        return try! Codecs.binary.encode(["records": .array(records)])
    }()

    @Test func aLargeConversionWritesTheSameBytes() throws {
        #expect(Self.large.count >= Conversion.writtenInBackground, "\(Self.large.count) bytes: large enough to be written in the background")
        var streamed = ByteArrayOutput()
        try Conversion.convert(Self.large, from: Codecs.binary, to: Codecs.json, to: &streamed)
        let expected = try Codecs.json.encode(try Codecs.binary.decode(Self.large), options: EncodingOptions())
        #expect(streamed.bytes == expected)
    }

    @Test func theOutputsFailureIsTheConversionsError() throws {
        var written = ByteArrayOutput()
        try Conversion.convert(Self.large, from: Codecs.binary, to: Codecs.json, to: &written)
        // Early (a write that waits finds it), and late: only the last chunk refused, after the
        // writer has handed over everything.
        for limit in [3 << 20, written.bytes.count - 1] {
            var output = FillingOutput(limit: limit)
            #expect(throws: Refused.self, "\(limit)") { try Conversion.convert(Self.large, from: Codecs.binary, to: Codecs.json, to: &output) }
        }
        var roomy = FillingOutput(limit: written.bytes.count)
        try Conversion.convert(Self.large, from: Codecs.binary, to: Codecs.json, to: &roomy)
        #expect(roomy.taken == written.bytes.count)
    }

    /// An output that fails while a writer's buffer makes room for a long value: the failure is
    /// the conversion's error, and the value is not copied past the buffer's end.
    @Test func aFailureWhileMakingRoomDropsTheBufferNotTheProcess() throws {
        let value: SaveValue = ["a": .string(String(repeating: "a", count: 900 << 10)), "b": .string(String(repeating: "b", count: 1_500 << 10)), "c": 1]
        for codec in [Codecs.json, Codecs.xml] as [any SaveCodec] {
            var output = FillingOutput(limit: 0)
            #expect(throws: Refused.self, "\(codec.id)") { try Conversion.write(value, with: codec, to: &output) }
        }
    }
}

/// The binary plist writer hands its bytes on in chunks; an object larger than its buffer is
/// handed on while it is written. The offsets it records must still be where each object lands:
/// they were not, and a 3 MB data value or an 800,000-element array made a file that no reader
/// (plistlib, savetool) could open, with exit 0.
@Suite("Streaming: objects larger than a writer's buffer")
struct LargeObjectTests {
    static let cases: [(String, SaveValue)] = {
        let blob: SaveValue = .data(Data(repeating: 0x78, count: 3_000_000))
        let ascii: SaveValue = .string(String(repeating: "ab", count: 1_250_000))
        let utf16: SaveValue = .string(String(repeating: "é", count: 1_250_000))
        let references: SaveValue = .array((0..<800_000).map { SaveValue.integer(Int64($0)) })
        return [
            ("a 3 MB data value", .dictionary(["blob": blob, "after": .integer(1)])),
            ("a 2.5 MB string", .dictionary(["text": ascii, "after": .string("z")])),
            ("a 2.5 MB UTF-16 string", .dictionary(["text": utf16, "after": .string("z")])),
            ("an array of 800,000 references (2.4 MB of them)", .dictionary(["items": references, "after": .bool(true)])),
        ]
    }()

    @Test(arguments: cases.map(\.0))
    func aBinaryPlistWithALargeObjectReadsBack(_ name: String) throws {
        let value = try #require(Self.cases.first { $0.0 == name }).1
        let bytes = try Codecs.binary.encode(value)
        #expect(try Codecs.binary.decode(bytes) == value, "\(name)")
        // The same through the streaming path that `convert --to bplist` takes.
        var output = ByteArrayOutput()
        try Conversion.write(value, with: Codecs.binary, to: &output)
        #expect(output.bytes == bytes, "\(name)")
    }
}

