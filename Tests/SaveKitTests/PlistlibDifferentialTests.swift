import Foundation
import SaveKit
import TestSupport
import Testing

/// Python's plistlib as an oracle: thousands of generated documents, binary and XML, read by
/// both and compared value by value; then savetool's output is read back by plistlib.
@Suite("Differential against plistlib")
struct PlistlibDifferentialTests {
    static let documentsPerFormat = 2000

    @Test func savetoolAndPlistlibAgree() throws {
        let oracle = try #require(Bundle.module.url(forResource: "plistlib_oracle", withExtension: "py", subdirectory: "Oracles"))
        let directory = try Processes.temporaryDirectory("plistlib-diff")
        defer { try? FileManager.default.removeItem(at: directory) }
        let count = Self.documentsPerFormat
        let generated = try Processes.run(["python3", oracle.path, "generate", directory.path, "\(count)", "20261121"])
        try #require(generated.status == 0, "plistlib_oracle.py generate failed: \(generated.errors)")

        var mismatches = 0
        for index in 0..<count {
            for (prefix, codec, suffix) in [("b", Codecs.binary, "bplist"), ("x", Codecs.xml, "plist")] as [(String, any SaveCodec, String)] {
                let name = "\(prefix)\(index)"
                let native = try Array(Data(contentsOf: directory.appendingPathComponent("\(name).\(suffix)")))
                let expected = try Codecs.json.decode(Array(Data(contentsOf: directory.appendingPathComponent("\(name).json"))))
                let value = try codec.decode(native)
                if value != expected {
                    mismatches += 1
                    if mismatches <= 5 {
                        let first = StructuralDiff(from: expected, to: value).changes.first
                        Issue.record("\(name).\(suffix): savetool and plistlib differ at \(first.map { "\($0)" } ?? "key order")")
                    }
                }
                // Through typed JSON and back, then written for plistlib to read.
                let viaJSON = try Codecs.json.decode(try Codecs.json.encode(value))
                #expect(viaJSON == value, "\(name): typed JSON round trip")
                try Data(try codec.encode(viaJSON)).write(to: directory.appendingPathComponent("\(name).out.\(suffix)"))
            }
        }
        #expect(mismatches == 0, "\(mismatches) documents read differently from plistlib")
        let checked = try Processes.run(["python3", oracle.path, "check", directory.path, "\(count)"])
        #expect(checked.status == 0, "plistlib read savetool's files differently:\n\(checked.outputText.suffix(3000))\(checked.errors)")
        #expect(checked.outputText.contains("checked \(2 * count) files: 0 mismatches, 0 larger"))
    }
}
