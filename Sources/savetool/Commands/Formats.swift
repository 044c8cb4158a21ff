import ArgumentParser
import SaveKit
import SaveToolCLI

struct Formats: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "formats",
        abstract: "List the codecs and save kinds savetool knows, built in and from plugins.",
        discussion: """
            A codec reads and writes one file format (json, plist, bplist, archives). A save \
            kind describes one app's save file: where it lives, how to tell its version, its \
            schemas and migrations; migrate, validate and import use the kinds.

            Plugins are executables named savetool-codec-<id> on PATH or in a --plugins \
            directory (the protocol is in docs/plugins.md of the source repository). More save \
            kinds come from --formats directories.

            Examples:
              savetool formats list
              savetool formats show bplist
              savetool formats show kape.tournament
              savetool formats list --plugins ~/savetool-plugins --formats ~/MyFormats
            """,
        subcommands: [List.self, Show.self, New.self],
        defaultSubcommand: List.self
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List every codec with its extensions, and every save kind with its versions, and where each comes from.",
            discussion: """
                Examples:
                  savetool formats list
                  savetool formats list --json
                """)

        @OptionGroup var global: GlobalOptions

        func run() throws {
            let registry = global.registry()
            let kinds = try Failure.reporting { try global.kinds() }
            if global.json {
                try Console.outputJSON([
                    "codecs": .array(registry.codecs.map(Formats.json)),
                    "kinds": .array(kinds.map { ["kind": .string($0.name), "title": .string($0.title), "current": .int(UInt64($0.currentVersion)), "origin": .string($0.origin)] }),
                ])
                return
            }
            var lines = ["codecs:"]
            let width = registry.codecs.map(\.id.count).max() ?? 0
            for codec in registry.codecs {
                let extensions = codec.fileExtensions.map { "." + $0 }.joined(separator: " ")
                lines.append("  \(codec.id.padding(toLength: width, withPad: " ", startingAt: 0))  \(codec.summary)  [\(extensions)]  (\(codec.origin))")
            }
            lines.append("save kinds:")
            let kindWidth = kinds.map(\.name.count).max() ?? 0
            for kind in kinds {
                let versions = kind.currentVersion == 1 ? "version 1" : "versions 1–\(kind.currentVersion)"
                lines.append("  \(kind.name.padding(toLength: kindWidth, withPad: " ", startingAt: 0))  \(kind.title)  [\(versions)]  (\(kind.origin))")
            }
            Console.output(lines.joined(separator: "\n") + "\n")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show one codec or save kind in full.",
            discussion: """
                Examples:
                  savetool formats show bplist
                  savetool formats show kape.tournament
                """)

        @OptionGroup var global: GlobalOptions

        private func show(_ kind: SaveKind) throws {
            let steps = kind.migrations?.steps.map(\.name) ?? []
            let schemas = kind.schemas.keys.sorted()
            let embedded = kind.embedded.sorted { $0.key.description < $1.key.description }.map { pointer, inner in
                "\(pointer.displayText) (\(inner.codec)\(inner.kind.map { ", \($0)" } ?? ""))"
            }
            if global.json {
                try Console.outputJSON([
                    "kind": .string(kind.name), "title": .string(kind.title), "files": .array(kind.files.map(SaveValue.string)),
                    "codec": kind.codec.map(SaveValue.string) ?? .null, "current": .int(UInt64(kind.currentVersion)),
                    "versionPath": kind.versionPath.map { .string($0.description) } ?? .null,
                    "fingerprints": .array(kind.fingerprints.map { .int(UInt64($0.version)) }),
                    "schemas": .array(schemas.map { .int(UInt64($0)) }), "steps": .array(steps.map(SaveValue.string)),
                    "embedded": .array(embedded.map(SaveValue.string)), "origin": .string(kind.origin),
                ])
                return
            }
            Console.output("""
                kind:         \(kind.name)
                title:        \(kind.title)
                files:        \(kind.files.joined(separator: ", "))
                codec:        \(kind.codec ?? "any")
                versions:     \(kind.currentVersion == 1 ? "1" : "1–\(kind.currentVersion)"), \(kind.versionPath.map { "the version at \($0.displayText)" } ?? "no version field (told by fingerprints)")
                fingerprints: \(kind.fingerprints.isEmpty ? "none" : kind.fingerprints.map { "version \($0.version)" }.joined(separator: ", "))
                schemas:      \(schemas.isEmpty ? "none" : schemas.map { "v\($0)" }.joined(separator: ", "))
                migrations:   \(steps.isEmpty ? "none" : steps.joined(separator: ", "))
                embedded:     \(embedded.isEmpty ? "none" : embedded.joined(separator: ", "))
                origin:       \(kind.origin)

                """)
        }

        @Argument(help: "A codec id, such as bplist, or a save kind, such as kape.tournament.")
        var id: String

        func run() throws {
            try Failure.reporting {
                let registry = global.registry()
                guard let codec = registry.codec(id: id) else {
                    let kinds = try global.kinds()
                    if let kind = kinds.first(where: { $0.name == id }) {
                        try show(kind)
                        return
                    }
                    let codecs = registry.codecs.map(\.id).joined(separator: ", ")
                    throw SaveError(.usage, "no codec or save kind named \(id), expected a codec (\(codecs)) or a save kind (\(kinds.map(\.name).joined(separator: ", ")))")
                }
                if global.json {
                    try Console.outputJSON(Formats.json(codec))
                    return
                }
                let holds = Formats.capabilityNames(codec.capabilities)
                Console.output("""
                    id:         \(codec.id)
                    summary:    \(codec.summary)
                    extensions: \(codec.fileExtensions.map { "." + $0 }.joined(separator: " "))
                    holds:      \(holds.isEmpty ? "no types beyond JSON's" : holds.joined(separator: ", "))
                    origin:     \(codec.origin)

                    """)
            }
        }
    }

    static func json(_ codec: any SaveCodec) -> SaveValue {
        [
            "id": .string(codec.id), "summary": .string(codec.summary),
            "extensions": .array(codec.fileExtensions.map(SaveValue.string)),
            "holds": .array(capabilityNames(codec.capabilities).map(SaveValue.string)),
            "origin": .string(codec.origin.description),
        ]
    }

    static func capabilityNames(_ capabilities: ValueCapabilities) -> [String] {
        let names: [(ValueCapabilities, String)] = [
            (.null, "null"), (.date, "date"), (.subsecondDate, "sub-second date"), (.data, "data"), (.uid, "uid"),
            (.nonFiniteReal, "NaN and infinities"), (.controlCharacters, "control characters"), (.anyYearDate, "dates of any year"),
        ]
        return names.filter { capabilities.contains($0.0) }.map(\.1)
    }
}
