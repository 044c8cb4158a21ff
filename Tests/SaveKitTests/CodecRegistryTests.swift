import Foundation
import Testing

@testable import SaveKit

/// A codec is found by its path's extension as it was by splitting the path into segments and
/// lower-casing the last as Unicode, whether the lookup takes the byte comparison or not.
@Suite("Codecs by extension")
struct CodecRegistryTests {
    /// The lookup the byte comparison replaces.
    static func bySplitting(_ path: String, in registry: CodecRegistry) -> String? {
        let name = path.split(separator: "/").last.map(String.init)?.lowercased() ?? ""
        let suffixes = registry.codecs.flatMap { codec in codec.fileExtensions.map { ("." + $0.lowercased(), codec.id) } }
            .enumerated().sorted { ($0.element.0.count, -$0.offset) > ($1.element.0.count, -$1.offset) }.map(\.element)
        return suffixes.first { name.hasSuffix($0.0) }?.1
    }

    @Test func everyPathFindsTheCodecTheOldLookupFound() {
        let registry = CodecRegistry.builtIn
        let names = ["save.json", "SAVE.JSON", "Prefs.PList", "a.bplist", "x.xml", "notes.txt", "json", ".json", "a.jsön", "é.plist",
                     "a.\u{212A}", "b.plist\u{301}", "c.Plist/", "d.json//", "", "/", "tar.gz", "ZOË.JSON", "a.JSON\u{0307}", "k.js\u{200B}on"]
        let folders = ["", "/", "Documents/", "dir.json/", "Zoë/", "a//"]
        var found = 0
        for folder in folders {
            for name in names {
                let path = folder + name
                let expected = Self.bySplitting(path, in: registry)
                #expect(registry.codec(forPath: path)?.id == expected, "\(path)")
                if expected != nil { found += 1 }
            }
        }
        #expect(found > 40, "\(found) paths with a codec")
    }
}
