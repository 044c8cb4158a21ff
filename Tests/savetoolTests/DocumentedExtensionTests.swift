import Foundation
import TestSupport
import Testing

/// A user extends savetool from the docs alone: the Python plugin of docs/plugins.md (zlib-
/// compressed JSON, a format savetool does not know) and the example kind of docs/formats.md,
/// taken from the pages as they are, with the kind pointed at the plugin's codec. Its saves are
/// then converted, edited, migrated, validated and backed up. If a page's example stops
/// working, this fails.
@Suite("extending savetool from the docs")
struct DocumentedExtensionTests {
    /// The fenced blocks of `language` after `heading` in a page of docs/, in order.
    static func blocks(_ language: String, after heading: String, in page: String) throws -> [String] {
        let text = try String(contentsOf: Corpus.packageRoot.appendingPathComponent("docs/" + page), encoding: .utf8)
        let start = try #require(text.range(of: heading), "\(page) has no \(heading)")
        var blocks: [String] = []
        var rest = text[start.upperBound...]
        while let open = rest.range(of: "\n```\(language)\n") {
            guard let close = rest[open.upperBound...].range(of: "\n```") else { break }
            blocks.append(String(rest[open.upperBound..<close.lowerBound]) + "\n")
            rest = rest[close.upperBound...]
        }
        return blocks
    }

    @Test func theDocumentedPluginAndKindWorkTogether() throws {
        let root = try Processes.temporaryDirectory("documented")
        defer { try? FileManager.default.removeItem(at: root) }
        func write(_ text: String, _ path: String) throws {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        // The plugin, as docs/plugins.md shows it.
        let plugin = try #require(try Self.blocks("python", after: "### Example: zlib-compressed JSON in Python", in: "plugins.md").first)
        try write(plugin, "plugins/savetool-codec-zjson")
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: root.appendingPathComponent("plugins/savetool-codec-zjson").path)
        // The kind, as docs/formats.md shows it, its saves kept as .zjson instead of .json.
        let json = try Self.blocks("json", after: "## Example: a kind of your own", in: "formats.md")
        #expect(json.count >= 5)
        let kind = json[0].replacingOccurrences(of: #""codec": "json""#, with: #""codec": "zjson""#)
            .replacingOccurrences(of: "Saves/farm.json", with: "Saves/farm.zjson")
        #expect(kind.contains(#""codec": "zjson""#) && kind.contains("Saves/farm.zjson"))
        try write(kind, "my-formats/starfarm.save/kind.json")
        try write(json[1], "my-formats/starfarm.save/migrations.json")
        try write(json[2], "my-formats/starfarm.save/schema-v1.json")
        try write(json[3], "my-formats/starfarm.save/schema-v2.json")
        try write(json[4], "plain/farm.json")

        func run(_ arguments: String...) throws -> ProcessResult {
            try Processes.run([CLI.executable, "--plugins", "plugins", "--formats", "my-formats"] + arguments, directory: root)
        }
        let listed = try run("formats", "list")
        #expect(listed.status == 0 && listed.outputText.contains("zjson") && listed.outputText.contains("starfarm.save"), "\(listed.errors)")
        // Convert: plain JSON to the new format and back.
        try FileManager.default.createDirectory(at: root.appendingPathComponent("game/Saves"), withIntermediateDirectories: true)
        #expect(try run("convert", "plain/farm.json", "-o", "game/Saves/farm.zjson").status == 0)
        let compressed = try Data(contentsOf: root.appendingPathComponent("game/Saves/farm.zjson"))
        #expect(compressed.first == 0x78, "zlib's first byte")
        #expect(try run("get", "game/Saves/farm.zjson", "/farmName").outputText == "\"Sunny Acres\"\n")
        // Edit, in place, still compressed.
        #expect(try run("set", "game/Saves/farm.zjson", "/gold", "2000").status == 0)
        #expect(try run("get", "game/Saves/farm.zjson", "/gold").outputText == "2000\n")
        #expect(try Data(contentsOf: root.appendingPathComponent("game/Saves/farm.zjson")).first == 0x78)
        // Recognise and migrate through the plugin.
        let validated = try run("validate", "game/Saves/farm.zjson")
        #expect(validated.status == 0 && validated.outputText.contains("starfarm.save version 1 of 2"), "\(validated.outputText) \(validated.errors)")
        let migrated = try run("migrate", "game", "--out", "migrated")
        #expect(migrated.outputText == "1 migrated, 0 unchanged, 0 skipped, 0 failed\n", "\(migrated.errors)")
        #expect(try Data(contentsOf: root.appendingPathComponent("migrated/Saves/farm.zjson")).first == 0x78)
        #expect(try run("get", "migrated/Saves/farm.zjson", "/wallet/gold").outputText == "2000\n")
        #expect(try run("validate", "migrated/Saves/farm.zjson").outputText.contains("starfarm.save version 2 of 2"))
        // Back up and verify.
        let backup = try run("backup", "create", "game", "--repo", "backups", "--date", "2026-11-20")
        #expect(backup.status == 0 && backup.outputText.contains("created: backups/game-2026-11-20.tar.gz"), "\(backup.errors)")
        #expect(try run("backup", "verify", "--repo", "backups").status == 0)
    }
}
