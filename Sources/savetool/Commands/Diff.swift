import ArgumentParser
import SaveKit
import SaveToolCLI

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show the structural differences of two documents, whatever their codecs.",
        discussion: """
            Each difference is one line with a JSON Pointer: '+' added, '-' removed, '~' \
            changed. Dictionaries are compared by key (their order does not count); a change of \
            type, such as the integer 1 against the real 1.0, does. A value holding a document \
            on both sides (a UserDefaults key whose data is a JSON save) is compared inside: \
            its changes are listed by their full pointers, through the embedded document.

            Exit 0 when the documents are the same, 1 when they differ.

            Examples:
              savetool diff yesterday/com.example.game.plist today.json
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: "The first (old) document.", transform: PathArgument.named)
    var a: String

    @Argument(help: "The second (new) document.", transform: PathArgument.named)
    var b: String

    func run() throws { try reading.applying(read) }

    private func read() throws {
        let differences = try Failure.reporting {
            // Standard input is read once: it cannot be both sides.
            if a == "-" && b == "-" { throw ValidationError("'-' for both sides, expected standard input as one of them at most") }
            let registry = reading.registry(from: global)
            let old = try LoadedDocument.load(a, registry: registry, reading: reading)
            let new = try LoadedDocument.load(b, registry: registry, reading: reading)
            let diff = StructuralDiff(from: old.value, to: new.value, seeingThrough: registry)
            if global.json {
                try Console.outputJSON(["same": .bool(diff.isEmpty), "differences": .array(diff.changes.map(json))])
            } else if !global.quiet {
                Console.outputLines(diff.changes.map(line))  // a key holding a newline stays on its line
            }
            return diff.changes.count
        }
        if differences > 0 { throw ExitCode(Failure.Code.negative) }
    }

    private func line(_ change: StructuralDiff.Change) -> String {
        switch change {
        case .added(let pointer, let value): "+ \(pointer.displayText): \(inline(value))"
        case .removed(let pointer, let value): "- \(pointer.displayText): \(inline(value))"
        case .changed(let pointer, let old, let new): "~ \(pointer.displayText): \(inline(old)) → \(inline(new))"
        }
    }

    private func inline(_ value: SaveValue) -> String {
        var options = EncodingOptions()
        options.pretty = false
        let bytes = (try? JSONCodec().encode(value, options: options)) ?? []
        var text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
        if text.count > 120 { text = String(text.prefix(117)) + "…" }
        return text
    }

    private func json(_ change: StructuralDiff.Change) -> SaveValue {
        switch change {
        case .added(let pointer, let value): ["op": "added", "path": .string(pointer.description), "to": value]
        case .removed(let pointer, let value): ["op": "removed", "path": .string(pointer.description), "from": value]
        case .changed(let pointer, let old, let new): ["op": "changed", "path": .string(pointer.description), "from": old, "to": new]
        }
    }
}
