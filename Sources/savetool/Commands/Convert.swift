import ArgumentParser
import Foundation
import SaveKit
import SaveToolCLI

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert one document from one codec to another, losing nothing.",
        discussion: """
            The input codec is sniffed from the content, then taken from the extension; the \
            output codec comes from --to, else from the output's extension (.plist is XML, \
            .bplist binary, .json JSON), and is JSON on standard output, a device or a FIFO.

            JSON is written as typed JSON: dates, data, uids and NaN keep their types as \
            {"$date": …}, {"$data": …}, {"$uid": …}, {"$real": …}, so converting back gives \
            the same plist. --plain writes plain strings and numbers instead, and says on \
            stderr how many values changed type.

            Where the target cannot hold a value, you choose: plists have no null \
            (--null drop leaves such keys out), XML plist dates have no fraction of a second \
            (--round-dates rounds down). Without the flag the conversion stops, naming the value.

            --to also takes plutil's names: xml1 (XML plist), binary1 (binary plist) and json.

            Examples:
              savetool convert com.example.game.plist -o game.json
              savetool convert game.json -o com.example.game.plist --to bplist
              cat save.json | savetool convert - --to plist
            """
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var reading: ReadingOptions

    @Argument(help: ArgumentHelp("The input document, or - for standard input.", valueName: "in"), transform: PathArgument.named)
    var input: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Where to write; - (the default) is standard output.", valueName: "out"), transform: PathArgument.named)
    var output: String = "-"

    @Option(help: ArgumentHelp("The output codec: json, plist (XML), bplist (binary), or a plugin's id; plutil's xml1 and binary1 work too.", valueName: "codec"))
    var to: String?

    @Flag(help: "Plain JSON: dates as RFC 3339 strings, data as base64, uids as integers (lossy).")
    var plain = false

    @Option(help: ArgumentHelp("What to do with null in a plist: error, or drop the key or element.", valueName: "error|drop"))
    var null: EncodingOptions.NullPolicy = .error

    @Flag(help: "Round dates down to whole seconds where the target (XML plist) holds no fraction.")
    var roundDates = false

    @Flag(help: "The smallest output: no indentation.")
    var compact = false

    func run() throws {
        Failure.offersConversionChoices = true
        let registry = reading.registry(from: global)
        var loaded = try Failure.reporting(file: input) { try InputBytes.read(input, entry: reading.entry) }
        try Failure.reporting(file: loaded.displayName) {
            // The bytes move out of `loaded`, so that the conversion can free them once read.
            let bytes = loaded.bytes
            loaded.bytes = []
            let inputSize = bytes.count
            var source = try reading.from.map { id throws(CodecError) in try registry.requireCodec(id: id) }
                ?? registry.detect(bytes: bytes, path: loaded.nameForExtension)
            let target = try outputCodec(registry)
            // A keyed archive becomes the objects it holds, except to another plist format,
            // which keeps its table as it is.
            var keyedView: SaveValue?
            if KeyedArchiveCodec.canHoldArchives(source), !KeyedArchiveCodec.canHoldArchives(target), KeyedArchive.mayBeIn(bytes) {
                if let streamed = registry.keyedArchiveStreaming(bytes, decodedBy: source, options: reading.decoding) {
                    source = streamed  // the conversion reads the view as it writes it
                } else if let keyed = try registry.keyedView(of: try source.decode(bytes, options: reading.decoding), decodedBy: source, options: reading.decoding) {
                    (source, keyedView) = (keyed.codec, keyed.view)
                }
            }
            var options = EncodingOptions()
            options.pretty = !compact
            options.plainJSON = plain
            options.nullPolicy = null
            options.subsecondDatePolicy = roundDates ? .truncate : .error
            // Written under a temporary name and renamed into place only when complete.
            let destination = try AtomicFileOutput(path: output, links: .follow)
            var sink = destination
            let report: ValueLowering.Report
            do {
                if let keyedView {
                    report = try Conversion.write(keyedView, with: target, options: options, to: &sink)
                } else {
                    report = try Conversion.convert(consume bytes, from: source, to: target, decoding: reading.decoding, encoding: options, to: &sink)
                }
                try destination.commit()
            } catch let error as CodecError {
                destination.abort()
                // The output's plugin failed: the output is the file it is about.
                if case .plugin(let id, _) = error, id == target.id, id != source.id {
                    throw SaveError(error.category, file: output == "-" ? "<stdout>" : output, "\(error)", cause: error)
                }
                throw error
            } catch {
                destination.abort()
                throw error
            }
            for warning in report.warnings { global.warn("\(input == "-" ? "<stdin>" : input): \(Failure.warning(warning))") }
            if global.json && output != "-" {
                let attributes = try? FileManager.default.attributesOfItem(atPath: output)
                try Console.outputJSON([
                    "input": .string(input), "output": .string(output),
                    "from": .string(source.id), "to": .string(target.id),
                    "bytesIn": .int(UInt64(inputSize)), "bytesOut": .int((attributes?[.size] as? UInt64) ?? 0),
                    "warnings": .array(report.warnings.map { .string(Failure.warning($0)) }),
                ])
            }
        }
    }

    /// plutil's `-convert` names for the codecs whose ids differ (its `json` is ours already).
    static let plutilNames = ["xml1": "plist", "binary1": "bplist"]

    private func outputCodec(_ registry: CodecRegistry) throws -> any SaveCodec {
        let codec: any SaveCodec
        if let to {
            codec = try registry.requireCodec(id: Self.plutilNames[to] ?? to)
        } else if output == "-" || FileIO.isSpecialFile(output) {
            // A stream has no extension to tell by: standard output, /dev/null and a FIFO all get
            // the readable default.
            codec = try registry.requireCodec(id: "json")
        } else if let found = registry.codec(forPath: output) {
            codec = found
        } else {
            throw ValidationError("cannot tell the output codec from '\(output)', expected an extension such as .json, .plist or .bplist, or --to")
        }
        // Usage, not data: no document can be written as an archive, and --plain is JSON's.
        if codec.traits.contains(.archive) {
            throw ValidationError("'\(codec.id)' reads archives, expected a document codec (json, plist, bplist or a plugin's); export writes bundles")
        }
        if plain, codec.id != JSONCodec().id {
            throw ValidationError("--plain writes plain JSON, expected it with a JSON output, not \(codec.id)")
        }
        return codec
    }
}
