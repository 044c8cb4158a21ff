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
        // Read and delimited in one walk: the same elements, those of export's shape read.
        var ranges: [Range<Int>] = [], read: [Range<Int>] = []
        #expect(ManifestLayout.forEachElement(bytes, in: files) { ranges.append($0) })
        var oneWalk: [Range<Int>] = []
        #expect(ManifestLayout.forEachElement(bytes, in: files, reading: ManifestEntryFields.element(at:)) { range, fields in
            oneWalk.append(range)
            if fields != nil { read.append(range) }
        })
        // Each of these has what the reader leaves to the decoder (attributes, an escape, a fraction).
        #expect(oneWalk == ranges && read.isEmpty)
        let plain = Array(#"[{"path":"a","size":1}, {"path":"b\"c"} ,{"type": "directory", "path": "d"}]"#.utf8)
        (oneWalk, read) = ([], [])
        #expect(ManifestLayout.forEachElement(plain, in: 0..<plain.count, reading: ManifestEntryFields.element(at:)) { range, fields in
            oneWalk.append(range)
            if fields != nil { read.append(range) }
        })
        #expect(oneWalk.map { String(decoding: plain[$0], as: UTF8.self) } == [#"{"path":"a","size":1}"#, #"{"path":"b\"c"}"#, #"{"type": "directory", "path": "d"}"#])
        #expect(read == [oneWalk[0], oneWalk[2]])
        // The guess that `files` ends where the document does is wrong when an array comes after
        // it: its elements cannot be delimited then, which is how a reader knows to walk instead.
        let later = Array(#"{"files": [{"path": "a"}], "after": [1]}"#.utf8)
        let key = Array(#""files""#.utf8)
        let guessed = try #require(ManifestLayout.members(later, guessingArray: key)?.first { $0.key == key }).value
        let walked = try #require(ManifestLayout.members(later)?.first { $0.key == key }).value
        #expect(String(decoding: later[guessed], as: UTF8.self) == #"[{"path": "a"}], "after": [1]"#)
        #expect(!ManifestLayout.forEachElement(later, in: guessed) { _ in })
        #expect(String(decoding: later[walked], as: UTF8.self) == #"[{"path": "a"}]"#)
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

    /// Manifest entries are written straight into bytes: exactly the bytes the JSON codec writes
    /// for the same entry as a value, for every kind of entry and every character a name can hold.
    @Test func entriesAreWrittenAsTheJSONCodecWritesThem() throws {
        let names = ["a.json", "Zoë/玩家 save.plist", "quote \" back\\slash", "tab\tnew\nline\r", "\u{01}\u{1F}\u{7F}", "🎃/ü\u{0301}", "/", ""]
        var entries: [BundleManifest.File] = []
        for (index, name) in names.enumerated() {
            var file = BundleManifest.File(path: name, type: .file, mode: UInt16(0o644 + index), modified: Timestamp(seconds: 1_700_000_000 + Int64(index), nanoseconds: Int32(index * 123_456_789 % 1_000_000_000)), owner: (501, 20))
            (file.size, file.sha256) = (Int64(index) * 1_000_003, String(repeating: "ab", count: 32))
            if index % 2 == 0 { file.codec = "bplist" }
            if index % 3 == 0 { (file.kind, file.version) = ("kape.tournament", index) }
            if index % 4 == 1 { file.xattrs = ["user.a": [0, 1, 2], "com.apple.é\"": Array("value".utf8)] }
            // A single attribute named like a typed-JSON marker: the codec wraps it in `$dict`.
            if index % 4 == 3 { file.xattrs = [["$data", "$dict", "$date", "$uid"][index % 4 == 3 ? (index / 4) % 4 : 0]: [7]] }
            if index == 2 { file.sparse = true }
            entries.append(file)
            var directory = BundleManifest.File(path: name + "/d", type: .directory, mode: 0o1777, modified: Timestamp(seconds: -1, nanoseconds: 0), owner: nil)
            directory.size = 0
            entries.append(directory)
            var link = BundleManifest.File(path: name + "/l", type: index % 2 == 0 ? .symlink : .hardlink, mode: 0o777, modified: Timestamp(seconds: 0, nanoseconds: 1), owner: (0, 0))
            link.target = "../" + name
            entries.append(link)
        }
        for (index, file) in entries.enumerated() {
            let expected = Array((index == 0 ? "\n    " : ",\n    ").utf8) + Array(try BundleManifest.line(BundleManifest.value(of: file)))
            #expect(BundleManifest.encodedEntry(file, first: index == 0) == expected, "\(file.path)")
        }
    }
}
