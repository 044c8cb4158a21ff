import Foundation
import ArgumentParser
import SaveArchive
import SaveKit
import SaveToolCLI

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Tell what a save file is: codec, size, shape and embedded documents.",
        discussion: """
            Embedded documents are values that hold a whole document of their own, such as a \
            UserDefaults plist whose gameSave key holds the bytes of a JSON document. Read one \
            with: savetool get <file> <pointer> --decode

            The save kind and version are shown when a known kind recognises the file. A bundle \
            or other archive is listed entry by entry, with what its manifest says.

            Examples:
              savetool inspect ~/Library/Preferences/com.example.blocks.plist
              savetool inspect Documents/current_tournament.json --json
              savetool inspect /var/backups/saves/Documents-2026-11-20.tar.gz
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: "The document to inspect, or - for standard input.", transform: PathArgument.named)
    var file: String

    func run() throws { try reading.applying(read) }

    private func read() throws {
        try Failure.reporting(file: file) {
            let registry = reading.registry(from: global)
            let document = try LoadedDocument.load(file, registry: registry, reading: reading)
            if document.codec.traits.contains(.archive) {
                if global.json { try Console.outputJSON(document.value) } else { Console.output(archiveText(document)) }
                return
            }
            let summary = DocumentSummary(of: document.value, registry: registry)
            let migrator = Migrator(kinds: try global.kinds())
            let recognised = migrator.match(document.value, path: file == "-" ? nil : URL(fileURLWithPath: file).standardizedFileURL.path, named: nil)
            let kindText = recognised.map { "\($0.kind.describe($0.recognition)) (\($0.evidence))" }
            // The kinds and versions of the documents held inside, for the embedded lines.
            var embeddedKinds: [JSONPointer: String] = [:]
            if let kind = recognised?.kind {
                for item in summary.embedded {
                    guard let declared = kind.embedded[item.pointer],
                        let inner = migrator.match(item.value, path: nil, named: declared.kind, declaredBy: kind.name)
                    else { continue }
                    embeddedKinds[item.pointer] = inner.kind.describe(inner.recognition)
                }
            }
            if global.json {
                var value = json(document, summary, embeddedKinds: embeddedKinds)
                if let kindText { try value.setValue(.string(kindText), at: JSONPointer(tokens: ["kind"])) }
                try Console.outputJSON(value)
            } else {
                var text = text(document, summary, embeddedKinds: embeddedKinds)
                if let kindText, let range = text.range(of: "\nsize:") {
                    text.insert(contentsOf: "\nkind:      \(kindText)", at: range.lowerBound)
                }
                Console.output(text)
            }
        }
    }

    private func text(_ document: LoadedDocument, _ summary: DocumentSummary, embeddedKinds: [JSONPointer: String]) -> String {
        var lines = [
            "file:      \(file.escapingControlCharacters())",
            "codec:     \(document.codec.id) — \(document.codec.summary)",
            "size:      \(document.bytes.count) bytes",
            "top level: \(describe(summary.topLevelType, summary.topLevelCount))",
        ]
        if let archive = document.codec.viewedArchive?.summary {
            lines.insert("archive:   \(archive) (read as the objects it holds; --raw-archive shows the table)", at: 2)
        }
        let width = min(summary.members.map(\.key.count).max() ?? 0, 32)
        for member in summary.members {
            let key = member.key.escapingControlCharacters()  // a key on one line, whatever it holds
            lines.append("  \(key.padding(toLength: max(width, key.count), withPad: " ", startingAt: 0))  \(describe(member.type, member.count))")
        }
        let counts = summary.typeCounts.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }
            .map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        lines.append("values:    \(counts); nested \(summary.depth) deep")
        if summary.embedded.isEmpty {
            lines.append("embedded:  none")
        } else {
            lines.append("embedded:")
            for item in summary.embedded {
                let kind = embeddedKinds[item.pointer].map { ", \($0)" } ?? ""
                let what = item.problem.map { item.codec == "keyed" ? "keyed archive that cannot be read: \($0)" : $0 }
                    ?? item.keyedArchive.map { "\($0)" } ?? "\(item.codec) document, \(describe(item.topLevelType, item.count))"
                lines.append("  \(item.pointer.displayText.escapingControlCharacters())  \(what) (\(item.byteCount) bytes)\(kind)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// An archive: its entries, and for a bundle what its manifest says.
    private func archiveText(_ document: LoadedDocument) -> String {
        let entries = document.value["entries"]?.arrayValue ?? []
        var lines = [
            "file:      \(file.escapingControlCharacters())",
            "codec:     \(document.codec.id) — \(document.codec.summary)",
            "size:      \(document.bytes.count) bytes",
            "entries:   \(entries.count)",
        ]
        if let manifest = document.value["manifest"] {
            let files = manifest["files"]?.arrayValue ?? []
            // Sizes are the bundle's word: a sum past 2^63 is shown as that, not a crash.
            let total = files.compactMap { $0["size"]?.int64Value }.reduce(Int64(0)) { let (sum, over) = $0.addingReportingOverflow($1); return over ? .max : sum }
            let regular = files.filter { ($0["type"]?.stringValue ?? "file") == "file" }.count
            lines.append("bundle:    \(ExactFileName.printable(manifest["format"]?.stringValue ?? "?")), \(regular) file\(regular == 1 ? "" : "s"), \(total) bytes")
            for key in ["createdAt", "createdBy", "label", "source"] {
                // As the bundle says them, on one line each: a manifest is anyone's text.
                if let text = manifest[key]?.stringValue { lines.append("  \(key.padding(toLength: 10, withPad: " ", startingAt: 0)) \(text.escapingControlCharacters())") }
            }
            var refused = 0
            for entry in files {
                let codec = entry["codec"]?.stringValue.map { "  \($0)" } ?? ""
                let type = entry["type"]?.stringValue ?? "file"
                let what = switch type {
                case "file": Self.bytes(entry["size"]?.int64Value ?? 0)
                case "directory": "directory"
                case let type: "\(ExactFileName.printable(type)) → \(ExactFileName.printable(entry["target"]?.stringValue ?? "?"))"
                }
                // What import would refuse at once, by the path alone, is said here too: a support
                // engineer inspects a bundle before importing it.
                let path = entry["path"]?.stringValue ?? ""
                let target = entry["target"]?.stringValue
                let problem = BundleImporter.unsafePathReason(path)
                    ?? (type == "symlink" ? target.flatMap { BundleImporter.symbolicLinkProblem(path, $0) } : nil)
                    ?? (type == "hardlink" ? target.flatMap { BundleImporter.unsafePathReason($0).map { "a hard link to \($0)" } } : nil)
                if problem != nil { refused += 1 }
                lines.append("  \(ExactFileName.printable(path))  \(what)\(codec)" + (problem.map { "  (import refuses it: \($0))" } ?? ""))
            }
            // The archive's own entries too: one the manifest does not list can still climb out.
            for entry in entries {
                // Checked as import checks it: byte for byte (``ExactFileName``), below `files/`.
                guard let path = Self.exactPath(of: entry) else { continue }
                guard let problem = BundleImporter.unsafeEntryReason(path) else { continue }
                refused += 1
                lines.append("  archive entry \(ExactFileName.printable(path))  (import refuses it: \(problem))")
            }
            if refused > 0 {
                lines.append("import refuses this bundle (\(refused) entr\(refused == 1 ? "y" : "ies") above); `import --dry-run` checks every byte as import does")
            }
        } else {
            for entry in entries {
                let size = entry["size"]?.int64Value.map { "  " + Self.bytes($0) } ?? ""
                lines.append("  \(ExactFileName.printable(Self.exactPath(of: entry) ?? "?"))  \(entry["type"]?.stringValue ?? "")\(size)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// An archive entry's name as import reads it: its bytes (``ExactFileName``), whether or not they are UTF-8.
    private static func exactPath(of entry: SaveValue) -> String? {
        if case .data(let bytes)? = entry["pathBytes"] { return ExactFileName.string(bytes) }
        return entry["path"]?.stringValue.map(ExactFileName.carried)
    }

    private static func bytes(_ count: Int64) -> String { count == 1 ? "1 byte" : "\(count) bytes" }

    private func describe(_ type: String, _ count: Int?) -> String {
        guard let count else { return type }
        switch type {
        case "dictionary": return "dictionary, \(count) key\(count == 1 ? "" : "s")"
        case "array": return "array, \(count) element\(count == 1 ? "" : "s")"
        case "data": return "data, \(count) byte\(count == 1 ? "" : "s")"
        case "string": return "string, \(count) character\(count == 1 ? "" : "s")"
        default: return type
        }
    }

    static func json(_ summary: KeyedArchive.Summary) -> SaveValue {
        ["rootClass": summary.rootClass.map(SaveValue.string) ?? .null, "objects": .int(UInt64(summary.objectCount)), "classes": .array(summary.classes.map(SaveValue.string))]
    }

    private func json(_ document: LoadedDocument, _ summary: DocumentSummary, embeddedKinds: [JSONPointer: String]) -> SaveValue {
        func counted(_ type: String, _ count: Int?) -> SaveValue {
            var entry: SaveValue = ["type": .string(type)]
            if let count { try? entry.setValue(.int(UInt64(count)), at: JSONPointer(tokens: ["count"])) }
            return entry
        }
        var topLevel = counted(summary.topLevelType, summary.topLevelCount)
        if !summary.members.isEmpty {
            let members = summary.members.map { member -> SaveValue in
                var entry = counted(member.type, member.count)
                try? entry.setValue(.string(member.key), at: JSONPointer(tokens: ["key"]))
                return entry
            }
            try? topLevel.setValue(.array(members), at: JSONPointer(tokens: ["keys"]))
        }
        let embedded = summary.embedded.map { item -> SaveValue in
            var entry = counted(item.topLevelType, item.count)
            try? entry.setValue(.string(item.pointer.description), at: JSONPointer(tokens: ["pointer"]))
            try? entry.setValue(.string(item.codec), at: JSONPointer(tokens: ["codec"]))
            try? entry.setValue(.int(UInt64(item.byteCount)), at: JSONPointer(tokens: ["bytes"]))
            if let kind = embeddedKinds[item.pointer] { try? entry.setValue(.string(kind), at: JSONPointer(tokens: ["kind"])) }
            if let archive = item.keyedArchive {
                try? entry.setValue(Self.json(archive), at: JSONPointer(tokens: ["keyedArchive"]))
            }
            if let problem = item.problem { try? entry.setValue(.string(problem), at: JSONPointer(tokens: ["error"])) }
            return entry
        }
        var counts = SaveValue.dictionary([:])
        for (type, count) in summary.typeCounts.sorted(by: { $0.key < $1.key }) {
            try? counts.setValue(.int(UInt64(count)), at: JSONPointer(tokens: [type]))
        }
        var value: SaveValue = [
            "file": .string(file), "codec": .string(document.codec.id), "size": .int(UInt64(document.bytes.count)),
            "topLevel": topLevel, "valueCounts": counts, "depth": .int(UInt64(summary.depth)), "embedded": .array(embedded),
        ]
        if let archive = document.codec.viewedArchive?.summary {
            try? value.setValue(Self.json(archive), at: JSONPointer(tokens: ["keyedArchive"]))
        }
        return value
    }
}
