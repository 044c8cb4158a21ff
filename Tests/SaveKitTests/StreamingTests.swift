import Foundation
import SaveKit
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
            codec: "plist", at: JSONPointer(tokens: ["players", "0", "note"]), found: "a string with a control character",
            expected: "text without C0 control characters (XML 1.0 cannot hold them; bplist and JSON can)")
        ) { try Conversion.write(value, with: Codecs.xml, to: &output) }
    }
}
