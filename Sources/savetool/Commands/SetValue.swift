import ArgumentParser
import SaveKit
import SaveToolCLI

struct SetValue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Change one value of a document in place, keeping its codec.",
        discussion: """
            The new value is typed JSON: 3, 2.5, "Ana", true, [1, 2], {"$date": \
            "2026-11-21T08:00:00Z"}, {"$data": "3q2+7w=="}. With --string it is taken as text \
            as given. An existing value is replaced; a new key is added at the end of its \
            dictionary; '-' as the last token appends to an array. Paths may go into embedded \
            documents, which are re-encoded in their own codec.

            In a keyed archive (NSKeyedArchiver), objects the edit does not touch keep their \
            place in the archive's table, so a one-field edit changes one object. A value of \
            another type where one stood (a date where a number was) is refused: the app's \
            decoder would fail on it. --retype writes it anyway.

            In JSON (an embedded JSON save too) only the bytes of what changes are written \
            again: the rest keeps its spacing, inline arrays, escapes and number spellings, so \
            a one-field edit is a one-line diff; a new value is spelled as the file spells.

            The file is replaced atomically: a crash leaves the old file or the new one. A \
            value set to what it already is leaves the file untouched (bytes and time).

            Examples:
              savetool set game.plist /gameSave/coins 500
              savetool set tournament.json /players/0/name --string "Zoë"
              savetool set Library/Preferences/com.example.app.plist /savedPlayer/root/level 8
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Flag(help: "In a keyed archive, write a value of another type where one stood (a date where a number was); the app's decoder may then fail on it.")
    var retype = false

    @Argument(help: "The document to edit.", transform: PathArgument.named)
    var file: String

    @Argument(help: "A JSON Pointer such as /players/0/score.")
    var pointer: String

    @Argument(help: ArgumentHelp("The new value, as typed JSON (or text with --string).", valueName: "json-value"))
    var value: String

    @Flag(help: "Take the value as a string, not as JSON.")
    var string = false

    func run() throws { try reading.applying(read) }

    private func read() throws {
        try Failure.reporting(file: file) {
            var registry = reading.registry(from: global)
            registry.keyedArchiveWriting.retype = retype
            let path = try JSONPointer(parsing: pointer)
            let newValue: SaveValue
            if string {
                newValue = .string(value)
            } else {
                do {
                    newValue = try JSONCodec().decode(Array(value.utf8))
                } catch {
                    throw ValidationError("the value '\(value)' is not JSON (\(error)); quote text as '\"text\"' or use --string")
                }
            }
            try FileIO.withEditLock(file) {
                var document = try LoadedDocument.loadForEditing(file, command: "set", registry: registry, reading: reading)
                let before = document.value
                try document.value.setValue(newValue, at: path, seeingThrough: registry)
                // A value set to what it already is leaves the file as it is: its bytes, its
                // time, and any link or hard link to it (a build or a sync sees no change).
                guard document.value != before else { return }
                try DocumentOutput.replace(document, holding: before, decoding: reading.decoding, global: global)
            }
            if global.json { try Console.outputJSON(["file": .string(file), "pointer": .string(path.description), "value": newValue]) }
        }
    }
}

/// Writing an edited document back over its file.
enum DocumentOutput {
    /// `document.value` written over the file that held `before`: what did not change keeps its bytes.
    static func replace(_ document: LoadedDocument, holding before: SaveValue, decoding: DecodingOptions, global: GlobalOptions) throws {
        var report = ValueLowering.Report()
        let bytes = try document.codec.encode(document.value, over: document.bytes, holding: before, decoding: decoding, report: &report)
        for warning in report.warnings { global.warn("\(document.path): \(Failure.warning(warning))") }
        try FileIO.writeAtomically(bytes, to: document.path, links: .follow)
    }
}
