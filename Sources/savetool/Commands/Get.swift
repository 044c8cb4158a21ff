import ArgumentParser
import Foundation
import SaveKit
import SaveToolCLI

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print one value of a document, named by a JSON Pointer.",
        discussion: """
            Paths are JSON Pointers (RFC 6901): /players/0/name. A key holding '/' is written \
            with ~1, one holding '~' with ~0; '' is the whole document. A path may go on into \
            an embedded document: /gameSave/level reads 'level' inside the JSON held by the \
            data value 'gameSave'.

            A keyed archive (what NSKeyedArchiver writes) is read as the objects it holds, \
            from $top: /root/name is the root object's name, wherever the archive's table keeps \
            it. --raw-archive reads the table itself.

            The value is printed as typed JSON. Exit 1 when there is no value at the path.

            Examples:
              savetool get Documents/current_tournament.json /players/0/name --raw
              savetool get ~/Library/Preferences/com.example.blocks.plist /gameSave --decode
              savetool get com.example.blocks.plist ''
              savetool get player.archive '/root/inventory/$items/0/kind' --raw
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: "The document, or - for standard input.", transform: PathArgument.named)
    var file: String

    @Argument(help: "A JSON Pointer such as /players/0/name ('' for the whole document).")
    var pointer: String

    @Flag(help: "Print a string as its bare text and data as its raw bytes.")
    var raw = false

    @Flag(help: "When the value holds an embedded document, print that document.")
    var decode = false

    func run() throws { try reading.applying(read) }

    private func read() throws {
        try Failure.reporting(file: file) {
            let registry = reading.registry(from: global)
            let path = try JSONPointer(parsing: pointer)
            let document = try LoadedDocument.load(file, registry: registry, reading: reading)
            var value = try document.value.value(at: path, seeingThrough: registry)
            if decode {
                let bytes = EmbeddedDocument.bytes(of: value)
                guard let embedded = bytes.flatMap({ EmbeddedDocument.decode($0, registry: registry) }) else {
                    // Bytes that begin as a document and do not read: said with the decoder's place.
                    if let problem = bytes.flatMap({ EmbeddedDocument.unreadable($0, registry: registry) }) {
                        throw LocatedError(file: file, message: "\(path.displayText): \(problem)", code: Failure.Code.dataError)
                    }
                    throw LocatedError(file: file, message: "\(path.displayText): found \(value.typeNameWithArticle), expected data or text holding a JSON or plist document", code: Failure.Code.dataError)
                }
                value = embedded.value
            }
            switch (raw, value) {
            case (true, .string(let text)): Console.output(text + "\n")
            case (true, .data(let data)): Console.output(Array(data))
            default: Console.output(try JSONCodec().encode(value))
            }
        }
    }
}
