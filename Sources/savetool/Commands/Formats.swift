import ArgumentParser
import SaveKit

struct Formats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the codecs savetool knows, built in and from plugins.",
        discussion: """
            Plugins are executables named savetool-codec-<id> on PATH or in a --plugins \
            directory; see docs/plugins.md for the protocol.
            """,
        subcommands: [List.self, Show.self],
        defaultSubcommand: List.self
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List every codec with its extensions and origin.")

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
            for kind in kinds {
                lines.append("  \(kind.name)  \(kind.title)  [versions 1–\(kind.currentVersion)]  (\(kind.origin))")
            }
            Console.output(lines.joined(separator: "\n") + "\n")
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one codec in full.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "A codec id, such as bplist.")
        var id: String

        func run() throws {
            try Failure.reporting {
                let codec = try global.registry().requireCodec(id: id)
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
            (.nonFiniteReal, "NaN and infinities"), (.controlCharacters, "control characters"),
        ]
        return names.filter { capabilities.contains($0.0) }.map(\.1)
    }
}
