import ArgumentParser
import SaveKit
import SaveToolCLI

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove one value of a document in place, keeping its codec.",
        discussion: """
            Removes a key from its dictionary or an element from its array (later elements \
            move up). Exit 1, and nothing written, when there is no value at the path. The \
            file is replaced atomically and keeps its codec; in JSON only the removed value and \
            one separator beside it go, and the rest keeps its bytes.

            Examples:
              savetool remove Documents/current_tournament.json /players/2
              savetool remove Documents/current_tournament.json /totalRounds
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    /// Taken and ignored, so that scripts written when `remove` offered it still run: a removal
    /// puts no value of another type anywhere.
    @Flag(help: .hidden) var retype = false


    @Argument(help: "The document to edit.", transform: PathArgument.named)
    var file: String

    @Argument(help: "A JSON Pointer such as /achievements/3.")
    var pointer: String

    func run() throws { try reading.applying(read) }

    private func read() throws {
        try Failure.reporting(file: file) {
            let registry = reading.registry(from: global)
            let path = try JSONPointer(parsing: pointer)
            // A usage error, whatever the file holds: said before it is read.
            if path.tokens.isEmpty { throw SaveError(.usage, file: file, PointerError.cannotRemoveRoot.description) }
            try FileIO.withEditLock(file) {
                var document = try LoadedDocument.loadForEditing(file, command: "remove", registry: registry, reading: reading)
                let before = document.value
                try document.value.removeValue(at: path, seeingThrough: registry)
                try DocumentOutput.replace(document, holding: before, decoding: reading.decoding, global: global)
            }
            if global.json { try Console.outputJSON(["file": .string(file), "pointer": .string(path.description), "removed": true]) }
        }
    }
}
