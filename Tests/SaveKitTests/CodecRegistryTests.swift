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

    /// A plugin's codec whose extensions are not all ASCII, or not lower-case.
    struct PluginCodec: SaveCodec {
        let id = "plugin"
        let summary = "a test codec with odd extensions"
        let fileExtensions = ["\u{212A}ey", "jsön", "TAR.GZ", "e\u{301}t"]
        let capabilities: ValueCapabilities = []
        var origin: CodecOrigin { .plugin(path: "/plugins/odd") }
        func sniff(_ prefix: ArraySlice<UInt8>) -> Bool { false }
        func decode(_ bytes: [UInt8], options: DecodingOptions) throws -> SaveValue { .null }
        func encode(_ value: SaveValue, options: EncodingOptions) throws -> [UInt8] { [] }
    }

    @Test func everyPathFindsTheCodecTheOldLookupFound() throws {
        var registry = CodecRegistry.builtIn
        try registry.register(PluginCodec())
        let names = ["save.json", "SAVE.JSON", "Prefs.PList", "a.bplist", "x.xml", "notes.txt", "json", ".json", "a.jsön", "é.plist",
                     "a.\u{212A}", "b.plist\u{301}", "c.Plist/", "d.json//", "", "/", "tar.gz", "ZOË.JSON", "a.JSON\u{0307}", "k.js\u{200B}on",
                     "x.KEY", "x.\u{212A}EY", "x.key", "a.JSÖN", "a.jso\u{308}n", "\u{301}x.json", "a\u{0600}.json", "x.tar.gz", "X.TAR.GZ",
                     "y.\u{E9}t", "y.e\u{301}t", "y.E\u{301}T", "z.et"]
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
        #expect(found > 80, "\(found) paths with a codec")
        // The plugin's extensions are found, the non-ASCII ones by Unicode's rules.
        #expect(["x.KEY", "x.\u{212A}EY", "a.JSÖN", "a.jso\u{308}n", "X.TAR.GZ", "y.\u{E9}t"].allSatisfy { registry.codec(forPath: $0)?.id == "plugin" })
    }
}
