import Foundation
@testable import SaveArchive
import SaveKit
import Testing

/// The manifest is read one entry at a time: ``ManifestLayout`` must delimit exactly what a JSON
/// decoder reads, and hand anything it cannot delimit to the decoder of the whole document.
@Suite("manifest layout")
struct ManifestLayoutTests {
    static let tricky = """
        { "format" : "savetool.bundle/2", "label": "a } ] , \\" quote",
          "files": [ {"path": "a[1].json", "size": 2, "sha256": "\(String(repeating: "a", count: 64))", "xattrs": {"user.k": "e30="}},
                     {"path": "b \\\\ c", "type": "directory"} ,{"path":"n","size":-0.5e3} ],
          "empty": [], "nested": [[{}], [[]]], "n": null }
        """

    @Test func delimitsWhatTheDecoderReads() throws {
        let bytes = Array(Self.tricky.utf8)
        let members = try #require(ManifestLayout.members(bytes))
        #expect(members.map { String(decoding: $0.key, as: UTF8.self) } == ["\"format\"", "\"label\"", "\"files\"", "\"empty\"", "\"nested\"", "\"n\""])
        let whole = try JSONCodec().decode(bytes)
        for (key, range) in members {
            let name = try #require(try JSONCodec().decode(key).stringValue)
            #expect(try JSONCodec().decode(Array(bytes[range])) == whole[name], "\(name)")
        }
        let files = try #require(members.first { $0.key == Array("\"files\"".utf8) }).value
        var elements: [SaveValue] = []
        #expect(try ManifestLayout.forEachElement(bytes, in: files) { elements.append(try JSONCodec().decode(Array(bytes[$0]))) })
        #expect(elements == whole["files"]?.arrayValue)
        var none = 0
        let empty = try #require(members.first { $0.key == Array("\"empty\"".utf8) }).value
        #expect(ManifestLayout.forEachElement(bytes, in: empty) { _ in none += 1 } && none == 0)
    }

    @Test(arguments: [
        "", "[]", "{", "{\"a\": 1", "{\"a\" 1}", "{\"a\": 1,}", "{\"a\": 1} x", "{\"a\": \"open}", "{\"a\": [1, 2}",
        "{\"a\": 1, \"a\": 2}", "{a: 1}", "{\"a\": ]}",
    ])
    func refusesWhatItCannotDelimit(_ text: String) {
        #expect(ManifestLayout.members(Array(text.utf8)) == nil)
    }

    @Test func aMalformedManifestIsDescribedByTheWholeDecoder() throws {
        let text = "{\n  \"format\": \"savetool.bundle/2\",\n  \"files\": [\n    {\"path\": \"a\", \"size\": 1,}\n  ]\n}\n"
        #expect {
            try BundleImporter.manifest(from: Array(text.utf8), bundle: "b.tar.gz", maxEntries: 10)
        } throws: { error in
            "\(error)" == "manifest.json: 4:29: '}', expected a string key in double quotes"
        }
        // The same key spelled twice, once escaped: refused as the whole decoder refuses it.
        let twice = #"{"format": "savetool.bundle/2", "files": [], "\u0066iles": []}"#
        #expect(throws: BundleImportError.self) { try BundleImporter.manifest(from: Array(twice.utf8), bundle: "b.tar.gz", maxEntries: 10) }
        // Hostile nesting costs no stack: a million brackets are simply not delimited.
        let deep = "{\"files\": " + String(repeating: "[", count: 1_000_000) + "}"
        #expect(ManifestLayout.members(Array(deep.utf8)) == nil)
    }
}
